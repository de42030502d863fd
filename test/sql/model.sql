-- The document model that the change events, the first copy and the export
-- share: bson_document (a table's row as its MongoDB document),
-- bson_collections (the collections a table selection gives) and the
-- output plugin's fullDocument, documentKey and ns for the same rows.
-- In a database of its own, so that bson_collections sees only these tables.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_model;
\c bson_out_model
CREATE EXTENSION bson_out;
\pset format unaligned

-- every key shape
CREATE TABLE single (id int PRIMARY KEY, v text);
CREATE TABLE comp (id int, k int, v text, PRIMARY KEY (id, k));
CREATE TABLE incl (id int, v text, PRIMARY KEY (id) INCLUDE (v));
CREATE TABLE ui (id int PRIMARY KEY, code text NOT NULL, v text);
CREATE UNIQUE INDEX ui_code_idx ON ui (code);
ALTER TABLE ui REPLICA IDENTITY USING INDEX ui_code_idx;
CREATE TABLE fullnokey (a int, b text);
ALTER TABLE fullnokey REPLICA IDENTITY FULL;
CREATE TABLE fullkey (id int PRIMARY KEY, b text);
ALTER TABLE fullkey REPLICA IDENTITY FULL;
CREATE TABLE noid (a int, b text);
CREATE TABLE nothing (id int PRIMARY KEY, b text);
ALTER TABLE nothing REPLICA IDENTITY NOTHING;
CREATE TABLE keyid (_id int PRIMARY KEY, v text);
CREATE TABLE nonkeyid (id int PRIMARY KEY, _id text, v text);
CREATE TABLE noidcol (a int, _id text);
-- a partitioned table: one partition made with it, one attached with its
-- columns in another order and a dropped column, one sub-partitioned
CREATE TABLE dp (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE dp_eu PARTITION OF dp FOR VALUES IN ('eu');
CREATE TABLE dp_us (v text, extra int, region text NOT NULL, id int NOT NULL);
ALTER TABLE dp_us DROP COLUMN extra;
ALTER TABLE dp ATTACH PARTITION dp_us FOR VALUES IN ('us');
CREATE TABLE dp_asia PARTITION OF dp FOR VALUES IN ('jp', 'kr') PARTITION BY LIST (region);
CREATE TABLE dp_jp PARTITION OF dp_asia FOR VALUES IN ('jp');
CREATE SCHEMA sales;
CREATE TABLE sales.orders (id bigint PRIMARY KEY, total numeric);

INSERT INTO single VALUES (1, 'a');
INSERT INTO comp VALUES (1, 2, 'a');
INSERT INTO incl VALUES (1, 'a');
INSERT INTO ui VALUES (1, 'c1', 'a');
INSERT INTO fullnokey VALUES (1, 'a');
INSERT INTO fullkey VALUES (1, 'a');
INSERT INTO noid VALUES (1, 'a');
INSERT INTO nothing VALUES (1, 'a');
INSERT INTO keyid VALUES (1, 'a');
INSERT INTO nonkeyid VALUES (1, 'x', 'a');
INSERT INTO noidcol VALUES (1, 'x');
INSERT INTO dp VALUES (1, 'eu', 'a'), (2, 'us', 'b'), (3, 'jp', 'c');
INSERT INTO sales.orders VALUES (1, 9.99);

-- the document of every shape: _id (the key) first, then the columns
SELECT 'single', bson_to_json(bson_document(t)) FROM single t;
SELECT 'comp', bson_to_json(bson_document(t)) FROM comp t;
SELECT 'incl', bson_to_json(bson_document(t)) FROM incl t;
SELECT 'ui', bson_to_json(bson_document(t)) FROM ui t;
SELECT 'fullnokey', bson_to_json(bson_document(t)) FROM fullnokey t;
SELECT 'fullkey', bson_to_json(bson_document(t)) FROM fullkey t;
SELECT 'noid', bson_to_json(bson_document(t)) FROM noid t;
SELECT 'nothing', bson_to_json(bson_document(t)) FROM nothing t;
SELECT 'keyid', bson_to_json(bson_document(t)) FROM keyid t;
SELECT 'nonkeyid', bson_to_json(bson_document(t)) FROM nonkeyid t;
SELECT 'noidcol', bson_to_json(bson_document(t)) FROM noidcol t;
-- a partitioned table's rows, read through the root or a partition, are
-- the root's documents; with partition_root off, a partition's own
SELECT 'dp', bson_to_json(bson_document(t)) FROM dp t ORDER BY id;
SELECT 'dp_us', bson_to_json(bson_document(t)) FROM dp_us t;
SELECT 'dp_jp', bson_to_json(bson_document(t)) FROM dp_jp t;
SELECT 'dp_us own', bson_to_json(bson_document(t, partition_root => false)) FROM dp_us t;
-- omit_nulls, and the same bytes as the row's own row_to_bson after _id
INSERT INTO single VALUES (2, NULL);
SELECT bson_to_json(bson_document(t, true)) FROM single t WHERE id = 2;
SELECT bson_to_json(bson_document(t)) FROM single t WHERE id = 2;
SELECT substr(bson_document(t), 14) = substr(row_to_bson(t), 5) AS same_columns
FROM single t WHERE id = 1;
-- rows of views and composite types have no identity: no _id
CREATE VIEW single_v AS SELECT * FROM single;
SELECT bson_to_json(bson_document(sv)) FROM single_v sv WHERE id = 1;
-- anything else is not a table's row
SELECT bson_document(ROW(1, 2));
SELECT bson_document(NULL::single) IS NULL AS strict;

-- the collections: every table that holds rows, a partitioned table's
-- partitions under the root's name
SELECT db, coll, relation, source, query FROM bson_collections();
SELECT coll, relation, source FROM bson_collections(partition_root => false);
SELECT db, coll FROM bson_collections(ARRAY['sales.*'], ns_db => 'shop', include_schema => true);
SELECT coll FROM bson_collections(ARRAY['public.single'], include_schema => true);
-- selection: one comma-separated list, blanks, several lists, wildcards,
-- exclusions; a root selects its partitions, also with partition_root off
SELECT coll FROM bson_collections(ARRAY['public.single,public.comp']);
SELECT coll FROM bson_collections(ARRAY['public.single, public.comp']);
SELECT coll FROM bson_collections(ARRAY['public.single', ' public.comp ']);
SELECT coll FROM bson_collections(ARRAY['public.*'], ARRAY['public.*id*, public.full*', 'public.dp']);
SELECT coll FROM bson_collections(ARRAY['*.orders']);
SELECT coll, source FROM bson_collections(ARRAY['public.dp']);
SELECT coll, source FROM bson_collections(ARRAY['public.dp'], partition_root => false);
SELECT coll, source FROM bson_collections(ARRAY['public.dp_asia'], partition_root => false);
SELECT coll, source FROM bson_collections(ARRAY['public.*'], ARRAY['public.dp_us'], partition_root => false)
WHERE coll LIKE 'dp%';
-- a partition is not a collection of its own by default
SELECT coll, source FROM bson_collections(ARRAY['public.dp_us']);
-- a pattern that selects nothing warns; errors in the lists
SELECT count(*) FROM bson_collections(ARRAY['public.single, public.nope', 'nope.*']);
SELECT count(*) FROM bson_collections(ARRAY['single']);
SELECT count(*) FROM bson_collections(ARRAY['public.single,']);
SELECT count(*) FROM bson_collections(NULL, ARRAY['public.']);
SELECT count(*) FROM bson_collections(ARRAY[NULL]);
SELECT count(*) FROM bson_collections(ns_db => '');
SELECT (SELECT count(*) FROM bson_collections(ARRAY[]::text[])) = (SELECT count(*) FROM bson_collections()) AS empty_is_all;
-- each query reads the documents of its source
DO $$
DECLARE
	r record;
	n bigint;
	m bigint;
BEGIN
	FOR r IN SELECT * FROM bson_collections() LOOP
		EXECUTE format('SELECT count(*) FROM (%s) q', r.query) INTO n;
		EXECUTE format('SELECT count(*) FROM ONLY %s', r.source) INTO m;
		IF n <> m THEN
			RAISE NOTICE '% reads % documents of %', r.query, n, m;
		END IF;
	END LOOP;
END $$;

-- metadata.json: the _id index and the unique indexes outside the key, and
-- bson_out: the table (its OID, shown as <relid>) and its documents' shape
CREATE FUNCTION meta(m text) RETURNS text LANGUAGE sql
	AS $$ SELECT regexp_replace(m, '"relid":\{"\$numberLong":"[0-9]+"\}', '"relid":<relid>') $$;
CREATE TABLE uniq (id int PRIMARY KEY, email text UNIQUE, a int NOT NULL, b int NOT NULL,
	c int, "x.y" int UNIQUE, "$z" int UNIQUE, d int NOT NULL UNIQUE DEFERRABLE);
CREATE UNIQUE INDEX uniq_ab ON uniq (a, b DESC);
CREATE UNIQUE INDEX uniq_partial ON uniq (c) WHERE c > 0;
CREATE UNIQUE INDEX uniq_expr ON uniq ((c + 1));
CREATE UNIQUE INDEX uniq_id_c ON uniq (id, c) INCLUDE (email);
SELECT meta(metadata) FROM bson_collections(ARRAY['public.uniq']);
SELECT meta(metadata) FROM bson_collections(ARRAY['public.ui']);
SELECT DISTINCT meta(metadata) FROM bson_collections(ARRAY['public.dp']);
SELECT meta(metadata) FROM bson_collections(ARRAY['public.nonkeyid']);
-- timestamps are cut to milliseconds, so a unique index on one is left out
CREATE TABLE uts (id int PRIMARY KEY, at timestamptz UNIQUE, ats timestamp[] UNIQUE, day date UNIQUE);
SELECT meta(metadata) FROM bson_collections(ARRAY['public.uts']);
DROP TABLE uts;
-- a column named t does not stand for the row in the query
CREATE TABLE inner_t (id int PRIMARY KEY, x text);
CREATE TABLE outer_t (id int PRIMARY KEY, t inner_t);
INSERT INTO outer_t VALUES (1, ROW(7, 'x'));
SELECT query AS q FROM bson_collections(ARRAY['public.outer_t']) \gset
SELECT bson_to_json(d) FROM (:q) s(d);
DROP TABLE outer_t, inner_t;
-- a table the user may not read is an error, not a missing collection
CREATE ROLE bson_out_model_reader;
GRANT SELECT ON single TO bson_out_model_reader;
SET ROLE bson_out_model_reader;
SELECT coll FROM bson_collections(ARRAY['public.single']);
SELECT coll FROM bson_collections(ARRAY['public.single, public.comp']);
RESET ROLE;
REVOKE ALL ON single FROM bson_out_model_reader;
DROP ROLE bson_out_model_reader;
-- a blank escaped by a backslash belongs to the name, one after an escaped
-- backslash does not
SELECT count(*) FROM bson_collections(ARRAY['public.single\ ']);
SELECT coll FROM bson_collections(ARRAY['public.single\\ , public.single ']);
-- the metadata is JSON that names its collection
SELECT count(*) FROM bson_collections() WHERE (metadata::jsonb ->> 'collectionName') <> coll;

-- the change events name, key and write the same documents
SELECT 'init' FROM pg_create_logical_replication_slot('model', 'bson_out');
UPDATE single SET v = 'b';
UPDATE comp SET v = 'b';
UPDATE incl SET v = 'b';
UPDATE ui SET v = 'b';
UPDATE fullnokey SET b = 'b';
UPDATE fullkey SET b = 'b';
UPDATE keyid SET v = 'b';
UPDATE nonkeyid SET v = 'b';
UPDATE dp SET v = v || '!';
UPDATE sales.orders SET total = 1;
-- fullDocument is bson_document's text; documentKey._id its _id; ns the
-- collection's
CREATE TEMP TABLE events AS
SELECT bson_to_json(data)::json AS e FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL);
SELECT e -> 'ns' ->> 'coll' AS coll, e ->> 'operationType' AS op, e -> 'documentKey' AS key,
	e -> 'fullDocument' AS doc FROM events;
CREATE FUNCTION documents(query text) RETURNS SETOF bytea LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE query;
END $$;
-- the documents of the first copy and the export, and the events' own:
-- every update's fullDocument is the copy's document of the row, text for
-- text, its documentKey the document's _id, its ns the collection's
CREATE TEMP TABLE docs AS
SELECT c.db, c.coll, bson_to_json(d)::json AS doc
FROM bson_collections() c, documents(c.query) d;
SELECT count(*) AS updates_and_replaces,
	count(*) FILTER (WHERE EXISTS (SELECT FROM docs d
		WHERE d.doc::text = (e.e -> 'fullDocument')::text)) AS same_document,
	count(*) FILTER (WHERE EXISTS (SELECT FROM docs d
		WHERE (d.doc -> '_id')::text = (e.e -> 'documentKey' -> '_id')::text
		AND d.db = e.e -> 'ns' ->> 'db' AND d.coll = e.e -> 'ns' ->> 'coll'
		AND d.doc::text = (e.e -> 'fullDocument')::text)) AS same_key_and_ns
FROM events e WHERE e.e ->> 'operationType' IN ('update', 'replace');
-- the root's definition is its partitions' model: a column added to the root
-- reaches the events of the partitions' rows at once
ALTER TABLE dp ADD COLUMN w int DEFAULT 7;
UPDATE dp SET v = 'z' WHERE id = 2;
ALTER TABLE dp DROP COLUMN w;
UPDATE dp SET v = 'y' WHERE id = 2;
SELECT bson_to_json(data)::json -> 'fullDocument' AS doc
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL)
WHERE bson_to_json(data)::json -> 'fullDocument' ->> 'v' IN ('z', 'y');
-- a TRUNCATE of the root is one event for its collection
TRUNCATE dp;
SELECT bson_to_json(data)::json -> 'ns' AS ns, bson_to_json(data)::json ->> 'operationType' AS op
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL)
WHERE bson_to_json(data)::json ->> 'operationType' = 'truncate';
-- with partition-root off, the partitions are their own collections and the
-- root none
INSERT INTO dp VALUES (4, 'us', 'd');
TRUNCATE dp;
SELECT bson_to_json(data)::json -> 'ns' ->> 'coll' AS coll, bson_to_json(data)::json ->> 'operationType' AS op,
	bson_to_json(data)::json -> 'documentKey' AS key
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL, 'partition-root', 'off',
	'include-tables', 'public.dp')
