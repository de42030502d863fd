/* bson_out--1.1.0--1.2.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '1.2.0'" to load this file. \quit

CREATE FUNCTION bson_check_ids(source regclass, partition_root boolean DEFAULT true)
	RETURNS void
	AS 'MODULE_PATHNAME', 'bson_check_ids'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION bson_check_ids(regclass, boolean) IS
	'raises an error when rows of the table, as bson_document makes them, would be documents with the same _id: equal rows of a table whose _id is the whole row (REPLICA IDENTITY FULL without a primary key); one grouped pass over such a table, nothing for a table with a key';

COMMENT ON FUNCTION bson_collections(text[], text[], text, boolean, boolean, boolean) IS
	'the collections that the output plugin''s table filters select, one row per table that holds their rows: the collection''s ns, the query that reads the table''s documents (bson_document) and the collection''s metadata.json for mongorestore; an error when two tables take one collection name, or when a table whose _id is the whole row holds equal rows (bson_check_ids)';
