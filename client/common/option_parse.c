/*
 * option_parse.c
 *		Numbers, sizes and durations given to options (see option_parse.h).
 *
 * strtol, strtoull and strtod alone would take much more than a number:
 * blanks and a sign before it, "nan", "inf", hexadecimal, and (cast to a
 * smaller type) a value that wrapped around.  Each reader here first checks
 * that the argument starts with a digit, then that nothing follows what the
 * conversion read, then the range in the conversion's own type.
 */
#include "option_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"

int
option_parse_int(const char *name, const char *arg, int min, int max)
{
	const char *digits = (min < 0 && arg[0] == '-') ? arg + 1 : arg;
	char	   *end;
	long		v;

	errno = 0;
	if (!isdigit((unsigned char) digits[0]) ||
		(v = strtol(arg, &end, 10), errno != 0) || *end != '\0' || v < min || v > max)
		die_usage("invalid %s \"%s\": give a whole number from %d to %d", name, arg, min, max);
	return (int) v;
}

/* 0 and the bytes, or -1 for a malformed size or one beyond UINT64_MAX */
static int
parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kmgt";
	char	   *end;
	unsigned long long v;
	uint64_t	mult = 1;
	const char *u;

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

uint64_t
option_parse_size(const char *name, const char *arg, uint64_t min, uint64_t max, const char *why)
{
	uint64_t	v;
	char		range[128] = "";

	if (parse_size(arg, &v) == 0 && v >= min && v <= max)
		return v;
	if (max != UINT64_MAX)
		snprintf(range, sizeof(range), ", from %llu to %llu bytes",
				 (unsigned long long) min, (unsigned long long) max);
	else if (min > 0)
		snprintf(range, sizeof(range), ", at least %llu byte%s",
				 (unsigned long long) min, min == 1 ? "" : "s");
	die_usage("invalid %s \"%s\": give bytes, or a number with a unit kB, MB, GB or TB "
			  "(1024-based)%s%s%s", name, arg, range, why ? " " : "", why ? why : "");
}

double
option_parse_seconds(const char *name, const char *arg)
{
	char	   *end;
	double		v;

	/* a digit first, no x anywhere: no blank, sign, "nan", "inf" or hexadecimal */
	if ((isdigit((unsigned char) arg[0]) ||
		 (arg[0] == '.' && isdigit((unsigned char) arg[1]))) &&
		strpbrk(arg, "xX") == NULL)
	{
		errno = 0;
		v = strtod(arg, &end);

		/*
		 * ERANGE: beyond a double, or so small that it became 0 or a
		 * denormal; then the optional "s", and the range
		 */
		if (errno == 0 && (*end == '\0' || strcmp(end, "s") == 0) &&
			isfinite(v) && v > 0 && v <= SECONDS_MAX)
			return v;
	}
	die_usage("invalid %s \"%s\": give a number of seconds greater than 0 and at most %.0f, "
			  "such as 10, 0.5 or 10s", name, arg, SECONDS_MAX);
}

/* 0 and the milliseconds, or -1 (see option_parse_duration_ms) */
static int
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

int32_t
option_parse_duration_ms(const char *name, const char *arg, const char *zero)
{
	int32_t		ms;

	if (parse_duration_ms(arg, &ms) == 0)
		return ms;
	die_usage("invalid %s \"%s\": give a duration in ms, s, min, h or d (a bare number is in "
			  "milliseconds, as PostgreSQL's lock_timeout), e.g. 30s, at most %dms%s%s",
			  name, arg, INT32_MAX, zero ? "; " : "", zero ? zero : "");
}
