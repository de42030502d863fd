/*
 * record_to_bson.h
 *		Typed rows -> BSON: each column as its native BSON type.
 */
#ifndef RECORD_TO_BSON_H
#define RECORD_TO_BSON_H

#include "bson_writer.h"

#include "access/htup.h"

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

#endif							/* RECORD_TO_BSON_H */
