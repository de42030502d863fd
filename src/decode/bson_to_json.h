/*
 * bson_to_json.h
 *		BSON -> MongoDB Extended JSON v2 text, for bson_to_json().
 */
#ifndef BSON_TO_JSON_H
#define BSON_TO_JSON_H

#include "bson_compat.h"

/*
 * The BSON document doc[0..len) as Extended JSON v2 text (relaxed, or
 * canonical), after validating all of it (22P03 with the byte offset if it
 * is not valid BSON).  The result is a text datum, valid as json.
 */
extern text *bson_document_to_json(const uint8 *doc, size_t len, bool canonical);

#endif							/* BSON_TO_JSON_H */
