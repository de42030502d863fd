/*
 * option_parse.h
 *		The numbers, sizes and durations both programs' options take, read one
 *		way (as PostgreSQL's fe_utils/option_utils.c reads them for its
 *		programs): the whole argument, in decimal, or a usage error.
 *
 * Each function returns the value, or prints
 *		prog: error: invalid --NAME "ARG": give ...
 *		Try "prog --help" for more information.
 * and exits 2 (die_usage) for anything else: an empty argument, blanks, a
 * sign, "nan", "inf", hexadecimal, characters after the number, and a value
 * beyond the option's range or the type that holds it.  The rest of the
 * message says what the option takes.
 */
#ifndef OPTION_PARSE_H
#define OPTION_PARSE_H

#include <stdint.h>

/* The largest number of seconds option_parse_seconds takes: a time_t and an int anywhere */
#define SECONDS_MAX		2147483647.0

/*
 * A whole number from min to max: decimal digits only ('-' before them only
 * when min is negative).  "give a whole number from MIN to MAX".
 */
extern int	option_parse_int(const char *name, const char *arg, int min, int max);

/*
 * A size as PostgreSQL's settings take them: a whole number of bytes, or
 * with a unit kB, MB, GB or TB (1024-based); k, M, G, T alone and KiB, MiB,
 * GiB, TiB are taken as well, in any case.  From min to max bytes
 * (max UINT64_MAX: no upper bound but the type's); why, if not NULL, is
 * said after the range (the reason for it).
 */
extern uint64_t option_parse_size(const char *name, const char *arg, uint64_t min,
								  uint64_t max, const char *why);

/*
 * A duration in seconds: a decimal number (a fraction and an exponent
 * allowed), optionally followed by "s", greater than 0 and at most
 * SECONDS_MAX (beyond, the time_t of a timeout would overflow).  A value
 * that rounds to 0 as a double is refused as 0 is.
 */
extern double option_parse_seconds(const char *name, const char *arg);

/*
 * A duration as PostgreSQL's time settings take them (lock_timeout): a
 * number, with a fraction if need be, and a unit ms, s, min, h or d; a bare
 * number is in milliseconds, as PostgreSQL and pg_dump --lock-wait-timeout
 * read it.  No exponent.  The milliseconds, rounded, at most INT32_MAX (the
 * settings' limit); a value that rounds to 0 without being 0 is refused.
 * zero, if not NULL, says what 0 means for this option.
 */
extern int32_t option_parse_duration_ms(const char *name, const char *arg, const char *zero);

#endif							/* OPTION_PARSE_H */
