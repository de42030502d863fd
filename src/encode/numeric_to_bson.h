/*
 * numeric_to_bson.h
 *		PostgreSQL numeric -> BSON number, exactly.
 */
#ifndef NUMERIC_TO_BSON_H
#define NUMERIC_TO_BSON_H

#include "bson_compat.h"

#include <float.h>

#include "utils/numeric.h"

#include "decimal128.h"

typedef enum BsonNumberKind
{
	BSON_NUMBER_INT32,
	BSON_NUMBER_INT64,
	BSON_NUMBER_DOUBLE,
	BSON_NUMBER_DECIMAL128,
	BSON_NUMBER_UNREPRESENTABLE /* no exact decimal128 for it either */
} BsonNumberKind;

typedef struct BsonNumber
{
	BsonNumberKind kind;
	union
	{
		int32		i32;
		int64		i64;
		double		d;
		struct
		{
			uint64		low;
			uint64		high;
		}			dec;
	}			v;
} BsonNumber;

#include "numeric_layout.h"

/*
 * The commonest number by far, an integer of up to 8 digits, read straight
 * from numeric's short format: display scale 0 and weight 0 or 1 (at most
 * two base-10000 digits, below 10^8).  Returns false for anything else.
 */
static inline bool
bson_numeric_small_int(Numeric num, int32 *out)
{
	const BsonNumericData *n = (const BsonNumericData *) num;
	uint16		header = n->choice.n_header;
	int			ndigits;
	int32		v;

	/* short format, positive weight below 2, display scale 0 */
	if ((header & (BSON_NUMERIC_SIGN_MASK | BSON_NUMERIC_SHORT_DSCALE_MASK |
				   BSON_NUMERIC_SHORT_WEIGHT_SIGN_MASK | 0x003E)) != BSON_NUMERIC_SHORT)
		return false;
	ndigits = (VARSIZE(num) - (VARHDRSZ + sizeof(uint16))) / sizeof(BsonNumericDigit);
	if (header & 1)
	{
		/* weight 1: one or two digits */
		if (ndigits == 2)
			v = n->choice.n_short.n_data[0] * BSON_NBASE + n->choice.n_short.n_data[1];
		else if (ndigits == 1)
			v = n->choice.n_short.n_data[0] * BSON_NBASE;
		else
			return false;
	}
	else if (ndigits == 1)
		v = n->choice.n_short.n_data[0];
	else if (ndigits == 0)
		v = 0;
	else
		return false;
	*out = (header & BSON_NUMERIC_SHORT_SIGN_MASK) ? -v : v;
	return true;
}

/* 10^0 .. 10^22, the powers of ten a double holds exactly */
extern const double bson_exact_pow10[23];

/*
 * The commonest non-integer, a decimal such as 1234.56 with at most 16
 * digits in numeric's short format, converted with Clinger's fast path: if
 * m <= 2^53 and |e| <= 22, both m and 10^e are exact doubles and one IEEE
 * multiplication or division rounds m * 10^e once, correctly.  Only for
 * display scale > 0, which always maps to a double.  Returns false for
 * anything else.
 */
static inline bool
bson_numeric_simple_double(Numeric num, double *out)
{
#if FLT_EVAL_METHOD == 0		/* double arithmetic is really double */
	const BsonNumericData *n = (const BsonNumericData *) num;
	uint16		header = n->choice.n_header;
	int			ndigits;
	int			weight;
	int			e;
	uint64		m = 0;
	double		d;

	if ((header & BSON_NUMERIC_SIGN_MASK) != BSON_NUMERIC_SHORT ||
		(header & BSON_NUMERIC_SHORT_DSCALE_MASK) == 0)
		return false;
	ndigits = (VARSIZE(num) - (VARHDRSZ + sizeof(uint16))) / sizeof(BsonNumericDigit);
	if (ndigits > 4)
		return false;
	weight = ((header & BSON_NUMERIC_SHORT_WEIGHT_SIGN_MASK) ? ~BSON_NUMERIC_SHORT_WEIGHT_MASK : 0)
		| (header & BSON_NUMERIC_SHORT_WEIGHT_MASK);
	e = BSON_DEC_DIGITS * (weight - ndigits + 1);
	for (int i = 0; i < ndigits; i++)
		m = m * BSON_NBASE + n->choice.n_short.n_data[i];
	if (m > (UINT64CONST(1) << 53) || e < -22 || e > 22)
		return false;
	d = e >= 0 ? (double) m * bson_exact_pow10[e] : (double) m / bson_exact_pow10[-e];
	*out = (header & BSON_NUMERIC_SHORT_SIGN_MASK) ? -d : d;
	return true;
#else
	return false;
#endif
}

/*
 * The JSON-number mapping (README, "Mapping"): integers at display scale 0
 * as int32 or int64 when they fit; everything else as the correctly rounded
 * double; a value whose double would overflow to +/-infinity or underflow to
 * zero as the exact decimal128; if that does not exist either,
 * BSON_NUMBER_UNREPRESENTABLE (the caller raises, naming the path).
 */
extern void bson_number_from_json_numeric(Numeric num, BsonNumber *out);

/*
 * The same mapping for a JSON number literal (checked against JSON's
 * grammar), by its written form: an integer literal is int32 or int64 when
 * it fits, anything else a double; beyond double's range the exact
 * decimal128 of the written digits.
 */
extern void bson_number_from_json_text(const char *num, int len, bool is_integer,
									   BsonNumber *out);

/*
 * The exact decimal128 of num at its display scale, dropping trailing zeros
 * only as needed to fit 34 digits and the exponent range.  NaN and
 * +/-Infinity map to decimal128's own.  Returns false if no exact decimal128
 * exists.
 */
extern bool bson_decimal128_from_numeric(Numeric num, uint64 *low, uint64 *high);

/*
 * The correctly rounded double of +/- m * 10^exp10 by the fast methods
 * (Clinger, Eisel-Lemire); false when they cannot decide, or the result is
 * subnormal, zero or infinite: then strtod of the text is the answer.
 */
extern bool bson_double_from_decimal(uint64 m, int exp10, bool negative, double *out);

/* strtod of s[0..len), which need not be NUL-terminated */
extern double bson_strtod(const char *s, int len);

/*
 * For error messages: num's significant decimal digits and its exponent in
 * scientific notation (1.5e400 has 2 and 400).
 */
extern void bson_numeric_shape(Numeric num, int *significant_digits,
							   int *sci_exponent);

#endif							/* NUMERIC_TO_BSON_H */
