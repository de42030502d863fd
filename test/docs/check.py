#!/usr/bin/env python3
"""The documentation's checks, from the repository's root:

  PG_BSONEXPORT=... PG_BSONSTREAM=... python3 test/docs/check.py

- options: every option line that `PROGRAM --help` prints (its short and long
  names together) is one row of an options table in docs/PROGRAM.md, and
  every options row there is an option that --help prints; no option is
  documented twice, on its page or on any other page of docs/ or README.md
  (an options row is a table row whose first cell starts with `-);
- links: every relative link and image of README.md, docs/*.md, BENCHMARKS.md
  and CHANGELOG.md names a file that exists, and its #anchor a heading of
  that file, by GitHub's rule (lower case; spaces become '-'; every other
  character that is not a letter, a digit, '-' or '_' dropped; a repeated
  heading gets -1, -2, ...);
- README.md has at most 750 lines.

Prints "FAIL ..." for each failure and last "docs: N passed, M failed";
exit status 0 only when nothing failed.  Python 3's standard library only.
"""
import glob
import os
import re
import subprocess
import sys

README_MAX_LINES = 750
PROGRAMS = (("pg_bsonexport", "PG_BSONEXPORT"), ("pg_bsonstream", "PG_BSONSTREAM"))
LINKED_FILES = ["README.md", "BENCHMARKS.md", "CHANGELOG.md"] + sorted(glob.glob("docs/*.md"))
OPTION_PAGES = ["README.md"] + sorted(glob.glob("docs/*.md"))

passed = 0
failed = 0


def ok():
    global passed
    passed += 1


def fail(msg):
    global failed
    failed += 1
    print("FAIL " + msg)


# an option's name: --long-name, or a one-letter -x (or -?)
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[A-Za-z?])(?![\w-])")
# a --help line that defines options: two to eight blanks, then the option;
# descriptions continue at a deeper indent and may begin with an option too
HELP_LINE = re.compile(r"^ {2,8}(-[A-Za-z?], --[a-z][a-z0-9-]*|--[a-z][a-z0-9-]*)")


def help_options(program, binary):
    """The options --help prints: one frozenset of names per option line."""
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        fail("%s: cannot run %s --help: %s" % (program, binary, e))
        return None
    if out.returncode != 0:
        fail("%s: %s --help exited with %d" % (program, binary, out.returncode))
        return None
    entries = []
    for line in out.stdout.splitlines():
        m = HELP_LINE.match(line)
        if m:
            entries.append(frozenset(OPTION.findall(m.group(1))))
    if not entries:
        fail("%s: %s --help prints no option" % (program, binary))
        return None
    return entries


def lines_outside_fences(path):
    """(line number, line) of a Markdown file, fenced code blocks left out."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.rstrip("\n")
            m = re.match(r"^ {0,3}(`{3,}|~{3,})", s)
            if m:
                if fence is None:
                    fence = m.group(1)
                    continue
                if m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                    continue
            if fence is None:
                yield n, s


def option_rows(path):
    """(line number, frozenset of names) of every options row of a page."""
    rows = []
    for n, line in lines_outside_fences(path):
        if not line.startswith("|"):
            continue
        first = line.split("|")[1].strip()
        if first.startswith("`-"):
            rows.append((n, frozenset(OPTION.findall(first))))
    return rows


def show(names):
    return ", ".join(sorted(names, key=lambda x: (len(x) > 2, x)))


def check_options():
    rows_of = {p: option_rows(p) for p in OPTION_PAGES if os.path.exists(p)}
    for program, env in PROGRAMS:
        page = "docs/%s.md" % program
        binary = os.environ.get(env, program)
        entries = help_options(program, binary)
        if entries is None:
            continue
        if page not in rows_of:
            fail("%s: %s does not exist" % (program, page))
            continue
        documented = rows_of[page]
        all_names = set().union(*entries)
        # every option of --help: exactly one row of its page, with the same names
        for entry in entries:
            same = [n for n, names in documented if names == entry]
            overlapping = [(n, names) for n, names in documented if names & entry]
            if len(same) == 1 and len(overlapping) == 1:
                ok()
            elif not overlapping:
                fail("%s: %s is in --help but not documented in %s (missing)" % (program, show(entry), page))
            elif not same:
                fail("%s: %s is in --help, but %s documents %s" % (
                    program, show(entry), page,
                    "; ".join("line %d: %s" % (n, show(names)) for n, names in overlapping)))
            else:
                fail("%s: %s is documented %d times in %s (lines %s)" % (
                    program, show(entry), len(overlapping), page,
                    ", ".join(str(n) for n, _ in overlapping)))
        # every row of its page: an option of --help
        for n, names in documented:
            extra = names - all_names
            if extra:
                fail("%s: %s:%d documents %s, which --help does not print (extra)" % (
                    program, page, n, show(extra)))
            else:
                ok()
        # no other page documents them again
        for other, rows in rows_of.items():
            if other in ("docs/pg_bsonexport.md", "docs/pg_bsonstream.md"):
                continue
            for n, names in rows:
                if names & all_names:
                    fail("%s: %s:%d documents %s again (each option is documented once, in %s)" % (
                        program, other, n, show(names & all_names), page))


def slug(text):
    """A heading's anchor, as GitHub makes it."""
    text = re.sub(r"<[^>]+>", "", text)                        # HTML tags
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)      # links: their text
    out = []
    for ch in text.strip().lower():
        if ch == " ":
            out.append("-")
        elif ch.isalnum() or ch in "-_":
            out.append(ch)
    return "".join(out)


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        found = set()
        seen = {}
        for _, line in lines_outside_fences(path):
            m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                k = seen.get(base, 0)
                seen[base] = k + 1
                found.add(base if k == 0 else "%s-%d" % (base, k))
            for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                found.add(a)
        anchor_cache[path] = found
    return anchor_cache[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links():
    for path in LINKED_FILES:
        if not os.path.exists(path):
            fail("links: %s does not exist" % path)
            continue
        base = os.path.dirname(path)
        for n, line in lines_outside_fences(path):
            line = re.sub(r"(`+)(?:(?!\1).)+\1", "", line)       # inline code
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue                                     # http:, mailto:, ...
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(base, file_part)) if file_part else path
                where = "%s:%d: %s" % (path, n, target)
                if not os.path.exists(dest):
                    fail("links: %s: no file %s" % (where, dest))
                    continue
                if anchor:
                    if not dest.endswith(".md") or os.path.isdir(dest):
                        fail("links: %s: an anchor in %s, which is not a Markdown file" % (where, dest))
                        continue
                    if anchor not in anchors(dest):
                        fail("links: %s: %s has no heading #%s" % (where, dest, anchor))
                        continue
                ok()


def check_readme_length():
    with open("README.md", encoding="utf-8") as f:
        n = sum(1 for _ in f)
    if n <= README_MAX_LINES:
        ok()
    else:
        fail("README.md has %d lines, more than %d" % (n, README_MAX_LINES))
    print("info docs: README.md has %d lines" % n)


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    check_options()
    check_links()
    check_readme_length()
    print("docs: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
