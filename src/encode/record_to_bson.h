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
									  HeapTupleHeader row, bool omit_nulls);

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
									  bool omit_nulls);

#endif							/* RECORD_TO_BSON_H */
