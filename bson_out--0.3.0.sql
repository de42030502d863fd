/* bson_out--0.3.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION bson_out" to load this file. \quit

CREATE FUNCTION to_bson(doc jsonb) RETURNS bytea
	AS 'MODULE_PATHNAME', 'to_bson_jsonb'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION to_bson(jsonb) IS
	'the jsonb object as one BSON document: integers as int32/int64, other numbers as correctly rounded doubles (exact decimal128 beyond double range), keys in jsonb''s stored order';

CREATE FUNCTION to_bson(doc jsonb, extended_json boolean,
						legacy_extended_json boolean DEFAULT false) RETURNS bytea
	AS 'MODULE_PATHNAME', 'to_bson_jsonb_ext'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION to_bson(jsonb, boolean, boolean) IS
	'the jsonb object as one BSON document; with extended_json, MongoDB Extended JSON v2 wrappers ({"$oid": ...}, {"$date": ...}, ...) become native BSON types, and with legacy_extended_json their legacy forms too';

CREATE FUNCTION json_to_bson(doc json, extended_json boolean DEFAULT false,
							 legacy_extended_json boolean DEFAULT false) RETURNS bytea
	AS 'MODULE_PATHNAME', 'json_to_bson'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION json_to_bson(json, boolean, boolean) IS
	'the JSON text as one BSON document in one pass, keys in the order written (duplicates kept); numbers by their written form; optionally with MongoDB Extended JSON v2 wrappers as native BSON types';

CREATE FUNCTION row_to_bson(rec record, omit_nulls boolean DEFAULT false) RETURNS bytea
	AS 'MODULE_PATHNAME', 'row_to_bson'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION row_to_bson(record, boolean) IS
	'the row as one BSON document, columns in order, each as its native BSON type (timestamps as UTC datetimes, numeric as exact decimal128, uuid and bytea as binary, arrays, composites); with omit_nulls, NULL columns are left out';
