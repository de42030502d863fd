/*
 * bson_decode.c
 *		PostgreSQL glue for the BSON readers: errors, paths, encodings, and
 *		the text of doubles.
 */
#include "bson_decode.h"

#include <math.h>

#include "common/shortest_dec.h"
#include "miscadmin.h"

#include "bson_encoding.h"

/* Validation's nesting hook: PostgreSQL's stack check, raising 54001 */
static bool
enter_checked(void *arg pg_attribute_unused(), int depth pg_attribute_unused())
{
	check_stack_depth();
	return true;
}

/* Every few thousand elements of validation: a long run can be cancelled */
static void
tick_interrupts(void *arg pg_attribute_unused())
{
	CHECK_FOR_INTERRUPTS();
}

/* The same for bson_is_valid, which must not raise: too deep is invalid */
static bool
enter_quiet(void *arg pg_attribute_unused(), int depth pg_attribute_unused())
{
	return !stack_is_too_deep();
}

bool
bson_decode_check(const uint8 *data, size_t len, BsonReadError *err)
{
	BsonReadLimits limits = {0, enter_checked, NULL, tick_interrupts};

	return bson_read_validate(data, len, &limits, err);
}

void
bson_decode_validate(const uint8 *data, size_t len, size_t base_offset)
{
	BsonReadError err;

	if (!bson_decode_check(data, len, &err))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid BSON document"),
				 errdetail("At byte offset %zu: %s.", base_offset + err.offset,
						   err.message)));
}

bool
bson_decode_is_valid(const uint8 *data, size_t len)
{
	BsonReadLimits limits = {0, enter_quiet, NULL, tick_interrupts};

	return bson_read_validate(data, len, &limits, NULL);
}

void
bson_decode_path_text(const BsonDecodePath *path, StringInfo out)
{
	const BsonDecodePath *chain[BSON_PATH_DEPTH_MAX];
	int			n = 0;

	for (const BsonDecodePath *p = path; p && p->key && n < (int) lengthof(chain); p = p->parent)
		chain[n++] = p;
	if (n == (int) lengthof(chain) && chain[n - 1]->parent && chain[n - 1]->parent->key)
		bson_path_append_elided(out);
	while (n-- > 0)
	{
		const BsonDecodePath *p = chain[n];

		/* array keys are any UTF-8 too, not always digits */
		if (p->in_array)
			bson_path_append_array_key(out, p->key, (int) p->keylen);
		else
			bson_path_append_key(out, p->key, (int) p->keylen, BSON_KEY_UTF8);
	}
	if (out->len == 0)
		appendStringInfoString(out, "(top level)");
}

const char *
bson_decode_to_server(const char *s, size_t len, size_t *outlen,
					const BsonDecodePath *path, bool is_key, size_t at)
{
	const BsonEncoding *enc = bson_server_encoding();
	char	   *converted;
	int			bad;

	*outlen = len;
	/* UTF8 and SQL_ASCII take UTF-8 as it is; ASCII is the same everywhere */
	if (enc->kind != BSON_ENC_CONVERT ||
		bson_ascii_prefix(s, (int) len) == (int) len)
		return s;

	converted = bson_convert_from_utf8(enc, s, (int) len, &bad);
	if (converted == NULL)
	{
		StringInfoData where;
		int			charlen = pg_utf_mblen((const unsigned char *) s + bad);

		initStringInfo(&where);
		bson_decode_path_text(path, &where);
		ereport(ERROR,
				(errcode(ERRCODE_UNTRANSLATABLE_CHARACTER),
				 errmsg("%s at %s has a character that \"%s\" cannot hold",
						is_key ? "key" : "string", where.data,
						GetDatabaseEncodingName()),
				 errdetail("The UTF-8 sequence %s at byte %zu of the %s has no equivalent in the server encoding.",
						   bson_hex_bytes(s + bad, Min(charlen, (int) len - bad)),
						   at + (size_t) bad, is_key ? "key" : "string"),
				 errhint("Read the document in a database whose encoding is UTF8.")));
	}
	*outlen = strlen(converted);
	return converted;
}

char *
bson_regex_options_text(const char *options, size_t *len)
{
	size_t		n = strlen(options);
	char	   *sorted = palloc(n + 1);

	extjson_sort_regex_options(options, n, sorted);
	sorted[n] = '\0';
	*len = n;
	return sorted;
}

