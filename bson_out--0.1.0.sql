/* bson_out--0.1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION bson_out" to load this file. \quit

CREATE FUNCTION to_bson(doc jsonb) RETURNS bytea
	AS 'MODULE_PATHNAME', 'to_bson_jsonb'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION to_bson(jsonb) IS
	'the jsonb object as one BSON document: integers as int32/int64, other numbers as correctly rounded doubles (exact decimal128 beyond double range), keys in jsonb''s stored order';
