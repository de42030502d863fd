/*
 * record_to_bson.h
 *		Typed rows -> BSON: each column as its native BSON type.
 */
#ifndef RECORD_TO_BSON_H
#define RECORD_TO_BSON_H

#include "bson_writer.h"

#include "access/htup.h"
#include "access/tupdesc.h"

/*
 * What a row's type becomes, worked out once per query (from the catalogs)
 * and kept in fn_extra: opaque here.
 */
typedef struct BsonRecordCache BsonRecordCache;

/*
 * What becomes of a value that has no BSON mapping: an infinite date or
 * timestamp, a numeric with no exact decimal128.  The SQL functions take it
 * from bson_out.unmappable_values (default error), the output plugin from
 * its option unmappable-values (default fallback): a stream must not stop
 * for good at one value.
 */
typedef enum BsonUnmappable
{
	BSON_UNMAPPABLE_ERROR,		/* raise an error naming the value */
	BSON_UNMAPPABLE_FALLBACK	/* write it losslessly, and warn once per
								 * column */
} BsonUnmappable;

/* bson_out.unmappable_values, defined in bson_out.c */
extern int	bson_unmappable_values;

/*
 * The fallback datetimes of +infinity and -infinity: the latest and the
 * earliest instant that both pymongo (years 1 to 9999, Python's datetime)
 * and js-bson (Date: +-8.64e15 ms) decode, 9999-12-31T23:59:59.999Z and
 * 0001-01-01T00:00:00.000Z.  Beyond them pymongo refuses the document
 * ("date value out of range"), which is also true of BSON's int64 extremes,
 * where js-bson gives an invalid Date as well.
 */
#define BSON_DATETIME_INFINITY_MS		INT64CONST(253402300799999)
#define BSON_DATETIME_MINUS_INFINITY_MS	INT64CONST(-62135596800000)
#define BSON_DATETIME_INFINITY_TEXT		"9999-12-31T23:59:59.999Z"
#define BSON_DATETIME_MINUS_INFINITY_TEXT "0001-01-01T00:00:00.000Z"

/* How the values of a row are written */
typedef struct BsonRecordOptions
{
	bool		omit_nulls;		/* NULL fields left out, at any depth */
	BsonUnmappable unmappable;
	const char *policy_name;	/* the setting or option that chose
								 * unmappable, for messages */
	const char *table;			/* the table the row is of, for messages, or
								 * NULL */
} BsonRecordOptions;

/*
 * The cache for rows of type (typid, typmod): found in the chain that starts
 * at cache (NULL at first), or made in mcxt and put at its front.  Returns
 * the new start of the chain, whose first entry is the one for this type.
 */
extern BsonRecordCache *bson_record_cache(BsonRecordCache *cache, Oid typid,
										  int32 typmod, MemoryContext mcxt);

/*
 * Append the columns of the row to the document the writer has open, in
 * column order, dropped columns skipped; NULL columns as BSON null, or left
 * out with omit_nulls.
 */
extern void bson_append_record_fields(BsonWriter *w, BsonRecordCache *cache,
									  HeapTupleHeader row,
									  const BsonRecordOptions *opts);

/*
 * The cache for rows of tupdesc, as a relation has it (logical decoding
 * reads rows under the catalog of their time, not the current one); made in
 * mcxt, which it keeps until mcxt goes.
 */
extern BsonRecordCache *bson_record_cache_for_tupdesc(TupleDesc tupdesc,
													  MemoryContext mcxt);

/*
 * Is part of the mapping taken from a named row type used by a column (its
 * definition can change without the cached row type changing)?
 */
extern bool bson_record_cache_has_composites(const BsonRecordCache *cache);

/*
 * One column (0-based, not dropped) as one element: under key, or under the
 * column's name when key is NULL; NULL as BSON null.  Errors name the
 * column.
 */
extern void bson_append_record_column(BsonWriter *w, BsonRecordCache *cache,
									  int column, const char *key, int keylen,
									  Datum value, bool isnull,
									  const BsonRecordOptions *opts);

#endif							/* RECORD_TO_BSON_H */
