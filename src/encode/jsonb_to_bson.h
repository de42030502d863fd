/*
 * jsonb_to_bson.h
 *		jsonb -> BSON: a direct walk of the jsonb container format.
 */
#ifndef JSONB_TO_BSON_H
#define JSONB_TO_BSON_H

#include "bson_writer.h"

#include "utils/jsonb.h"

/*
 * Append the elements of the jsonb object jc to the document the writer has
 * open (the caller opens and closes it, so that other producers can add
 * elements around them).  With extended_json, nested Extended JSON v2
 * wrappers become native BSON types (legacy forms too with
 * legacy_extended_json).  Installs the writer's locate callback for the
 * duration, so errors name the path of the offending value.
 */
extern void bson_append_jsonb_object_elements(BsonWriter *w, const JsonbContainer *jc,
											  bool extended_json,
											  bool legacy_extended_json);

/*
 * A whole jsonb value (object, array or scalar) as the value of an element
 * whose header the caller has written with a deferred type byte: the BSON
 * type goes to *type_at.
 */
extern void bson_write_jsonb_value(BsonWriter *w, char *type_at, const Jsonb *jb);

/* "object", "array", "string", ... for the root of a jsonb value */
extern const char *bson_jsonb_root_type_name(const Jsonb *jb);

/* A rough upper estimate of the BSON size of a jsonb datum of this size. */
#define BSON_ESTIMATE_FROM_JSONB(jsonb_size) \
	((Size) (jsonb_size) + (Size) (jsonb_size) / 4 + 64)

#endif							/* JSONB_TO_BSON_H */
