/*
 * decimal128.c
 *		IEEE 754-2008 decimal128 (binary integer decimal), as BSON stores
 *		it: exact encoding from digits, the Extended JSON string grammar,
 *		and the specification's to-string algorithm.
 *
 * Plain C99 with no PostgreSQL headers: the server's encoders (numeric,
 * JSON numbers, $numberDecimal), its decoders, fuzz/ and test/unit/ all use
 * this one copy.
 */
#include "decimal128.h"

#include <stdio.h>
#include <string.h>

#include "json_grammar.h"

/*
 * Inputs longer than this (1 TiB) are refused by the decimal128 code before
 * any arithmetic.  No real string comes near it (a PostgreSQL string is at
 * most 1 GB); the bound only makes the overflow reasoning below
 * unconditional: digit counts stay far below the exponent saturation point
 * and everything fits in int64 with room to spare.
 */
#define DEC128_MAX_INPUT	(UINT64_C(1) << 40)

/*
 * Exponent text is accumulated up to this and then saturates.  Any exponent
 * that large is out of range by far more than DEC128_MAX_INPUT digits could
 * make up, so the saturated value leads to the same result as the exact one.
 */
#define DEC128_EXP_SATURATE	INT64_C(100000000000000000)

bool
decimal128_fit(uint64_t nsig, uint64_t trailing, int64_t *exponent,
			   uint64_t *kept, int64_t *pad)
{
	int64_t		e = *exponent;
	uint64_t	drop = 0;

	/*
	 * Padding adds at most 33 zeros, so a nonzero value with a larger
	 * exponent than this has no decimal128.  Checking now also bounds the
	 * exponent above for the additions below.
	 */
	if (e > DECIMAL128_EXP_MAX + DECIMAL128_MAX_DIGITS - 1)
		return false;

	/* zeros that must go: beyond 34 digits, and below the least exponent */
	if (nsig > DECIMAL128_MAX_DIGITS)
		drop = nsig - DECIMAL128_MAX_DIGITS;
	if (e < DECIMAL128_EXP_MIN)
	{
		/* cannot overflow: e >= INT64_MIN */
		uint64_t	need = (uint64_t) (DECIMAL128_EXP_MIN - e);

		if (need > trailing)
			return false;
		if (need > drop)
			drop = need;
	}
	if (drop > trailing)
		return false;			/* would drop a nonzero digit: inexact */
	*kept = nsig - drop;
	/* callers keep digit counts far below 2^62: no overflow */
	e += (int64_t) drop;

	*pad = 0;
	if (e > DECIMAL128_EXP_MAX)
	{
		*pad = e - DECIMAL128_EXP_MAX;
		if ((uint64_t) *pad > DECIMAL128_MAX_DIGITS - *kept)
			return false;
		e = DECIMAL128_EXP_MAX;
	}
	*exponent = e;
	return true;
}

void
decimal128_zero(bool negative, int64_t exponent, uint64_t *low, uint64_t *high)
{
	/*
	 * Zero has no digits to drop or pad, and every exponent gives the same
	 * value, so an out-of-range one is simply clamped.
	 */
	if (exponent < DECIMAL128_EXP_MIN)
		exponent = DECIMAL128_EXP_MIN;
	else if (exponent > DECIMAL128_EXP_MAX)
		exponent = DECIMAL128_EXP_MAX;
	decimal128_pack(negative, 0, 0, exponent, low, high);
}

/*
 * From text: the value is coefficient * 10^exponent where the coefficient is
 * every digit as written (leading zeros aside) and the exponent the written
 * one minus the digits after the point, fitted by decimal128_fit.  The
 * digits can sit in two pieces (either side of a '.'), so the encoder takes
 * two spans rather than needing a copy of unbounded size.
 */
typedef struct DigitSpans
{
	const char *a;
	size_t		na;
	const char *b;
	size_t		nb;
} DigitSpans;

static inline char
span_digit(const DigitSpans *d, size_t i)
{
	return i < d->na ? d->a[i] : d->b[i - d->na];
}