/*
 * PostgreSQL's Ryu does not take a decimal that lies exactly on the boundary
 * between d and its neighbour, although strtod reads such a tie back as d
 * when d's mantissa is even: for 1e23 it gives 9.999999999999999e+22, where
 * Python's repr (and pymongo, and JavaScript) write 1e+23.  A boundary has
 * few significant digits only when it is an integer, that is for |d| of
 * 2^53 and more, and only an even mantissa rounds ties to itself; for those
 * doubles look for a shorter text that reads back as d.
 * ryu holds Ryu's text and is replaced by the shorter one if there is one.
 */
static void
shorter_on_boundary(double d, char *ryu)
{
	uint64		bits;
	int			ndigits = 0;
	char		candidate[32];

	memcpy(&bits, &d, sizeof(bits));
	if ((bits & 1) != 0 || !(fabs(d) >= 9007199254740992.0) || isinf(d))
		return;
	for (const char *p = ryu; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			ndigits++;
	/*
	 * If the nearest decimal of k digits reads back as d, so does the nearest
	 * of k + 1 digits (it is no farther away): try one digit fewer than Ryu,
	 * which usually fails at once, and go on down while it works.  glibc's
	 * printf rounds exactly.
	 */
	for (int k = ndigits - 1; k >= 1; k--)
	{
		snprintf(candidate, sizeof(candidate), "%.*e", k - 1, d);
		if (strtod(candidate, NULL) != d)
			break;
		strcpy(ryu, candidate);
	}
}

int
bson_double_text(double d, BsonDoubleStyle style, char *out)
{
	char		shortest[32];
	char		digits[24];
	int			ndigits = 0;
	int			intdigits = 0;	/* digits written before the point */
	int			point;			/* d = 0.digits * 10^point */
	bool		seen_point = false;
	bool		negative;
	bool		scientific;
	const char *p;
	char	   *o = out;

	/* PostgreSQL's Ryu: the shortest round-trip digits, "1.5e-07", "123.4" */
	double_to_shortest_decimal_buf(d, shortest);
	shorter_on_boundary(d, shortest);
	p = shortest;
	negative = (*p == '-');
	if (negative)
		p++;
	point = 0;
	for (; (*p >= '0' && *p <= '9') || *p == '.'; p++)
	{
		if (*p == '.')
		{
			seen_point = true;
			continue;
		}
		if (!seen_point)
			intdigits++;
		if (ndigits == 0 && *p == '0')
			point--;			/* a leading zero: not significant */
		else if (ndigits < (int) sizeof(digits))
			digits[ndigits++] = *p;
	}
	point += intdigits + (*p == 'e' ? atoi(p + 1) : 0);
	while (ndigits > 0 && digits[ndigits - 1] == '0')
		ndigits--;

	if (negative)
		*o++ = '-';
	if (ndigits == 0)
		return (int) (o - out) + sprintf(o, "0.0");

	/* Python's repr, as pymongo writes: d.ddde+XX outside 1e-4 <= |d| < 1e16 */
	scientific = point - 1 < -4 || point - 1 >= 16;
	/* a jsonb number needs its fraction shown to stay a double (1e19 > int64) */
	if (style == BSON_DOUBLE_NUMERIC && point >= ndigits && point <= 19)
		scientific = false;

	if (scientific)
	{
		*o++ = digits[0];
		if (ndigits > 1)
		{
			*o++ = '.';
			memcpy(o, digits + 1, ndigits - 1);
			o += ndigits - 1;
		}
		o += sprintf(o, "e%c%02d", point - 1 >= 0 ? '+' : '-', abs(point - 1));
	}
	else if (point <= 0)
	{
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -point; i++)
			*o++ = '0';
		memcpy(o, digits, ndigits);
		o += ndigits;
	}
	else if (point >= ndigits)
	{
		memcpy(o, digits, ndigits);
		o += ndigits;
		for (int i = ndigits; i < point; i++)
			*o++ = '0';
		*o++ = '.';
		*o++ = '0';
	}
	else
	{
		memcpy(o, digits, point);
		o += point;
		*o++ = '.';
		memcpy(o, digits + point, ndigits - point);
		o += ndigits - point;
	}
	*o = '\0';
	return (int) (o - out);
}
