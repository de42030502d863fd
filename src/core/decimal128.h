/*
 * decimal128.h
 *		IEEE 754-2008 decimal128 in its binary integer decimal (BID)
 *		encoding, the form BSON stores: the one module that encodes, parses
 *		and formats it.
 *
 * A value is held as its two 64-bit halves, low and high, in the order the
 * bytes go on the wire (little-endian, low first).  Plain C99 with no
 * PostgreSQL headers, so that fuzz/ and test/unit/ build it too.
 */
#ifndef DECIMAL128_H
#define DECIMAL128_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Coefficient digits and exponent range */
#define DECIMAL128_MAX_DIGITS	34
#define DECIMAL128_EXP_MIN		(-6176)
#define DECIMAL128_EXP_MAX		6111
#define DECIMAL128_EXP_BIAS		6176

/* Bits of the high half */
#define DECIMAL128_SIGN			(UINT64_C(1) << 63)
#define DECIMAL128_INF			UINT64_C(0x7800000000000000)
#define DECIMAL128_NAN			UINT64_C(0x7C00000000000000)

/*
 * (hi, lo) = (hi, lo) * 10 + digit: building a coefficient digit by digit.
 * The coefficient stays below 10^34 < 2^113, so hi never overflows; lo * 10
 * is done in 32-bit halves because C99 has no 128-bit type.
 */
static inline void
decimal128_mul10_add(uint64_t *hi, uint64_t *lo, unsigned digit)
{
	uint64_t	l = *lo;
	uint64_t	low_part = (l & UINT64_C(0xFFFFFFFF)) * 10;
	uint64_t	high_part = (l >> 32) * 10;
	uint64_t	new_lo = low_part + (high_part << 32);
	uint64_t	carry = (high_part >> 32) + (new_lo < low_part ? 1 : 0);

	*hi = *hi * 10 + carry;
	*lo = new_lo + digit;
	if (*lo < new_lo)
		(*hi)++;
}

/* The value of sign, coefficient (hi, lo) and an exponent in range */
static inline void
decimal128_pack(bool negative, uint64_t hi, uint64_t lo, int64_t exponent,
				uint64_t *low, uint64_t *high)
{
	*low = lo;
	*high = (negative ? DECIMAL128_SIGN : 0) |
		((uint64_t) (exponent + DECIMAL128_EXP_BIAS) << 49) | hi;
}

/*
 * The exactness rule every encoder shares.  A nonzero coefficient of nsig
 * digits (from its first nonzero one), the last trailing of them zeros,
 * times 10^*exponent: decimal128 keeps that representation ("1.00" stays
 * 100E-2) when it fits, at most 34 digits and an exponent in [-6176, 6111].
 * When it does not, the only changes allowed keep the value exactly:
 * dropping trailing zeros (raising the exponent) or appending zeros
 * (lowering an exponent that is too large).  Returns false when the value
 * would have to be rounded or is out of range; otherwise the result's
 * coefficient is the first *kept digits followed by *pad zeros, at
 * *exponent.  Digit counts must stay below 2^62.
 */
extern bool decimal128_fit(uint64_t nsig, uint64_t trailing, int64_t *exponent,
						   uint64_t *kept, int64_t *pad);

/* Zero of that sign, at the exponent clamped into range (0E-6176, 0E+6111) */
extern void decimal128_zero(bool negative, int64_t exponent,
							uint64_t *low, uint64_t *high);

/*
 * The exact decimal128 of +/- digits * 10^exponent (digits: ASCII decimal
 * digits, leading zeros allowed), if there is one.
 */
extern bool decimal128_from_digits(bool negative, const char *digits,
								   size_t ndigits, int64_t exponent,
								   uint64_t *low, uint64_t *high);

/*
 * The specification's from-string grammar ({"$numberDecimal": ...}):
 * [+-] then Inf/Infinity/NaN (any case) or digits with an optional '.' and
 * an optional [eE][+-]digits exponent; exact or false, never rounded.  s
 * need not be NUL-terminated.
 */
extern bool decimal128_parse(const char *s, size_t len,
							 uint64_t *low, uint64_t *high);

/* The specification's to-string algorithm ("1.23E+5", "NaN", "-0.00") */
#define DECIMAL128_STRING_SIZE 43
extern int	decimal128_to_string(uint64_t low, uint64_t high,
								 char out[DECIMAL128_STRING_SIZE]);

#endif							/* DECIMAL128_H */
