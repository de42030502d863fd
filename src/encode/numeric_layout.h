/*
 * numeric_layout.h
 *		Read-only access to the on-disk layout of PostgreSQL's numeric.
 *
 * PostgreSQL keeps struct NumericData private to numeric.c, and its public
 * functions either round (numeric_int4) or go through text (numeric_float8).
 * Reading the base-10000 digits directly is what makes exact, fast
 * classification possible.  The layout below is the on-disk format (it has
 * to stay readable across pg_upgrade), unchanged since PostgreSQL 9.1 apart
 * from the special values (NaN since long, +/-Infinity since 14), which all
 * share the NUMERIC_SPECIAL flag bits.  Only the macros needed are copied.
 */
#ifndef NUMERIC_LAYOUT_H
#define NUMERIC_LAYOUT_H

#include "bson_compat.h"

#include "utils/numeric.h"

#define BSON_NBASE				10000
#define BSON_DEC_DIGITS			4

typedef int16 BsonNumericDigit;

struct BsonNumericShort
{
	uint16		n_header;
	BsonNumericDigit n_data[FLEXIBLE_ARRAY_MEMBER];
};

struct BsonNumericLong
{
	uint16		n_sign_dscale;
	int16		n_weight;
	BsonNumericDigit n_data[FLEXIBLE_ARRAY_MEMBER];
};

union BsonNumericChoice
{
	uint16		n_header;
	struct BsonNumericLong n_long;
	struct BsonNumericShort n_short;
};

typedef struct BsonNumericData
{
	int32		vl_len_;
	union BsonNumericChoice choice;
} BsonNumericData;

#define BSON_NUMERIC_SIGN_MASK		0xC000
#define BSON_NUMERIC_NEG			0x4000
#define BSON_NUMERIC_SHORT			0x8000
#define BSON_NUMERIC_SPECIAL		0xC000

#define BSON_NUMERIC_SHORT_SIGN_MASK		0x2000
#define BSON_NUMERIC_SHORT_DSCALE_MASK		0x1F80
#define BSON_NUMERIC_SHORT_DSCALE_SHIFT		7
#define BSON_NUMERIC_SHORT_WEIGHT_SIGN_MASK	0x0040
#define BSON_NUMERIC_SHORT_WEIGHT_MASK		0x003F
#define BSON_NUMERIC_DSCALE_MASK			0x3FFF

/* Special values: NaN 0xC000, +Infinity 0xD000, -Infinity 0xF000 (14+) */
#define BSON_NUMERIC_EXT_SIGN_MASK	0xF000
#define BSON_NUMERIC_NAN			0xC000
#define BSON_NUMERIC_PINF			0xD000
#define BSON_NUMERIC_NINF			0xF000

/* The decoded header: what the rest of bson_out works with. */
typedef struct BsonNumericView
{
	const BsonNumericDigit *digits; /* base-10000 digits, most significant first */
	int			ndigits;		/* no leading or trailing zero digits */
	int			weight;			/* value = sum digits[i] * NBASE^(weight - i) */
	int			dscale;			/* decimal digits shown after the point */
	bool		negative;
	uint16		special;		/* 0, or BSON_NUMERIC_NAN / PINF / NINF */
} BsonNumericView;

static inline void
bson_numeric_view(Numeric num, BsonNumericView *v)
{
	const BsonNumericData *n = (const BsonNumericData *) num;
	uint16		header = n->choice.n_header;
	int			hdrsz;

	v->special = 0;
	if ((header & BSON_NUMERIC_SIGN_MASK) == BSON_NUMERIC_SHORT)
	{
		v->negative = (header & BSON_NUMERIC_SHORT_SIGN_MASK) != 0;
		v->dscale = (header & BSON_NUMERIC_SHORT_DSCALE_MASK) >> BSON_NUMERIC_SHORT_DSCALE_SHIFT;
		v->weight = ((header & BSON_NUMERIC_SHORT_WEIGHT_SIGN_MASK) ? ~BSON_NUMERIC_SHORT_WEIGHT_MASK : 0)
			| (header & BSON_NUMERIC_SHORT_WEIGHT_MASK);
		v->digits = n->choice.n_short.n_data;
		hdrsz = VARHDRSZ + sizeof(uint16);
	}
	else if ((header & BSON_NUMERIC_SIGN_MASK) == BSON_NUMERIC_SPECIAL)
	{
		v->special = header & BSON_NUMERIC_EXT_SIGN_MASK;
		if (v->special == 0xE000)	/* not a valid special: treat as NaN */
			v->special = BSON_NUMERIC_NAN;
		v->negative = (v->special == BSON_NUMERIC_NINF);
		v->dscale = 0;
		v->weight = 0;
		v->digits = NULL;
		v->ndigits = 0;
		return;
	}
	else
	{
		v->negative = (header & BSON_NUMERIC_SIGN_MASK) == BSON_NUMERIC_NEG;
		v->dscale = n->choice.n_long.n_sign_dscale & BSON_NUMERIC_DSCALE_MASK;
		v->weight = n->choice.n_long.n_weight;
		v->digits = n->choice.n_long.n_data;
		hdrsz = VARHDRSZ + sizeof(uint16) + sizeof(int16);
	}
	v->ndigits = (VARSIZE(num) - hdrsz) / sizeof(BsonNumericDigit);
}

#endif							/* NUMERIC_LAYOUT_H */
