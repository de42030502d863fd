/*
 * common.h
 *		What pg_bsonexport and pg_bsonstream share as programs: their version,
 *		their messages (as PostgreSQL's programs write them: "program: error:
 *		...", exit 1 for an error and 2 for a usage error), --help and
 *		--version.  The numbers, sizes and durations of options: option_parse.h.
 */
#ifndef COMMON_H
#define COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Both programs are released with the extension, under its version */
#define BSON_OUT_VERSION	"1.3.0"

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

#endif							/* COMMON_H */
