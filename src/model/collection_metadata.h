/*
 * collection_metadata.h
 *		A collection's <coll>.metadata.json, as mongodump writes it and
 *		mongorestore reads it: the _id index and the table's unique indexes.
 */
#ifndef COLLECTION_METADATA_H
#define COLLECTION_METADATA_H

#include "bson_compat.h"

#include "utils/rel.h"

#include "change_to_bson.h"

/*
 * The metadata of the collection coll whose documents are rel's rows as
 * model (table_model.h) makes them, as canonical Extended JSON text.
 */
extern char *bson_collection_metadata(Relation rel, const BsonChangeTable *model,
									  const char *coll);

#endif							/* COLLECTION_METADATA_H */
