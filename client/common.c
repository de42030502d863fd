/*
 * common.c
 *		Version, messages, --help and --version, sizes (see common.h).
 */
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int
parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kmgt";
	char	   *end;
	unsigned long long v;
	uint64_t	mult = 1;
	const char *u;

	/* strtoull would take a sign, and blanks before it */
	if (!isdigit((unsigned char) s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	if (*end != '\0' && (u = strchr(units, tolower((unsigned char) *end))) != NULL)
	{
		for (const char *p = units; p <= u; p++)
			mult *= 1024;
		end++;
		/* kB as PostgreSQL writes it; KiB as IEC does; k alone as before */
		if (strcasecmp(end, "b") == 0 || strcasecmp(end, "ib") == 0)
			end += strlen(end);
	}
	else if (strcasecmp(end, "b") == 0)
		end++;
	if (*end != '\0' || v > UINT64_MAX / mult)
		return -1;
	*bytes = (uint64_t) v * mult;
	return 0;
}

int
parse_duration_ms(const char *s, int32_t *ms)
{
	static const struct
	{
		const char *name;
		double		ms;
	}			units[] = {
		{"", 1}, {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000}
	};
	const char *p = s;
	int			digits = 0;
	double		v;
	size_t		u;

	/* digits, at most one '.', more digits: strtod alone would take much more */
	while (isdigit((unsigned char) *p))
		p++, digits++;
	if (*p == '.')
		for (p++; isdigit((unsigned char) *p); p++)
			digits++;
	if (digits == 0)
		return -1;
	for (u = 0; u < sizeof(units) / sizeof(units[0]); u++)
		if (strcmp(p, units[u].name) == 0)
			break;
	if (u == sizeof(units) / sizeof(units[0]))
		return -1;
	/* strtod reads exactly those characters; too many digits give HUGE_VAL, refused here */
	v = strtod(s, NULL) * units[u].ms;
	if (!(v + 0.5 < (double) INT32_MAX + 1) || (v > 0 && v + 0.5 < 1))
		return -1;
	*ms = (int32_t) (v + 0.5);
	return 0;
}

int
parse_seconds(const char *s, double *secs)
{
	char	   *end;
	double		v;

	/* strtod would take blanks, a sign, "nan", "inf" and hexadecimal too */
	if (!isdigit((unsigned char) s[0]) &&
		!(s[0] == '.' && isdigit((unsigned char) s[1])))
		return -1;
	if (strpbrk(s, "xX") != NULL)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	/* ERANGE: beyond a double, or so small that it became 0 or a denormal */
	if (errno != 0 || end == s)
		return -1;
	if (*end != '\0' && strcmp(end, "s") != 0)
		return -1;
	if (!isfinite(v) || !(v > 0) || v > SECONDS_MAX)
		return -1;
	*secs = v;
	return 0;
}
