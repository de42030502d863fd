/*
 * bson_numeric.h
 *		PostgreSQL numeric -> BSON number, exactly.
 */
#ifndef BSON_NUMERIC_H
#define BSON_NUMERIC_H

#include "postgres.h"

#include "utils/numeric.h"

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

/*
 * The JSON-number mapping (README, "Mapping"): integers at display scale 0
 * as int32 or int64 when they fit; everything else as the correctly rounded
 * double; a value whose double would overflow to +/-infinity or underflow to
 * zero as the exact decimal128; if that does not exist either,
 * BSON_NUMBER_UNREPRESENTABLE (the caller raises, naming the path).
 */
extern void bson_number_from_json_numeric(Numeric num, BsonNumber *out);

/*
 * The exact decimal128 of num at its display scale, dropping trailing zeros
 * only as needed to fit 34 digits and the exponent range.  NaN and
 * +/-Infinity map to decimal128's own.  Returns false if no exact decimal128
 * exists.
 */
extern bool bson_decimal128_from_numeric(Numeric num, uint64 *low, uint64 *high);

/*
 * For error messages: num's significant decimal digits and its exponent in
 * scientific notation (1.5e400 has 2 and 400).
 */
extern void bson_numeric_shape(Numeric num, int *significant_digits,
							   int *sci_exponent);

#endif							/* BSON_NUMERIC_H */
