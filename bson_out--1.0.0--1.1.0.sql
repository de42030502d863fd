/* bson_out--1.0.0--1.1.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '1.1.0'" to load this file. \quit

CREATE FUNCTION bson_document(rec record, omit_nulls boolean DEFAULT false,
							  partition_root boolean DEFAULT true) RETURNS bytea
	AS 'MODULE_PATHNAME', 'bson_document'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION bson_document(record, boolean, boolean) IS
	'the MongoDB document a table''s row becomes, as the change events'' fullDocument writes it: _id from the replica identity (the key), then the columns as row_to_bson maps them; a partition''s row as its root table''s';

CREATE FUNCTION bson_collections(include_tables text[] DEFAULT NULL,
								 exclude_tables text[] DEFAULT NULL,
								 ns_db text DEFAULT NULL,
								 include_schema boolean DEFAULT false,
								 partition_root boolean DEFAULT true,
								 omit_nulls boolean DEFAULT false,
								 OUT db text, OUT coll text,
								 OUT relation regclass, OUT source regclass,
								 OUT blocks bigint, OUT query text,
								 OUT metadata text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'bson_collections'
	LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION bson_collections(text[], text[], text, boolean, boolean, boolean) IS
	'the collections that the output plugin''s table filters select, one row per table that holds their rows: the collection''s ns, the query that reads the table''s documents (bson_document) and the collection''s metadata.json for mongorestore';
