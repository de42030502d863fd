-- The output plugin's schema events (option schema-events): at the commit of
-- a DDL that changes a table's documents, "modify" (its shape or its
-- collection name is new; a table made) or "drop" (the table is gone, or no
-- longer selected); none for a DDL that changes no document.  Without the
-- option, none at all.  The shape is the one bson_collections' metadata
-- gives (bson_out.shape).
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_stream_schema;
\c bson_out_stream_schema
CREATE EXTENSION bson_out;
\pset format unaligned

-- operationType, ns.coll and operationDescription without the OID, or the
-- change's operationType and _id; a commit marker as such
CREATE FUNCTION show(data bytea) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE
		WHEN j ? 'commit' THEN 'commit ' || (j ->> 'commit')
		WHEN j ? 'operationDescription' THEN
			concat_ws(' ', j ->> 'operationType', j -> 'ns' ->> 'coll',
					  (j -> 'operationDescription') - 'relid')
		ELSE concat_ws(' ', j ->> 'operationType', j -> 'ns' ->> 'coll',
					   j -> 'documentKey' -> '_id')
	END
	FROM (SELECT bson_to_json(data)::jsonb AS j) x
$$;

-- a table of before the slot, with no change since: known, its drop told
CREATE TABLE pre (id int PRIMARY KEY);
SELECT 'init' FROM pg_create_logical_replication_slot('schema', 'bson_out');
CREATE TABLE t (id int PRIMARY KEY, a text);
INSERT INTO t VALUES (1, 'x');
ALTER TABLE t ADD COLUMN d text DEFAULT 'q';
CREATE INDEX ON t (a);
COMMENT ON TABLE t IS 'no document changes';
BEGIN;
ALTER TABLE t DROP COLUMN a;
INSERT INTO t VALUES (2, 'z');
COMMIT;
ALTER TABLE t ALTER COLUMN d TYPE varchar(10);
ALTER TABLE t RENAME COLUMN d TO e;
ALTER TABLE t RENAME TO t2;
CREATE TABLE k (id int PRIMARY KEY, u int NOT NULL UNIQUE);
ALTER TABLE k DROP CONSTRAINT k_pkey, ADD PRIMARY KEY (u);
CREATE TYPE pair AS (x int, y int);
CREATE TABLE c (id int PRIMARY KEY, p pair);
ALTER TYPE pair ADD ATTRIBUTE z int;
CREATE TABLE p (id int, part int, PRIMARY KEY (id, part)) PARTITION BY LIST (part);
CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
ALTER TABLE p ADD COLUMN v text;
-- a partition dropped: its rows leave the root's collection, which stays
INSERT INTO p VALUES (1, 1, 'a');
DROP TABLE p1;
-- a table whose rows are not logged has no collection
CREATE UNLOGGED TABLE ul (id int PRIMARY KEY);
ALTER TABLE ul ADD COLUMN v int;
-- a column dropped and added again under its name and type is another
BEGIN;
ALTER TABLE c DROP COLUMN p;
ALTER TABLE c ADD COLUMN p pair;
COMMIT;
DROP TABLE k;
-- a table the filters leave out
CREATE TABLE skipped (id int PRIMARY KEY);
ALTER TABLE skipped ADD COLUMN v int;
INSERT INTO t2 VALUES (3);
DROP TABLE t2;
DROP TABLE pre;
SELECT show(data) FROM pg_logical_slot_peek_binary_changes('schema', NULL, NULL,
	'schema-events', 'on', 'commit-markers', 'on', 'exclude-tables', 'public.skipped');
-- without the option: the changes only
SELECT show(data) FROM pg_logical_slot_get_binary_changes('schema', NULL, NULL);

-- the metadata's shape is the event's
SELECT 'init' FROM pg_create_logical_replication_slot('schema2', 'bson_out');
CREATE TABLE m (id int PRIMARY KEY, n numeric(10,2), c pair);
SELECT (SELECT bson_to_json(data)::jsonb -> 'operationDescription' ->> 'shape'
		FROM pg_logical_slot_get_binary_changes('schema2', NULL, NULL, 'schema-events', 'on')
		LIMIT 1) = (metadata::jsonb -> 'bson_out' ->> 'shape') AS same_shape,
	   metadata::jsonb -> 'bson_out' ->> 'shape' AS shape,
	   (metadata::jsonb -> 'bson_out' -> 'relid' ->> '$numberLong')::oid = 'm'::regclass AS relid
FROM bson_collections(ARRAY['public.m']);
SELECT pg_drop_replication_slot('schema');
SELECT pg_drop_replication_slot('schema2');
\c :regress_db
DROP DATABASE bson_out_stream_schema;
