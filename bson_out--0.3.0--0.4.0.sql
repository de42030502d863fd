/* bson_out--0.3.0--0.4.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '0.4.0'" to load this file. \quit

CREATE FUNCTION from_bson(bson bytea) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'from_bson'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION from_bson(bytea) IS
	'the BSON document as a jsonb object, after validating all of it: strings, numbers, booleans, null, documents and arrays as themselves, other BSON types as Extended JSON v2 wrappers ({"$oid": ...}, {"$date": ...}, ...)';

CREATE FUNCTION bson_to_json(bson bytea, canonical boolean DEFAULT false) RETURNS json
	AS 'MODULE_PATHNAME', 'bson_to_json'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION bson_to_json(bytea, boolean) IS
	'the BSON document as MongoDB Extended JSON v2 text, relaxed (or canonical), keys in document order, after validating all of it';

CREATE FUNCTION bson_is_valid(bson bytea) RETURNS boolean
	AS 'MODULE_PATHNAME', 'bson_is_valid'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION bson_is_valid(bytea) IS
	'whether the bytes are exactly one valid BSON document (every rule of the BSON specification, strings valid UTF-8); never raises for bad bytes';

CREATE FUNCTION bson_documents(stream bytea) RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'bson_documents'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;

COMMENT ON FUNCTION bson_documents(bytea) IS
	'the documents of a stream of concatenated BSON documents (a .bson file from mongodump), one row each, each validated; a truncated or invalid document raises an error naming its byte offset';