static bool
decimal128_from_spans(bool negative, const DigitSpans *d, int64_t exponent,
					  uint64_t *low, uint64_t *high)
{
	size_t		n = d->na + d->nb;
	size_t		first;
	size_t		last;
	uint64_t	kept;
	int64_t		pad;
	uint64_t	hi = 0;
	uint64_t	lo = 0;

	if (n == 0 || (uint64_t) d->na > DEC128_MAX_INPUT ||
		(uint64_t) d->nb > DEC128_MAX_INPUT)
		return false;

	for (first = 0; first < n && span_digit(d, first) == '0'; first++)
		;
	if (first == n)
	{
		decimal128_zero(negative, exponent, low, high);
		return true;
	}
	for (last = n - 1; span_digit(d, last) == '0'; last--)
		;
	if (!decimal128_fit(n - first, n - 1 - last, &exponent, &kept, &pad))
		return false;
	for (size_t i = first; i < first + kept; i++)
		decimal128_mul10_add(&hi, &lo, (unsigned) (span_digit(d, i) - '0'));
	for (int64_t i = 0; i < pad; i++)
		decimal128_mul10_add(&hi, &lo, 0);
	decimal128_pack(negative, hi, lo, exponent, low, high);
	return true;
}

bool
decimal128_from_digits(bool negative, const char *digits,
							   size_t ndigits, int64_t exponent,
							   uint64_t *low, uint64_t *high)
{
	DigitSpans	d = {digits, ndigits, NULL, 0};

	/* decimal128_from_spans trusts its spans to hold only digits */
	for (size_t i = 0; i < ndigits; i++)
	{
		if (!json_is_digit(digits[i]))
			return false;
	}
	return decimal128_from_spans(negative, &d, exponent, low, high);
}

/* s[0..len) equals the lower-case ASCII lit, ignoring ASCII case */
static bool
equals_ignore_case(const char *s, size_t len, const char *lit)
{
	if (len != strlen(lit))
		return false;
	for (size_t i = 0; i < len; i++)
	{
		char		c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char) (c - 'A' + 'a');
		if (c != lit[i])
			return false;
	}
	return true;
}

bool
decimal128_parse(const char *s, size_t len,
				 uint64_t *low, uint64_t *high)
{
	size_t		i = 0;
	bool		negative = false;
	DigitSpans	d;
	int64_t		exponent = 0;

	if ((uint64_t) len > DEC128_MAX_INPUT)
		return false;
	if (i < len && (s[i] == '+' || s[i] == '-'))
	{
		negative = (s[i] == '-');
		i++;
	}

	/* the specification spells these case-insensitively, sign allowed */
	if (equals_ignore_case(s + i, len - i, "inf") ||
		equals_ignore_case(s + i, len - i, "infinity"))
	{
		*low = 0;
		*high = (negative ? DECIMAL128_SIGN : 0) | DECIMAL128_INF;
		return true;
	}
	if (equals_ignore_case(s + i, len - i, "nan"))
	{
		*low = 0;
		*high = (negative ? DECIMAL128_SIGN : 0) | DECIMAL128_NAN;
		return true;
	}

	/* digits [ '.' [digits] ] | '.' digits: at least one digit somewhere */
	d.a = s + i;
	while (i < len && json_is_digit(s[i]))
		i++;
	d.na = (size_t) (s + i - d.a);
	d.b = s + i;
	d.nb = 0;
	if (i < len && s[i] == '.')
	{
		i++;
		d.b = s + i;
		while (i < len && json_is_digit(s[i]))
			i++;
		d.nb = (size_t) (s + i - d.b);
	}
	if (d.na + d.nb == 0)
		return false;

	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		bool		exp_negative = false;
		size_t		start;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
		{
			exp_negative = (s[i] == '-');
			i++;
		}
		start = i;
		for (; i < len && json_is_digit(s[i]); i++)
		{
			/* saturate rather than overflow (see DEC128_EXP_SATURATE) */
			if (exponent < DEC128_EXP_SATURATE)
				exponent = exponent * 10 + (s[i] - '0');
		}
		if (i == start)
			return false;
		if (exp_negative)
			exponent = -exponent;
	}
	if (i != len)
		return false;

	/* digits after the point scale the value down */
	exponent -= (int64_t) d.nb;
	return decimal128_from_spans(negative, &d, exponent, low, high);
}

