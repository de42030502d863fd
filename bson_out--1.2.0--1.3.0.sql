/* bson_out--1.2.0--1.3.0.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION bson_out UPDATE TO '1.3.0'" to load this file. \quit

-- bson_collections gains the column "embedded"
DROP FUNCTION bson_collections(text[], text[], text, boolean, boolean, boolean);

CREATE FUNCTION bson_collections(include_tables text[] DEFAULT NULL,
								 exclude_tables text[] DEFAULT NULL,
								 ns_db text DEFAULT NULL,
								 include_schema boolean DEFAULT false,
								 partition_root boolean DEFAULT true,
								 omit_nulls boolean DEFAULT false,
								 OUT db text, OUT coll text,
								 OUT relation regclass, OUT source regclass,
								 OUT blocks bigint, OUT query text,
								 OUT metadata text, OUT embedded text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'bson_collections'
	LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION bson_collections(text[], text[], text, boolean, boolean, boolean) IS
	'the collections that the output plugin''s table filters select, one row per table that holds their rows: the collection''s ns, the query that reads the table''s documents (bson_document, with the rows embedded in them), the collection''s metadata.json for mongorestore and its embedded fields (JSON); an error when two tables take one collection name, or when a table whose _id is the whole row holds equal rows (bson_check_ids)';

COMMENT ON FUNCTION bson_document(record, boolean, boolean) IS
	'the MongoDB document a table''s row becomes, as the change events'' fullDocument writes it: _id from the replica identity (the key), then the columns as row_to_bson maps them, then the rows embedded in it (bson_embed); a partition''s row as its root table''s';

-- Child tables embedded in their parent's documents: the declarations,
-- kept by pg_dump, readable by logical decoding as of a change, written
-- only by bson_embed and bson_unembed, which check them.
CREATE TABLE bson_embedding (
	child regclass PRIMARY KEY,
	parent regclass NOT NULL,
	foreign_key name NOT NULL,
	field text NOT NULL,
	shape text NOT NULL CHECK (shape IN ('array', 'document')),
	keep_collection boolean NOT NULL,
	columns name[],
	UNIQUE (parent, field)
) WITH (user_catalog_table = true);

SELECT pg_catalog.pg_extension_config_dump('bson_embedding', '');
REVOKE ALL ON bson_embedding FROM PUBLIC;
GRANT SELECT ON bson_embedding TO PUBLIC;

COMMENT ON TABLE bson_embedding IS
	'child tables whose rows are embedded in their parent''s documents (bson_embed, bson_unembed)';

CREATE FUNCTION bson_embed(child regclass, parent regclass, field text,
						   foreign_key name DEFAULT NULL, shape text DEFAULT NULL,
						   keep_collection boolean DEFAULT false,
						   columns name[] DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'bson_embed'
	LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

COMMENT ON FUNCTION bson_embed(regclass, regclass, text, name, text, boolean, name[]) IS
	'embed the rows of child in the documents of parent as field: by the foreign key of child that references parent''s key, as an array ordered by child''s key, or one document where the foreign key is unique (shape); with its columns (default: all but the foreign key''s); its own collection too with keep_collection; checked against the catalogs';

CREATE FUNCTION bson_unembed(child regclass) RETURNS void
	AS 'MODULE_PATHNAME', 'bson_unembed'
	LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION bson_unembed(regclass) IS
	'the rows of child are a collection of their own again';

CREATE FUNCTION bson_embedded_element(rec record, fields bytea[], omit_nulls boolean DEFAULT false,
									  partition_root boolean DEFAULT true)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'bson_embedded_element'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION bson_embedded_element(record, bytea[], boolean, boolean) IS
	'an embedded table''s row as its parent''s document holds it: its declared columns, then its own embedded fields (given, in field order); for the queries of bson_collections';

CREATE FUNCTION bson_embedded_document(rec record, fields bytea[], omit_nulls boolean DEFAULT false,
									   partition_root boolean DEFAULT true)
	RETURNS bytea
	AS 'MODULE_PATHNAME', 'bson_embedded_document'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION bson_embedded_document(record, bytea[], boolean, boolean) IS
	'bson_document of the row with its embedded fields given (in field order); for the queries of bson_collections';

CREATE FUNCTION bson_array_agg_transfn(internal, bytea) RETURNS internal
	AS 'MODULE_PATHNAME', 'bson_array_agg_transfn'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION bson_array_agg_finalfn(internal) RETURNS bytea
	AS 'MODULE_PATHNAME', 'bson_array_agg_finalfn'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE bson_array_agg(bytea) (
	SFUNC = bson_array_agg_transfn,
	STYPE = internal,
	FINALFUNC = bson_array_agg_finalfn
);

COMMENT ON AGGREGATE bson_array_agg(bytea) IS
	'BSON documents as one BSON array, in the aggregate''s order (the bytes of a document whose keys are 0, 1, ...); NULL for no rows';

-- Declarations whose table or foreign key a DROP removed go with them
CREATE FUNCTION bson_embedding_dropped() RETURNS event_trigger
	AS 'MODULE_PATHNAME', 'bson_embedding_dropped'
	LANGUAGE C;

CREATE EVENT TRIGGER bson_embedding_dropped ON sql_drop
	EXECUTE FUNCTION bson_embedding_dropped();
