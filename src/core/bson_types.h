/*
 * bson_types.h
 *		BSON element type codes (bsonspec.org, version 1.1), for the writer
 *		and the reader alike.
 *
 * Plain C: included by the decoder's core, which also builds outside
 * PostgreSQL (fuzz/, test/unit/).
 */
#ifndef BSON_TYPES_H
#define BSON_TYPES_H

enum
{
	BSON_TYPE_DOUBLE = 0x01,
	BSON_TYPE_STRING = 0x02,
	BSON_TYPE_DOCUMENT = 0x03,
	BSON_TYPE_ARRAY = 0x04,
	BSON_TYPE_BINARY = 0x05,
	BSON_TYPE_UNDEFINED = 0x06, /* deprecated */
	BSON_TYPE_OBJECTID = 0x07,
	BSON_TYPE_BOOL = 0x08,
	BSON_TYPE_DATETIME = 0x09,
	BSON_TYPE_NULL = 0x0A,
	BSON_TYPE_REGEX = 0x0B,
	BSON_TYPE_DBPOINTER = 0x0C, /* deprecated */
	BSON_TYPE_CODE = 0x0D,
	BSON_TYPE_SYMBOL = 0x0E,	/* deprecated */
	BSON_TYPE_CODE_W_SCOPE = 0x0F,	/* deprecated */
	BSON_TYPE_INT32 = 0x10,
	BSON_TYPE_TIMESTAMP = 0x11,
	BSON_TYPE_INT64 = 0x12,
	BSON_TYPE_DECIMAL128 = 0x13,
	BSON_TYPE_MAXKEY = 0x7F,
	BSON_TYPE_MINKEY = 0xFF
};

/* The smallest document: its int32 length and the terminating NUL */
#define BSON_MIN_DOCUMENT_SIZE 5

#endif							/* BSON_TYPES_H */