int
decimal128_to_string(uint64_t low, uint64_t high, char out[DECIMAL128_STRING_SIZE])
{
	bool		negative = (high >> 63) != 0;
	unsigned	combination = (unsigned) (high >> 58) & 0x1F;
	int			biased;
	uint32_t	parts[4];
	char		digits[40];		/* least significant first */
	int			ndigits = 0;
	int			exponent;
	int			adjusted;
	char	   *o = out;

	if (combination == 0x1F)
		return sprintf(out, "NaN");
	if (combination == 0x1E)
		return sprintf(out, "%s", negative ? "-Infinity" : "Infinity");

	if ((combination >> 3) == 3)
	{
		/* the "11" form: an implied 100 prefix makes it above 10^34 - 1 */
		biased = (int) ((high >> 47) & 0x3FFF);
		parts[0] = parts[1] = parts[2] = parts[3] = 0;
	}
	else
	{
		uint64_t	chigh = high & UINT64_C(0x1FFFFFFFFFFFF);

		biased = (int) ((high >> 49) & 0x3FFF);
		parts[0] = (uint32_t) (chigh >> 32);
		parts[1] = (uint32_t) chigh;
		parts[2] = (uint32_t) (low >> 32);
		parts[3] = (uint32_t) low;
		/* 10^34 - 1 = 0x1ED09BEAD87C0378D8E63FFFFFFFF: above is non-canonical, 0 */
		if (chigh > UINT64_C(0x1ED09BEAD87C0) ||
			(chigh == UINT64_C(0x1ED09BEAD87C0) && low > UINT64_C(0x378D8E63FFFFFFFF)))
			parts[0] = parts[1] = parts[2] = parts[3] = 0;
	}
	exponent = biased - DECIMAL128_EXP_BIAS;

	/* the coefficient's digits, nine at a time */
	while (parts[0] | parts[1] | parts[2] | parts[3])
	{
		uint64_t	rem = 0;

		for (int k = 0; k < 4; k++)
		{
			uint64_t	cur = (rem << 32) | parts[k];

			parts[k] = (uint32_t) (cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		for (int k = 0; k < 9; k++)
		{
			digits[ndigits++] = (char) ('0' + rem % 10);
			rem /= 10;
		}
	}
	while (ndigits > 1 && digits[ndigits - 1] == '0')
		ndigits--;
	if (ndigits == 0)
		digits[ndigits++] = '0';

	if (negative)
		*o++ = '-';
	adjusted = exponent + ndigits - 1;
	if (exponent > 0 || adjusted < -6)
	{
		*o++ = digits[ndigits - 1];
		if (ndigits > 1)
		{
			*o++ = '.';
			for (int k = ndigits - 2; k >= 0; k--)
				*o++ = digits[k];
		}
		o += sprintf(o, "E%c%d", adjusted >= 0 ? '+' : '-', adjusted >= 0 ? adjusted : -adjusted);
	}
	else if (exponent == 0)
	{
		for (int k = ndigits - 1; k >= 0; k--)
			*o++ = digits[k];
	}
	else
	{
		int			point = ndigits + exponent;	/* digits before the point */

		if (point > 0)
		{
			for (int k = ndigits - 1; k >= 0; k--)
			{
				*o++ = digits[k];
				if (k == ndigits - point)
					*o++ = '.';
			}
		}
		else
		{
			*o++ = '0';
			*o++ = '.';
			for (int k = 0; k < -point; k++)
				*o++ = '0';
			for (int k = ndigits - 1; k >= 0; k--)
				*o++ = digits[k];
		}
	}
	*o = '\0';
	return (int) (o - out);
}

