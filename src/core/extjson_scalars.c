/*
 * extjson_scalars.c
 *		Parsers for the scalar strings of MongoDB Extended JSON v2.
 *
 * Deliberately free of PostgreSQL headers (see extjson_scalars.h): the same
 * file is compiled into the extension and into test/unit's standalone
 * program.  The inputs are not NUL-terminated, so nothing here looks for a
 * NUL in them; the one call into libc's number parsing (strtod, for
 * doubles) gets a NUL-terminated copy of text that has already been checked
 * against the grammar.
 *
 * The grammars are strict on purpose.  Extended JSON is produced by
 * machines (mongoexport, the drivers' encoders), and accepting near-misses
 * such as " 1", "+1" or "01" would silently give meaning to text that no
 * conforming encoder writes.
 */
#include "extjson_scalars.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_grammar.h"

/* Value of an ASCII hex digit, or -1 */

static inline int
hex_value(char c)
{
	/* a table: ObjectIds are 24 hex digits, and there is one in most documents */
	static const int8_t values[256] = {
		['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
		['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
		['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
		['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
	};

	/* stored plus one, so that the zero of every other entry means "not hex" */
	return values[(unsigned char) c] - 1;
}

/*
 * Exported for the JSON reader's \u escapes; within this file the inline
 * version is used, since with -fPIC an exported function is not inlined.
 */
int
extjson_hex_value(char c)
{
	return hex_value(c);
}

/* Two hex digits at s into *out */
static inline bool
hex_byte(const char *s, uint8_t *out)
{
	int			hi = hex_value(s[0]);
	int			lo = hex_value(s[1]);

	if (hi < 0 || lo < 0)
		return false;
	*out = (uint8_t) (hi << 4 | lo);
	return true;
}

bool
extjson_parse_oid(const char *s, size_t len, uint8_t out[12])
{
	if (len != 24)
		return false;
	for (int i = 0; i < 12; i++)
	{
		if (!hex_byte(s + 2 * i, &out[i]))
			return false;
	}
	return true;
}

/*
 * The Extended JSON spec writes $uuid only in the hyphenated 36-char form;
 * the 32-digit and braced forms other tools accept are refused.
 */
bool
extjson_parse_uuid(const char *s, size_t len, uint8_t out[16])
{
	int			nbytes = 0;

	if (len != 36)
		return false;
	for (size_t i = 0; i < 36;)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (s[i] != '-')
				return false;
			i++;
			continue;
		}
		/* never at a hyphen position or the end: the groups are even-sized */
		if (!hex_byte(s + i, &out[nbytes++]))
			return false;
		i += 2;
	}
	return true;
}

bool
extjson_parse_hex_subtype(const char *s, size_t len, uint8_t *out)
{
	int			v = 0;

	if (len < 1 || len > 2)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		int			d = hex_value(s[i]);

		if (d < 0)
			return false;
		v = v << 4 | d;
	}
	*out = (uint8_t) v;
	return true;
}

size_t
extjson_base64_decoded_max(size_t len)
{
	/* valid input is whole quads; a partial quad is refused unwritten */
	return len / 4 * 3;
}

/* Value of a base64 (standard alphabet) symbol, or -1; '=' is -1 too */
static inline int
base64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Strict RFC 4648 (section 3.5's canonical encoding): every byte string has
 * exactly one accepted text, so two different $binary strings never decode
 * to the same bytes, and anything a lenient decoder would silently repair
 * (missing padding, line breaks, URL-safe symbols) is reported instead.
 */
bool
extjson_parse_base64(const char *s, size_t len, uint8_t *out, size_t *outlen)
{
	size_t		o = 0;

	if (len % 4 != 0)
		return false;
	for (size_t i = 0; i < len; i += 4)
	{
		int			a = base64_value(s[i]);
		int			b = base64_value(s[i + 1]);
		int			c = base64_value(s[i + 2]);
		int			d = base64_value(s[i + 3]);
		bool		last = (i + 4 == len);

		if (a < 0 || b < 0)
			return false;		/* '=' is never among the first two */
		out[o++] = (uint8_t) (a << 2 | b >> 4);
		if (c < 0)
		{
			/*
			 * "xx==": one byte; b's low 4 bits are unused and must be zero,
			 * or two different strings would decode to the same bytes.
			 */
			if (!last || s[i + 2] != '=' || s[i + 3] != '=' || (b & 0x0F) != 0)
				return false;
			break;
		}
		out[o++] = (uint8_t) ((b & 0x0F) << 4 | c >> 2);
		if (d < 0)
		{
			/* "xxx=": two bytes; c's low 2 bits are unused */
			if (!last || s[i + 3] != '=' || (c & 0x03) != 0)
				return false;
			break;
		}
		out[o++] = (uint8_t) ((c & 0x03) << 6 | d);
	}
	*outlen = o;
	return true;
}

/*
 * -?(0|[1-9][0-9]*) with magnitude at most max_pos (max_pos + 1 if
 * negative), the shared core of the int32 and int64 parsers.  The magnitude
 * comes back unsigned so that INT64_MIN needs no special arithmetic here.
 */
static bool
parse_integer(const char *s, size_t len, uint64_t max_pos,
			  bool *negative, uint64_t *magnitude)
{
	size_t		i = 0;
	uint64_t	limit;
	uint64_t	acc = 0;

	*negative = false;
	if (i < len && s[i] == '-')
	{
		*negative = true;
		i++;
	}
	if (i >= len)
		return false;
	/* "0" alone, not "00" or "01": no conforming encoder writes those */
	if (s[i] == '0' && len - i > 1)
		return false;
	limit = *negative ? max_pos + 1 : max_pos;
	if (len - i <= 9 || (len - i <= 18 && max_pos > UINT32_MAX))
	{
		/* too few digits to reach the limit's order of magnitude: no checks */
		for (; i < len; i++)
		{
			if (!json_is_digit(s[i]))
				return false;
			acc = acc * 10 + (unsigned) (s[i] - '0');
		}
		if (acc > limit)
			return false;
		*magnitude = acc;
		return true;
	}
	for (; i < len; i++)
	{
		unsigned	d;

		if (!json_is_digit(s[i]))
			return false;
		d = (unsigned) (s[i] - '0');
		if (acc > (limit - d) / 10)
			return false;
		acc = acc * 10 + d;
	}
	*magnitude = acc;
	return true;
}

bool
extjson_parse_int32(const char *s, size_t len, int32_t *out)
{
	bool		negative;
	uint64_t	m;

	if (!parse_integer(s, len, (uint64_t) INT32_MAX, &negative, &m))
		return false;
	/* m <= 2^31, so the int64 negation is exact and fits int32 */
	*out = (int32_t) (negative ? -(int64_t) m : (int64_t) m);
	return true;
}

bool
extjson_parse_int64(const char *s, size_t len, int64_t *out)
{
	bool		negative;
	uint64_t	m;

	if (!parse_integer(s, len, (uint64_t) INT64_MAX, &negative, &m))
		return false;
	if (!negative)
		*out = (int64_t) m;
	else if (m == (uint64_t) INT64_MAX + 1)
		*out = INT64_MIN;		/* -m itself would overflow */
	else
		*out = -(int64_t) m;
	return true;
}

/* s[0..len) equals the NUL-terminated lit exactly */
static inline bool
equals_literal(const char *s, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

/* the whole of s[0..len) is one JSON number */
static bool
is_json_number(const char *s, size_t len)
{
	bool		is_integer;
	size_t		bad;

	return len > 0 && json_scan_number(s, len, &is_integer, &bad) == len;
}

bool
extjson_parse_double(const char *s, size_t len, double *out)
{
	char		buf[EXTJSON_DOUBLE_MAX_LEN + 1];
	char	   *end;
	double		d;

	/* the exact spellings of the Extended JSON spec, nothing looser */
	if (equals_literal(s, len, "Infinity"))
	{
		*out = HUGE_VAL;
		return true;
	}
	if (equals_literal(s, len, "-Infinity"))
	{
		*out = -HUGE_VAL;
		return true;
	}
	if (equals_literal(s, len, "NaN"))
	{
		*out = (double) NAN;
		return true;
	}

	/*
	 * strtod also takes hex floats, "inf", "nan(...)" and leading blanks,
	 * and stops quietly at the first character it does not like; checking
	 * the grammar first means it only ever sees a plain decimal.  (Its
	 * decimal point follows LC_NUMERIC, which is "C" in a backend.)
	 */
	if (len > EXTJSON_DOUBLE_MAX_LEN || !is_json_number(s, len))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	d = strtod(buf, &end);
	if (end != buf + len)
		return false;

	/*
	 * A finite decimal whose double is infinite is not representable, which
	 * the $numberDouble spec forbids.  Underflow (ERANGE with a zero or
	 * subnormal result) is the correctly rounded value and is kept.
	 */
	if (isinf(d))
		return false;
	*out = d;
	return true;
}

/*
 * Dates
 *
 * Computed with integer arithmetic only: timegm() is not C99 and mktime()
 * would drag in the process's time zone, and neither is defined for all of
 * years 0000-9999 on every platform.
 */

/* n decimal digits at s as a number; false if any is not a digit */
static bool
fixed_digits(const char *s, int n, int *out)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if (!json_is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static bool
is_leap_year(int y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int
days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap_year(y) ? 29 : days[m - 1];
}

/*
 * Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard
 * Hinnant's days_from_civil).  Counting years from March puts the leap day
 * last, so the day of the year is a closed formula; 400-year eras make it
 * exact for any year, including those before 1970 and year 0.
 */
static int64_t
days_from_civil(int y, int m, int d)
{
	int64_t		yy = y - (m <= 2 ? 1 : 0);
	int64_t		era = (yy >= 0 ? yy : yy - 399) / 400;
	int64_t		yoe = yy - era * 400;	/* [0, 399] */
	int64_t		doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;	/* [0, 365] */
	int64_t		doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;	/* [0, 146096] */

	return era * 146097 + doe - 719468;
}

bool
extjson_parse_iso8601(const char *s, size_t len, int64_t *ms)
{
	int			year,
				month,
				day,
				hour,
				minute,
				second;
	int			millis = 0;
	int64_t		offset_minutes = 0;
	size_t		i;

	/* "YYYY-MM-DDTHH:MM:SS" is fixed-width: 19 chars */
	if (len < 19)
		return false;
	if (!fixed_digits(s, 4, &year) || s[4] != '-' ||
		!fixed_digits(s + 5, 2, &month) || s[7] != '-' ||
		!fixed_digits(s + 8, 2, &day) || s[10] != 'T' ||
		!fixed_digits(s + 11, 2, &hour) || s[13] != ':' ||
		!fixed_digits(s + 14, 2, &minute) || s[16] != ':' ||
		!fixed_digits(s + 17, 2, &second))
		return false;
	if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
		hour > 23 || minute > 59 || second > 59)
		return false;

	i = 19;
	if (i < len && s[i] == '.')
	{
		/*
		 * Any number of digits; the first three are the milliseconds and
		 * the rest are cut off, which is the floor for a non-negative
		 * fraction.
		 */
		size_t		start = ++i;

		for (; i < len && json_is_digit(s[i]); i++)
		{
			if (i - start < 3)
				millis = millis * 10 + (s[i] - '0');
		}
		if (i == start)
			return false;
		for (size_t k = i - start; k < 3; k++)
			millis *= 10;
	}

	/* the offset is required: a bare local time names no instant */
	if (i >= len)
		return false;
	if (s[i] == 'Z')
		i++;
	else if (s[i] == '+' || s[i] == '-')
	{
		int			sign = (s[i] == '-') ? -1 : 1;
		int			oh,
					om;

		i++;
		if (len - i == 5 && s[i + 2] == ':')
		{
			if (!fixed_digits(s + i, 2, &oh) || !fixed_digits(s + i + 3, 2, &om))
				return false;
		}
		else if (len - i == 4)
		{
			if (!fixed_digits(s + i, 2, &oh) || !fixed_digits(s + i + 2, 2, &om))
				return false;
		}
		else
			return false;
		if (oh > 23 || om > 59)
			return false;
		offset_minutes = sign * (oh * 60 + om);
		i = len;
	}
	else
		return false;
	if (i != len)
		return false;

	/* local time = UTC + offset, so UTC = local time - offset */
	*ms = ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute
		   - offset_minutes) * 60000
		+ (int64_t) second * 1000 + millis;
	return true;
}

bool
extjson_sort_regex_options(const char *in, size_t len, char *out)
{
	size_t		count[128];
	size_t		n = 0;

	for (size_t i = 0; i < len; i++)
	{
		if ((unsigned char) in[i] >= 128)
		{
			memcpy(out, in, len);
			return false;
		}
	}
	if (len <= 16)
	{
		/* the usual few letters: an insertion sort */
		for (size_t i = 0; i < len; i++)
		{
			char		c = in[i];
			size_t		j = i;

			while (j > 0 && (unsigned char) out[j - 1] > (unsigned char) c)
			{
				out[j] = out[j - 1];
				j--;
			}
			out[j] = c;
		}
		return true;
	}
	/* a counting sort: linear whatever the length */
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < len; i++)
		count[(unsigned char) in[i]]++;
	for (int c = 0; c < 128; c++)
	{
		memset(out + n, c, count[c]);
		n += count[c];
	}
	return true;
}

int
extjson_format_iso8601(int64_t ms, char out[EXTJSON_ISO8601_SIZE])
{
	int64_t		days;
	int64_t		msofday;
	int64_t		z;
	int64_t		era;
	int64_t		doe;
	int64_t		yoe;
	int64_t		doy;
	int64_t		mp;
	int			year;
	int			month;
	int			day;
	int			n;

	/* 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z */
	if (ms < 0 || ms > INT64_C(253402300799999))
		return 0;
	days = ms / 86400000;
	msofday = ms % 86400000;

	/* days since 1970-01-01 to a civil date (proleptic Gregorian) */
	z = days + 719468;
	era = z / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	day = (int) (doy - (153 * mp + 2) / 5 + 1);
	month = (int) (mp < 10 ? mp + 3 : mp - 9);
	year = (int) (yoe + era * 400 + (month <= 2));

	n = sprintf(out, "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day,
				(int) (msofday / 3600000), (int) (msofday / 60000 % 60),
				(int) (msofday / 1000 % 60));
	if (msofday % 1000)
		n += sprintf(out + n, ".%03d", (int) (msofday % 1000));
	out[n++] = 'Z';
	out[n] = '\0';
	return n;
}

size_t
extjson_base64_encode(const uint8_t *in, size_t len, char *out)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char	   *o = out;
	size_t		i = 0;

	for (; i + 3 <= len; i += 3)
	{
		uint32_t	b = ((uint32_t) in[i] << 16) | ((uint32_t) in[i + 1] << 8) | in[i + 2];

		*o++ = alphabet[b >> 18];
		*o++ = alphabet[(b >> 12) & 63];
		*o++ = alphabet[(b >> 6) & 63];
		*o++ = alphabet[b & 63];
	}
	if (i < len)
	{
		uint32_t	b = (uint32_t) in[i] << 16;

		if (i + 1 < len)
			b |= (uint32_t) in[i + 1] << 8;
		*o++ = alphabet[b >> 18];
		*o++ = alphabet[(b >> 12) & 63];
		*o++ = i + 1 < len ? alphabet[(b >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return (size_t) (o - out);
}

void
extjson_hex_encode(const uint8_t *in, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++)
	{
		*out++ = hex[in[i] >> 4];
		*out++ = hex[in[i] & 15];
	}
	*out = '\0';
}
