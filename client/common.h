/*
 * common.h
 *		What pg_bsonexport and pg_bsonstream share as programs: their version,
 *		their messages (as PostgreSQL's programs write them: "program: error:
 *		...", exit 1 for an error and 2 for a usage error), --help and
 *		--version, and sizes in PostgreSQL's units.
 */
#ifndef COMMON_H
#define COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Both programs are released with the extension, under its version */
#define BSON_OUT_VERSION	"1.2.0"

/* Room for a message with its detail and hint lines */
#define ERRBUF_SIZE		4096

/* The program's name, for every message; set by common_init */
extern const char *progname;

/* The buffer the main flow's failures are written into, then printed */
extern char errbuf[ERRBUF_SIZE];

/*
 * Set the program's name (and its usage, for common_option), and answer
 * --help or -? (usage(stdout), exit 0)
 * and --version or -V given as the only or first argument, as PostgreSQL's
 * programs do.
 */
extern void common_init(const char *name, int argc, char **argv,
						void (*usage) (FILE *f));

/*
 * An option getopt_long returned that the program does not take itself:
 * -V (--version), -? (--help) anywhere on the line, or getopt's own error
 * (already printed: the --help pointer, exit 2).  Never returns.
 */
extern void common_option(int c, char **argv) __attribute__((noreturn));

/* "progname: error: MESSAGE" (its later lines as they are), exit 1 */
extern void die(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* The same with the --help pointer, exit 2 */
extern void die_usage(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* Print "progname: error: MESSAGE" only */
extern void print_error(const char *msg);

/* Print "progname --version"'s line */
extern void print_version(void);

/*
 * A size as PostgreSQL's settings take them: a whole number of bytes, or
 * with a unit kB, MB, GB or TB (1024-based); k, M, G, T alone and KiB, MiB,
 * GiB, TiB are taken as well, in any case.  0 and the bytes, or -1 for a
 * malformed value or one beyond UINT64_MAX.
 */
extern int	parse_size(const char *s, uint64_t *bytes);

/*
 * A duration as PostgreSQL's time settings take them (lock_timeout): a
 * number, with a fraction if need be, and a unit ms, s, min, h or d; a bare
 * number is in milliseconds, as PostgreSQL and pg_dump --lock-wait-timeout
 * read it.  No sign, blank, exponent, NaN or infinity.  0 and the
 * milliseconds (rounded; at most INT32_MAX, the settings' limit), or -1 for
 * a malformed value, one beyond the limit, or one that rounds to 0 without
 * being 0.
 */
extern int	parse_duration_ms(const char *s, int32_t *ms);

/* The largest number of seconds parse_seconds takes: a time_t and an int anywhere */
#define SECONDS_MAX		2147483647.0

/*
 * A duration in seconds: a decimal number (a fraction and an exponent
 * allowed), optionally followed by "s", greater than 0 and at most
 * SECONDS_MAX.  0 and the seconds, or -1 for anything else: NaN, infinity,
 * a sign, blanks, hexadecimal, trailing characters, 0 or a value that
 * rounds to 0, and a value beyond SECONDS_MAX (which would overflow the
 * time_t of a timeout).
 */
extern int	parse_seconds(const char *s, double *secs);

#endif							/* COMMON_H */
