/*
 * common.c
 *		Version, messages, --help and --version (see common.h).
 */
#include "common.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *progname = "bson_out";
static void (*common_usage) (FILE *f);
char		errbuf[ERRBUF_SIZE];

void
print_version(void)
{
	printf("%s %s\n", progname, BSON_OUT_VERSION);
}

void
common_init(const char *name, int argc, char **argv, void (*usage) (FILE *f))
{
	progname = name;
	common_usage = usage;
	if (argc < 2)
		return;
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-?") == 0)
	{
		usage(stdout);
		exit(0);
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
	{
		print_version();
		exit(0);
	}
}

void
common_option(int c, char **argv)
{
	if (c == 'V')
	{
		print_version();
		exit(0);
	}
	if (c == '?' && optopt == 0 && strcmp(argv[optind - 1], "-?") == 0)
	{
		common_usage(stdout);
		exit(0);
	}
	if (c == '?')
	{
		fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
		exit(2);
	}
	die_usage("invalid option");
}

void
print_error(const char *msg)
{
	fprintf(stderr, "%s: error: %s\n", progname, msg);
}

void
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void
die_usage(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry \"%s --help\" for more information.\n", progname);
	exit(2);
}