WHERE bson_to_json(data)::json ->> 'operationType' IN ('insert', 'truncate');
-- a TRUNCATE of some partitions is not one of the whole collection: the
-- event names them
INSERT INTO dp VALUES (5, 'eu', 'e'), (6, 'jp', 'f');
TRUNCATE dp_eu, dp_asia;
SELECT bson_to_json(data)::json -> 'ns' ->> 'coll' AS coll, bson_to_json(data)::json -> 'partitions' AS partitions
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL)
WHERE bson_to_json(data)::json ->> 'operationType' = 'truncate';
-- a partition whose own replica identity does not log the root's key: its
-- updates and deletes cannot name their document, and say so
CREATE TABLE pk (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE pk_1 PARTITION OF pk FOR VALUES FROM (0) TO (100);
ALTER TABLE pk_1 REPLICA IDENTITY NOTHING;
CREATE TABLE pu (id int, code text NOT NULL, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE UNIQUE INDEX pu_code ON pu (code, region);
ALTER TABLE pu REPLICA IDENTITY USING INDEX pu_code;
CREATE TABLE pu_eu PARTITION OF pu FOR VALUES IN ('eu');
INSERT INTO pk VALUES (1, 'a');
INSERT INTO pu VALUES (1, 'c1', 'eu', 'a');
UPDATE pk SET id = 2;
DELETE FROM pk;
UPDATE pu SET code = 'c2';
DELETE FROM pu;
SELECT bson_to_json(data)::json -> 'ns' ->> 'coll' AS coll, bson_to_json(data)::json ->> 'operationType' AS op,
	bson_to_json(data)::json -> 'documentKey' AS key
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL, 'include-tables', 'public.pk, public.pu');
-- a partition that was not selected is worked out again when its root is
-- renamed into the selection
CREATE TABLE ro (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE ro_1 PARTITION OF ro FOR VALUES FROM (0) TO (100);
SELECT 'init' FROM pg_create_logical_replication_slot('rename', 'bson_out');
INSERT INTO ro VALUES (1, 'a');
ALTER TABLE ro RENAME TO renamed;
INSERT INTO renamed VALUES (2, 'b');
SELECT bson_to_json(data)::json -> 'ns' ->> 'coll' AS coll, bson_to_json(data)::json -> 'documentKey' AS key
FROM pg_logical_slot_get_binary_changes('rename', NULL, NULL, 'include-tables', 'public.renamed');
SELECT 'dropped' FROM pg_drop_replication_slot('rename');
-- the plugin's filters are the same lists
SELECT DISTINCT bson_to_json(data)::json -> 'ns' ->> 'coll' AS coll
FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL,
	'include-tables', 'public.single, public.comp', 'include-tables', 'sales.*')
ORDER BY 1;
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL, 'partition-root', 'maybe');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('model', NULL, NULL, 'include-tables', 'single');
SELECT 'dropped' FROM pg_drop_replication_slot('model');

\c :regress_db
DROP DATABASE bson_out_model;
