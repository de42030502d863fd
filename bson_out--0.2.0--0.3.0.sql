/* bson_out--0.2.0--0.3.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '0.3.0'" to load this file. \quit

CREATE FUNCTION row_to_bson(rec record, omit_nulls boolean DEFAULT false) RETURNS bytea
	AS 'MODULE_PATHNAME', 'row_to_bson'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION row_to_bson(record, boolean) IS
	'the row as one BSON document, columns in order, each as its native BSON type (timestamps as UTC datetimes, numeric as exact decimal128, uuid and bytea as binary, arrays, composites); with omit_nulls, NULL columns are left out';
