/*
 * numeric_to_bson.c
 *		PostgreSQL numeric -> BSON number, exactly.
 *
 * Everything here reads the numeric's base-10000 digits directly (see
 * numeric_layout.h) instead of going through numeric_out and back, which is
 * both slow and, done carelessly, where other converters lose values.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "numeric_to_bson.h"
#include "numeric_layout.h"
#include "port/pg_bitutils.h"
#include "pow10_table.h"
#include "extjson_scalars.h"
#include "utils/float.h"

/* 2^53: every integer up to it is exact in a double */
#define DOUBLE_EXACT_INT_MAX	(UINT64CONST(1) << 53)

const double bson_exact_pow10[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/* Decimal digits in d, 1 <= d <= 9999 */
static inline int
group_width(int d)
{
	return d >= 1000 ? 4 : d >= 100 ? 3 : d >= 10 ? 2 : 1;
}

/* "e<exp>" and a NUL at p (snprintf costs more than the conversion) */
static char *
write_exponent(char *p, int exp)
{
	char		tmp[12];
	int			n = 0;
	unsigned int u = exp < 0 ? -(unsigned int) exp : (unsigned int) exp;

	*p++ = 'e';
	if (exp < 0)
		*p++ = '-';
	do
	{
		tmp[n++] = (char) ('0' + u % 10);
		u /= 10;
	} while (u > 0);
	while (n > 0)
		*p++ = tmp[--n];
	*p = '\0';
	return p;
}

#ifdef HAVE_INT128
/* floor(a / 2^16) for negative a too (>> on negatives is implementation-defined) */
static inline int
floor_div_65536(int a)
{
	return a >= 0 ? a / 65536 : -((-a + 65535) / 65536);
}

/*
 * Eisel-Lemire (Daniel Lemire, "Number Parsing at a Gigabyte per Second",
 * 2021; the formulation of Nigel Tao's Wuffs and Go's strconv): the
 * correctly rounded double of man * 10^exp10, computed from a 128-bit
 * truncated approximation of 10^exp10, or false when the approximation
 * cannot decide the rounding, or the result would be subnormal, zero or
 * infinite; the caller then asks strtod.  man must be nonzero.
 */
static bool
eisel_lemire(uint64 man, int exp10, bool negative, double *out)
{
	const uint64 *pow;
	int			clz;
	uint64		ret_exp2;
	uint128		x;
	uint64		x_hi;
	uint64		x_lo;
	uint64		msb;
	uint64		ret_mant;
	uint64		bits;

	if (exp10 < BSON_POW10_MIN || exp10 > BSON_POW10_MAX)
		return false;
	pow = bson_pow10_128[exp10 - BSON_POW10_MIN];

	/* normalise man; 217706 / 2^16 approximates log2(10) */
	clz = 63 - pg_leftmost_one_pos64(man);
	man <<= clz;
	ret_exp2 = (uint64) (floor_div_65536(217706 * exp10) + 64 + 1023) - (uint64) clz;

	/* the top 128 bits of man * 10^exp10, first from the table's high half */
	x = (uint128) man * pow[0];
	x_hi = (uint64) (x >> 64);
	x_lo = (uint64) x;
	if ((x_hi & 0x1FF) == 0x1FF && x_lo + man < man)
	{
		/* the low bits may carry: widen with the table's low half */
		uint128		y = (uint128) man * pow[1];
		uint64		y_hi = (uint64) (y >> 64);
		uint64		y_lo = (uint64) y;
		uint64		merged_hi = x_hi;
		uint64		merged_lo = x_lo + y_hi;

		if (merged_lo < x_lo)
			merged_hi++;
		if ((merged_hi & 0x1FF) == 0x1FF && merged_lo + 1 == 0 && y_lo + man < man)
			return false;
		x_hi = merged_hi;
		x_lo = merged_lo;
	}

	/* keep 54 bits, then round to 53, ties to even */
	msb = x_hi >> 63;
	ret_mant = x_hi >> (msb + 9);
	ret_exp2 -= 1 ^ msb;
	if (x_lo == 0 && (x_hi & 0x1FF) == 0 && (ret_mant & 3) == 1)
		return false;			/* exactly halfway as far as we can tell */
	ret_mant += ret_mant & 1;
	ret_mant >>= 1;
	if (ret_mant >> 53 > 0)
	{
		ret_mant >>= 1;
		ret_exp2 += 1;
	}
	/* exponent 0 (subnormal or zero) or 0x7FF and above (infinite) */
	if (ret_exp2 - 1 >= 0x7FF - 1)
		return false;

	bits = ret_exp2 << 52 | (ret_mant & UINT64CONST(0x000FFFFFFFFFFFFF));
	if (negative)
		bits |= UINT64CONST(0x8000000000000000);
	memcpy(out, &bits, sizeof(bits));
	return true;
}
#endif

/*
 * The slow path of view_to_double: the digits as "<digits>e<exp>" for
 * strtod.  Kept out of line so that its buffer does not weigh on the fast
 * path's stack frame.
 */
static pg_noinline double
view_to_double_strtod(const BsonNumericView *v)
{
	char		stackbuf[128];
	char	   *buf;
	char	   *p;
	Size		need = (Size) v->ndigits * BSON_DEC_DIGITS + 16;
	double		d;

	buf = need <= sizeof(stackbuf) ? stackbuf : palloc(need);
	p = buf;
	if (v->negative)
		*p++ = '-';
	for (int i = 0; i < v->ndigits; i++)
	{
		int			g = v->digits[i];

		p[3] = '0' + g % 10;
		g /= 10;
		p[2] = '0' + g % 10;
		g /= 10;
		p[1] = '0' + g % 10;
		p[0] = '0' + g / 10;
		p += 4;
	}
	write_exponent(p, BSON_DEC_DIGITS * (v->weight - v->ndigits + 1));
	d = strtod(buf, NULL);
	if (buf != stackbuf)
		pfree(buf);
	return d;
}

/*
 * The correctly rounded double of (negative ? -1 : 1) * m * 10^exp10, if one
 * of the fast methods can decide it: Clinger's (m <= 2^53 and |exp10| <= 22:
 * m and 10^exp10 are exact doubles and one IEEE multiplication or division
 * rounds once, correctly), then Eisel-Lemire.  Returns false otherwise (and
 * for results that are subnormal, zero or infinite), leaving it to strtod.
 */
bool
bson_double_from_decimal(uint64 m, int exp10, bool negative, double *out)
{
	if (m == 0)
	{
		*out = negative ? -0.0 : 0.0;
		return true;
	}
#if FLT_EVAL_METHOD == 0		/* double arithmetic is really double */
	{
		uint64		mm = m;
		int			e = exp10;

		/* trailing zeros only matter when out of Clinger's range */
		while ((mm > DOUBLE_EXACT_INT_MAX || e < -22) && mm % 10 == 0)
		{
			mm /= 10;
			e++;
		}
		if (mm <= DOUBLE_EXACT_INT_MAX && e >= -22 && e <= 22)
		{
			double		d = (double) mm;

			d = e >= 0 ? d * bson_exact_pow10[e] : d / bson_exact_pow10[-e];
			*out = negative ? -d : d;
			return true;
		}
	}
#endif
#ifdef HAVE_INT128
	if (eisel_lemire(m, exp10, negative, out))
		return true;
#endif
	return false;
}

/* strtod of s[0..len), which is not NUL-terminated */
double
bson_strtod(const char *s, int len)
{
	char		stackbuf[128];
	char	   *buf = (Size) len < sizeof(stackbuf) ? stackbuf : palloc(len + 1);
	double		d;

	memcpy(buf, s, len);
	buf[len] = '\0';
	d = strtod(buf, NULL);
	if (buf != stackbuf)
		pfree(buf);
	return d;
}

/*
 * Correctly rounded double of the view's value, or +/-HUGE_VAL / 0 when it
 * overflows / underflows: the fast methods for up to 20 digits below 2^64,
 * else "<digits>e<exp>" given to strtod, which glibc rounds correctly.
 */
static double
view_to_double(const BsonNumericView *v)
{
	if (v->ndigits == 0)
		return 0.0;
	if (v->ndigits <= 4 || (v->ndigits == 5 && v->digits[0] < 1844))
	{
		uint64		m = 0;
		double		d;

		for (int i = 0; i < v->ndigits; i++)
			m = m * BSON_NBASE + v->digits[i];
		if (bson_double_from_decimal(m, BSON_DEC_DIGITS * (v->weight - v->ndigits + 1),
									 v->negative, &d))
			return d;
	}
	return view_to_double_strtod(v);
}

static pg_noinline bool
view_to_decimal128(const BsonNumericView *v, uint64 *low, uint64 *high)
{
	int			lead_zeros;
	int			trail_zeros;
	int64		nsig;			/* significant digits S */
	int64		x;				/* value = S * 10^x */
	int64		t;				/* zeros after S at display scale */
	int64		exponent;
	uint64		kept;
	int64		pad;
	uint64		hi = 0;
	uint64		lo = 0;

	if (v->special)
	{
		*low = 0;
		if (v->special == BSON_NUMERIC_NAN)
			*high = DECIMAL128_NAN;
		else
			*high = (v->negative ? DECIMAL128_SIGN : 0) | DECIMAL128_INF;
		return true;
	}

	if (v->ndigits == 0)
	{
		/* zero, with the display scale as its exponent: 0.00 -> 0E-2 */
		decimal128_zero(false, -(int64) v->dscale, low, high);
		return true;
	}

	/*
	 * The digits as written in groups of four have lead_zeros in front of the
	 * first group's value and trail_zeros after the last nonzero digit.
	 */
	lead_zeros = BSON_DEC_DIGITS - group_width(v->digits[0]);
	trail_zeros = 0;
	for (int d = v->digits[v->ndigits - 1]; d % 10 == 0; d /= 10)
		trail_zeros++;
	nsig = (int64) v->ndigits * BSON_DEC_DIGITS - lead_zeros - trail_zeros;
	x = (int64) BSON_DEC_DIGITS * (v->weight - v->ndigits + 1) + trail_zeros;

	/*
	 * At display scale the coefficient is S followed by t zeros, with
	 * exponent -dscale.  (t < 0 would mean digits hidden by the display
	 * scale, which PostgreSQL never stores; treat the digits as the truth.)
	 */
	t = x + v->dscale;
	exponent = -(int64) v->dscale;
	if (t < 0)
	{
		exponent += t;
		t = 0;
	}
	if (!decimal128_fit((uint64) (nsig + t), (uint64) t, &exponent, &kept, &pad))
		return false;

	/* coefficient: the first kept of S's digits and t zeros, then pad zeros */
	{
		int64		pos = 0;
		int64		first = lead_zeros;
		int64		last = first + Min(nsig, (int64) kept);

		for (int i = 0; i < v->ndigits && pos < last; i++)
		{
			int			g = v->digits[i];
			int			dec[4];

			dec[3] = g % 10;
			g /= 10;
			dec[2] = g % 10;
			g /= 10;
			dec[1] = g % 10;
			dec[0] = g / 10;
			for (int j = 0; j < 4; j++, pos++)
			{
				if (pos >= first && pos < last)
					decimal128_mul10_add(&hi, &lo, dec[j]);
			}
		}
		for (int64 i = nsig; i < (int64) kept + pad; i++)
			decimal128_mul10_add(&hi, &lo, 0);
	}
	decimal128_pack(v->negative, hi, lo, exponent, low, high);
	return true;
}

/*
 * The int32 or int64 of an integer of the given sign and magnitude, if it
 * fits one; false otherwise.
 */
static inline bool
integer_to_bson_number(uint64 magnitude, bool negative, BsonNumber *out)
{
	if (!negative)
	{
		if (magnitude <= (uint64) PG_INT32_MAX)
		{
			out->kind = BSON_NUMBER_INT32;
			out->v.i32 = (int32) magnitude;
			return true;
		}
		if (magnitude <= (uint64) PG_INT64_MAX)
		{
			out->kind = BSON_NUMBER_INT64;
			out->v.i64 = (int64) magnitude;
			return true;
		}
		return false;
	}
	if (magnitude <= (uint64) PG_INT32_MAX + 1)
	{
		out->kind = BSON_NUMBER_INT32;
		out->v.i32 = (int32) (-(int64) magnitude);
		return true;
	}
	if (magnitude <= (uint64) PG_INT64_MAX + 1)
	{
		out->kind = BSON_NUMBER_INT64;
		out->v.i64 = magnitude == (uint64) PG_INT64_MAX + 1
			? PG_INT64_MIN : -(int64) magnitude;
		return true;
	}
	return false;
}

void
bson_number_from_json_numeric(Numeric num, BsonNumber *out)
{
	BsonNumericView v;
	double		d;

	bson_numeric_view(num, &v);

	/* integers: display scale 0 and no digits after the point */
	if (v.dscale == 0 && !v.special && v.ndigits <= v.weight + 1 && v.weight <= 4)
	{
		uint64		acc = 0;
		bool		fits = true;

		for (int i = 0; i <= v.weight; i++)
		{
			if (acc > (PG_UINT64_MAX - (BSON_NBASE - 1)) / BSON_NBASE)
			{
				fits = false;
				break;
			}
			acc = acc * BSON_NBASE + (i < v.ndigits ? v.digits[i] : 0);
		}
		if (fits && integer_to_bson_number(acc, v.negative, out))
			return;
	}
	else if (v.ndigits == 0 && v.dscale == 0 && !v.special)
	{
		/* zero with weight > 4 cannot happen, but zero is int32 0 */
		out->kind = BSON_NUMBER_INT32;
		out->v.i32 = 0;
		return;
	}

	if (v.special)
	{
		/* not in jsonb; numeric's own NaN and infinities as double's */
		out->kind = BSON_NUMBER_DOUBLE;
		out->v.d = v.special == BSON_NUMERIC_NAN ? get_float8_nan()
			: v.negative ? -get_float8_infinity() : get_float8_infinity();
		return;
	}

	d = view_to_double(&v);
	if (!isinf(d) && (d != 0.0 || v.ndigits == 0))
	{
		out->kind = BSON_NUMBER_DOUBLE;
		out->v.d = d;
		return;
	}

	/* beyond double's range: the exact decimal128, if there is one */
	if (view_to_decimal128(&v, &out->v.dec.low, &out->v.dec.high))
		out->kind = BSON_NUMBER_DECIMAL128;
	else
		out->kind = BSON_NUMBER_UNREPRESENTABLE;
}

bool
bson_decimal128_from_numeric(Numeric num, uint64 *low, uint64 *high)
{
	BsonNumericView v;

	bson_numeric_view(num, &v);
	return view_to_decimal128(&v, low, high);
}

void
bson_numeric_shape(Numeric num, int *significant_digits, int *sci_exponent)
{
	BsonNumericView v;
	int			width;

	bson_numeric_view(num, &v);
	if (v.ndigits == 0)
	{
		*significant_digits = v.special ? 0 : 1;
		*sci_exponent = 0;
		return;
	}
	width = group_width(v.digits[0]);
	*significant_digits = v.ndigits * BSON_DEC_DIGITS - (BSON_DEC_DIGITS - width);
	for (int d = v.digits[v.ndigits - 1]; d % 10 == 0; d /= 10)
		(*significant_digits)--;
	*sci_exponent = v.weight * BSON_DEC_DIGITS + width - 1;
}

/*
 * The BSON number of a JSON number literal, already checked against JSON's
 * grammar, by its written form: an integer literal is int32 or int64 when it
 * fits; anything else the correctly rounded double, or beyond double's
 * range the exact decimal128 of the written digits.
 */
void
bson_number_from_json_text(const char *num, int len, bool is_integer,
						   BsonNumber *out)
{
	const char *p = num;
	const char *end = num + len;
	const char *dot = NULL;
	bool		negative = false;
	int			nsig = 0;		/* significant digits, leading zeros dropped */
	int64		exp10 = 0;		/* value = significant digits * 10^exp10 */
	uint64		m = 0;			/* them, while there are at most 19 */
	double		d;

	if (*p == '-')
	{
		negative = true;
		p++;
	}
	for (; p < end && *p != 'e' && *p != 'E'; p++)
	{
		if (*p == '.')
			dot = p;
		else if (*p != '0' || nsig > 0)
		{
			if (nsig < 19)
				m = m * 10 + (*p - '0');
			nsig++;
		}
	}
	if (p < end)
	{
		const char *e = p + 1;
		bool		eneg = false;
		int64		ev = 0;

		if (*e == '+' || *e == '-')
			eneg = (*e++ == '-');
		for (; e < end; e++)
			if (ev < INT64CONST(1000000000))	/* beyond every range anyway */
				ev = ev * 10 + (*e - '0');
		exp10 = eneg ? -ev : ev;
	}
	if (dot)
		exp10 -= p - dot - 1;

	if (is_integer && nsig <= 19 && integer_to_bson_number(m, negative, out))
		return;

	if (!(nsig <= 19 && exp10 > -100000 && exp10 < 100000 &&
		  bson_double_from_decimal(m, (int) exp10, negative, &d)))
		d = bson_strtod(num, len);
	if (!isinf(d) && (d != 0.0 || nsig == 0))
	{
		out->kind = BSON_NUMBER_DOUBLE;
		out->v.d = d;
		return;
	}

	/* beyond double's range: the exact decimal128 of the written digits */
	{
		char	   *digits = palloc(nsig + 1);
		int			n = 0;

		for (p = num; p < end && *p != 'e' && *p != 'E'; p++)
			if (*p >= '0' && *p <= '9' && (*p != '0' || n > 0))
				digits[n++] = *p;
		Assert(n == nsig);
		if (decimal128_from_digits(negative, digits, n, exp10,
								   &out->v.dec.low, &out->v.dec.high))
			out->kind = BSON_NUMBER_DECIMAL128;
		else
			out->kind = BSON_NUMBER_UNREPRESENTABLE;
		pfree(digits);
	}
}
