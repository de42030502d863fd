/*
 * partition_filter.h
 *		The documents of some partitions of a collection, as a MongoDB query
 *		filter.
 *
 * A partition streamed as its root holds no collection of its own: its rows
 * are documents of the root's.  A TRUNCATE of some partitions must then
 * remove exactly their documents, and the only thing that tells them from
 * the other partitions' is the partition key, which every document carries
 * as a field.  Each partition's bound, at each level from the partition up
 * to the root, becomes a condition on those fields: list bounds an $in,
 * range bounds $gte/$lt (lexicographic over several columns, MINVALUE and
 * MAXVALUE left open), a default partition the $nor of its siblings'; the
 * filter is the $or of the partitions' conditions, the values encoded as
 * the documents' are.
 *
 * A MongoDB filter compares as BSON does, so it is written only where BSON's
 * order is the partition key's: integer, date, timestamp (bounds whole
 * milliseconds, as documents keep them), boolean and uuid columns, and text
 * under a byte-order collation in a UTF-8 database (any deterministic
 * collation for list bounds), each with its type's default operator class.
 * Hash partitions (a hash has no MongoDB equivalent), key expressions,
 * floating-point and numeric keys (NaN sorts last in PostgreSQL, first in
 * BSON) and the other types get no filter: the caller says so instead.
 */
#ifndef PARTITION_FILTER_H
#define PARTITION_FILTER_H

#include "bson_compat.h"

#include "utils/rel.h"

#include "change_to_bson.h"

/*
 * The filter of the documents of the partitions (leaf partitions streamed
 * as root, whose model is table) as a whole BSON document in palloc'd
 * memory, its length in *len; NULL where no filter expresses them, with the
 * reason in *why (a phrase).
 */
extern char *bson_partitions_filter(const BsonChangeTable *table, Oid root,
									Relation *partitions, int npartitions,
									Size *len, const char **why);

#endif							/* PARTITION_FILTER_H */
