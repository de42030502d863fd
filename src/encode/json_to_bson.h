/*
 * json_to_bson.h
 *		JSON text -> BSON in one pass, keys in the order written.
 */
#ifndef JSON_TO_BSON_H
#define JSON_TO_BSON_H

#include "bson_writer.h"

/*
 * Append the members of the JSON object text[0..len) (server encoding) to
 * the document the writer has open.  With extended_json, nested Extended
 * JSON v2 wrappers become native BSON types (legacy forms too with
 * legacy_extended_json).  A top-level value that is not an object raises
 * 22023, invalid JSON 22P02.
 */
extern void bson_append_json_text_object(BsonWriter *w, const char *text, int len,
										 bool extended_json, bool legacy_extended_json);

/*
 * A whole JSON value (object, array or scalar), as the json type's text, as
 * the value of an element whose header the caller has written with a
 * deferred type byte: the BSON type goes to *type_at.  Objects keep their
 * key order.
 */
extern void bson_write_json_value(BsonWriter *w, char *type_at, const char *text, int len);

#endif							/* JSON_TO_BSON_H */
