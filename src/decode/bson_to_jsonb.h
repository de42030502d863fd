/*
 * bson_to_jsonb.h
 *		BSON -> jsonb, for from_bson().
 */
#ifndef BSON_TO_JSONB_H
#define BSON_TO_JSONB_H

#include "bson_compat.h"

#include "utils/jsonb.h"

/*
 * The BSON document doc[0..len) as a jsonb object, after validating all of
 * it (22P03 with the byte offset if it is not valid BSON).
 */
extern Jsonb *bson_document_to_jsonb(const uint8 *doc, size_t len);

#endif							/* BSON_TO_JSONB_H */
