/*
 * unit_harness.h
 *		What the standalone unit tests in test/unit share: the pass/fail
 *		counters, copies of inputs placed against inaccessible pages, and the
 *		final "unit: N passed, M failed" line.
 *
 * The modules under test promise never to read outside the input they are
 * given, so each test places every input against an inaccessible page, once
 * ending exactly where the page begins and once starting exactly where one
 * ends: a read past either end is then a crash rather than a silent pass.
 * The crash is caught and reported as a failure naming the input, and the
 * run still ends with the "unit:" line that `make check` adds up.  (Where
 * mmap is unavailable the copy is an exact-size malloc, which still catches
 * reliance on a terminating NUL under a memory checker.)
 *
 * Each test program is a single translation unit that includes this file
 * once, so everything here is static: there is no library to build or link.
 * Under -Wall -Werror every function must then be used by every program.
 *
 * The includer defines _DEFAULT_SOURCE and _POSIX_C_SOURCE before its first
 * system header, since MAP_ANONYMOUS is hidden under -std=c99 otherwise and
 * that would quietly fall back to heap copies.
 */
#ifndef UNIT_HARNESS_H
#define UNIT_HARNESS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Counted by each program's report(); on_crash() reads them too */
static int	passed;
static int	failed;

/* ----------------------------------------------------------------------
 * Guarded input copies
 * ---------------------------------------------------------------------- */

#if defined(MAP_ANONYMOUS) && defined(PROT_NONE)
#define HAVE_GUARD_PAGES 1
static unsigned char *guard_base;	/* [no access][data page][no access] */
static size_t page_size;
#endif

static void *heap_copy;			/* for inputs longer than a page */

/*
 * The input being tried, for the crash report.  Set by the caller before
 * each guard_place(): only the caller knows how to name its input.
 */
static char crash_note[256];

#ifdef HAVE_GUARD_PAGES
/* What the program was doing with the input ("in", "parsing"), ditto */
static const char *crash_verb;

/* write(2) of a NUL-terminated string: stdio is not safe in a signal handler */
static void
write_str(const char *s)
{
	ssize_t		r = write(STDOUT_FILENO, s, strlen(s));

	(void) r;
}

static void
write_int(int v)
{
	char		buf[16];
	int			i = sizeof(buf) - 1;

	buf[i] = '\0';
	do
	{
		buf[--i] = (char) ('0' + v % 10);
		v /= 10;
	} while (v > 0);
	write_str(buf + i);
}

/*
 * A read outside the input hit a guard page.  Report it like any other
 * failure, so that the run still ends with the "unit:" line.  (stdout is
 * line-buffered, see unit_start(), so everything printed before is already
 * out.)
 */
static void
on_crash(int sig)
{
	write_str("FAIL crashed (signal ");
	write_int(sig);
	write_str(", a read outside the input?) ");
	write_str(crash_verb);
	write_str(" \"");
	write_str(crash_note);
	write_str("\"\nunit: ");
	write_int(passed);
	write_str(" passed, ");
	write_int(failed + 1);
	write_str(" failed\n");
	_exit(1);
}
#endif

/*
 * Call first in main().  verb says, in the crash report, what the program
 * was doing with the input named by crash_note: "FAIL crashed (...) verb
 * \"note\"".
 */
static void
unit_start(const char *verb)
{
	/* line-buffered even into make's pipe, so that a crash loses nothing */
	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef HAVE_GUARD_PAGES
	crash_verb = verb;
	page_size = (size_t) sysconf(_SC_PAGESIZE);
	guard_base = mmap(NULL, 3 * page_size, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard_base == MAP_FAILED ||
		mprotect(guard_base, page_size, PROT_NONE) != 0 ||
		mprotect(guard_base + 2 * page_size, page_size, PROT_NONE) != 0)
	{
		fprintf(stderr, "cannot set up guard pages\n");
		exit(2);
	}
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
#else
	(void) verb;
#endif
}

/*
 * A copy of src[0..len) that is unreadable just after its end (where == 0)
 * or just before its start (where == 1).  The rest of the data page is
 * filled with the byte poison, chosen by the caller so that a stray read
 * finds nothing its parser could lean on (a NUL, a digit).  Valid until the
 * next call.
 */
static const void *
guard_place(const void *src, size_t len, int where, int poison)
{
	free(heap_copy);
	heap_copy = NULL;
#ifdef HAVE_GUARD_PAGES
	if (len <= page_size)
	{
		unsigned char *data = guard_base + page_size;
		unsigned char *p = where == 0 ? data + page_size - len : data;

		memset(data, poison, page_size);
		if (len > 0)
			memcpy(p, src, len);
		return p;
	}
#endif
	(void) where;
	(void) poison;
	heap_copy = malloc(len > 0 ? len : 1);
	if (heap_copy == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	if (len > 0)
		memcpy(heap_copy, src, len);
	return heap_copy;
}

/* ----------------------------------------------------------------------
 * The end of a run
 * ---------------------------------------------------------------------- */

/*
 * Print the last line, which `make check` reads and renames, and return
 * main()'s exit status: non-zero if anything failed.
 */
static int
unit_finish(void)
{
	free(heap_copy);
	heap_copy = NULL;
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed > 0 ? 1 : 0;
}

#endif							/* UNIT_HARNESS_H */
