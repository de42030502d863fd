-- What no collection can hold, refused where collections are named:
-- two tables that take one collection name (a dot in a schema or table
-- name), in bson_collections() and in the output plugin; equal rows of a
-- table whose _id is the whole row (REPLICA IDENTITY FULL without a primary
-- key), refused by bson_collections() and bson_check_ids(), warned of by the
-- output plugin.  In a database of its own, so that bson_collections sees
-- only these tables.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_model_checks;
\c bson_out_model_checks
CREATE EXTENSION bson_out;
\pset format unaligned

-- the events of a slot as ns.coll, operation and documentKey, consumed; an
-- error raised again with its context, whose first line (the table, the
-- transaction and its commit) is masked and whose second (how to skip it)
-- is left out
CREATE FUNCTION events(slot name, VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	code text;
	msg text;
	detail text;
	hint text;
	context text;
BEGIN
	RETURN QUERY
	SELECT (e -> 'ns' ->> 'coll') || ' ' || (e ->> 'operationType') || ' ' ||
		coalesce((e -> 'documentKey')::text, '-')
	FROM (SELECT bson_to_json(data)::json AS e
		  FROM pg_logical_slot_get_binary_changes(slot, NULL, NULL, VARIADIC options)) s;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT,
		context = PG_EXCEPTION_CONTEXT;
	RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg,
		DETAIL = detail || E'\ndecoding context: ' ||
			regexp_replace(regexp_replace(split_part(context, E'\n', 1),
				'[0-9A-F]+/[0-9A-F]+', '<commit end lsn>'), 'transaction [0-9]+', 'transaction <xid>'),
		HINT = hint;
END $$;

-- two tables, one collection name: public."a.b" and a.b
CREATE TABLE "a.b" (id int PRIMARY KEY, v text);
CREATE SCHEMA a;
CREATE TABLE a.b (id int PRIMARY KEY, v text, code text UNIQUE);
INSERT INTO "a.b" VALUES (1, 'public');
INSERT INTO a.b VALUES (1, 'a', 'c1');
SELECT coll, source FROM bson_collections();
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT coll, source FROM bson_collections(ARRAY['public.a\.b, a.b']);
-- the way out: the schema in every name, or one table left out
SELECT coll, source FROM bson_collections(include_schema => true) ORDER BY coll;
SELECT coll, source FROM bson_collections(NULL, ARRAY['public.a\.b']);
SELECT coll, source FROM bson_collections(ARRAY['a.*']);
-- with include-schema, a dot in a schema's name: schema "x.y" table z and
-- schema x table "y.z" are both x.y.z
CREATE SCHEMA "x.y";
CREATE SCHEMA x;
CREATE TABLE "x.y".z (id int PRIMARY KEY);
CREATE TABLE x."y.z" (id int PRIMARY KEY);
SELECT coll, source FROM bson_collections(ARRAY['x*.*'], include_schema => true);
SELECT coll, source FROM bson_collections(ARRAY['x*.*']);
DROP TABLE "x.y".z, x."y.z";
DROP SCHEMA "x.y", x;
-- the partitions of one root are its collection's; streamed as their own
-- collections, a partition can take another table's name
CREATE TABLE pr (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE a.pr_1 PARTITION OF pr FOR VALUES FROM (0) TO (10);
CREATE TABLE "a.pr_1" (id int PRIMARY KEY);
SELECT coll, source FROM bson_collections(ARRAY['public.pr, public.a\.pr_1']) ORDER BY source::text;
SELECT coll, source FROM bson_collections(ARRAY['public.pr, public.a\.pr_1'], partition_root => false);
-- an unlogged table is not streamed nor copied: no rival
DROP TABLE "a.pr_1";
CREATE UNLOGGED TABLE "a.pr_1" (id int PRIMARY KEY);
SELECT coll, source FROM bson_collections(ARRAY['public.pr, public.a\.pr_1'], partition_root => false);
DROP TABLE pr, "a.pr_1";

-- the output plugin: the same error at the first change of either table,
-- with the tables as the change found them; nothing is consumed
SELECT 'init' FROM pg_create_logical_replication_slot('rivals', 'bson_out');
UPDATE a.b SET v = 'a2';
SELECT * FROM events('rivals');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM events('rivals', 'exclude-tables', 'public.a\.b');
UPDATE a.b SET v = 'a3';
INSERT INTO "a.b" VALUES (2, 'public');
SELECT * FROM events('rivals', 'include-schema', 'on');
-- a table dropped and another made under the same collection name later
-- are not rivals: each change is decoded with the tables of its time
DROP TABLE "a.b";
UPDATE a.b SET v = 'a4';
CREATE TABLE "a.b" (id int PRIMARY KEY, v text);
DROP TABLE a.b;
INSERT INTO "a.b" VALUES (3, 'public again');
SELECT * FROM events('rivals');
SELECT 'dropped' FROM pg_drop_replication_slot('rivals');
DROP TABLE "a.b";

-- equal rows of a table whose _id is the whole row: one document per _id
CREATE TABLE rf (a int, b text);
ALTER TABLE rf REPLICA IDENTITY FULL;
INSERT INTO rf VALUES (3, 'dup'), (3, 'dup'), (4, 'one');
SELECT coll FROM bson_collections(ARRAY['public.rf']);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT bson_check_ids('rf');
-- three equal rows and another pair: how many, and one of them
INSERT INTO rf VALUES (3, 'dup'), (5, NULL), (5, NULL);
SELECT bson_check_ids('rf');
-- rows PostgreSQL tells apart whose _id is the same, byte for byte:
-- timestamps are cut to milliseconds
CREATE TABLE rts (at timestamptz);
ALTER TABLE rts REPLICA IDENTITY FULL;
INSERT INTO rts VALUES ('2024-01-01 00:00:00.000100+00'), ('2024-01-01 00:00:00.000200+00');
SELECT bson_check_ids('rts');
-- distinct rows pass; a table with a key is not read for this
DELETE FROM rf WHERE ctid NOT IN (SELECT min(ctid) FROM rf GROUP BY a, b);
SELECT bson_check_ids('rf');
SELECT coll, blocks FROM bson_collections(ARRAY['public.rf']);
CREATE TABLE rk (a int PRIMARY KEY, b text);
ALTER TABLE rk REPLICA IDENTITY FULL;
INSERT INTO rk VALUES (1, 'x');
SELECT bson_check_ids('rk');
-- views and tables without an identity have no _id
CREATE VIEW rfv AS SELECT * FROM rts;
SELECT bson_check_ids('rfv');
CREATE TABLE rn (a int);
INSERT INTO rn VALUES (1), (1);
SELECT bson_check_ids('rn');
SELECT coll FROM bson_collections(ARRAY['public.rn']);
-- a partitioned root: its partitions' rows are one collection's, named by
-- the root; a partition read alone is read as the root's (equal rows are
-- always in one partition: they have one partition key)
CREATE TABLE pf (a int, b text) PARTITION BY LIST (b);
ALTER TABLE pf REPLICA IDENTITY FULL;
CREATE TABLE pf_x PARTITION OF pf FOR VALUES IN ('x');
CREATE TABLE pf_y PARTITION OF pf FOR VALUES IN ('y', 'z');
INSERT INTO pf VALUES (1, 'x'), (1, 'y'), (2, 'y');
SELECT bson_check_ids('pf');
SELECT coll, source FROM bson_collections(ARRAY['public.pf']) ORDER BY source::text;
INSERT INTO pf VALUES (1, 'x');
SELECT coll FROM bson_collections(ARRAY['public.pf']);
SELECT bson_check_ids('pf');
SELECT bson_check_ids('pf_x');
SELECT bson_check_ids('pf_y');
-- streamed as their own collections, the partitions' identity is their
-- own: without a key, no _id
SELECT coll, source FROM bson_collections(ARRAY['public.pf'], partition_root => false) ORDER BY coll;
SELECT bson_check_ids('pf_x', false);
DROP TABLE pf;
DROP VIEW rfv;
DROP TABLE rts, rk, rn;

-- the output plugin warns once per table and session that equal rows are
-- one document; not for a table with a key
SELECT 'init' FROM pg_create_logical_replication_slot('whole', 'bson_out');
INSERT INTO rf VALUES (6, 'six'), (6, 'six');
UPDATE rf SET b = 'seven' WHERE a = 4;
CREATE TABLE keyed (id int PRIMARY KEY);
INSERT INTO keyed VALUES (1);
SELECT * FROM events('whole');
SELECT 'dropped' FROM pg_drop_replication_slot('whole');

\c :regress_db
DROP DATABASE bson_out_model_checks;
