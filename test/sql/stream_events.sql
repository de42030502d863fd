-- bson_out as a logical decoding output plugin: the change events, each
-- shown whole through bson_to_json (canonical Extended JSON, which keeps
-- every BSON type).  What differs from run to run (the commit LSN in the
-- resume token, the commit time in clusterTime and wallTime, the
-- transaction id in txnNumber) is checked, then shown as a placeholder:
-- "show" prefixes an event whose varying parts do not agree with each other
-- or with the row pg_logical_slot_*_binary_changes returns.
-- The cluster runs with wal_level = logical and bson_out in
-- output_plugin_libraries (scripts/test.sh).
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_stream;
\c bson_out_stream
CREATE EXTENSION bson_out;
\pset format unaligned

-- long runs of one letter, as the letter and the run's length
CREATE FUNCTION shorten(s text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	m text;
BEGIN
	FOR m IN SELECT (regexp_matches(s, '(([a-z])\2{99,})', 'g'))[1] LOOP
		s := replace(s, m, left(m, 1) || '*' || length(m));
	END LOOP;
	RETURN s;
END $$;

CREATE FUNCTION show(change_lsn pg_lsn, change_xid xid, data bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	s text;
	m text[];
	ok boolean;
BEGIN
	IF NOT bson_is_valid(data) THEN
		RETURN 'INVALID BSON: ' || encode(data, 'hex');
	END IF;
	s := bson_to_json(data, true)::text;
	m := regexp_match(s, '^\{"_id": \{"_data": "([0-9A-F]{16})([0-9A-F]{16})"\}, "operationType": "[a-z]+", "clusterTime": \{"\$timestamp": \{"t": ([0-9]+), "i": ([0-9]+)\}\}, "wallTime": \{"\$date": \{"\$numberLong": "([0-9]+)"\}\}, ');
	IF m IS NULL THEN
		RETURN 'UNEXPECTED: ' || s;
	END IF;
	-- the token's LSN is the commit's, at or after the change; its
	-- position is clusterTime's increment; clusterTime is wallTime's second;
	-- txnNumber is the transaction's id
	ok := ('x' || m[1])::bit(64)::bigint >= (change_lsn - '0/0')::bigint
		AND ('x' || m[2])::bit(64)::bigint = m[4]::bigint
		AND m[3]::bigint = m[5]::bigint / 1000
		AND s LIKE '%"txnNumber": {"$numberLong": "' || change_xid || '"}}';
	s := regexp_replace(s, '"_data": "[0-9A-F]{16}', '"_data": "<commit lsn>');
	s := regexp_replace(s, '"t": [0-9]+', '"t": <commit second>');
	s := regexp_replace(s, '"wallTime": \{"\$date": \{"\$numberLong": "[0-9]+"\}\}',
						'"wallTime": {"$date": {"$numberLong": "<commit ms>"}}');
	s := regexp_replace(s, '"txnNumber": \{"\$numberLong": "[0-9]+"\}\}$',
						'"txnNumber": {"$numberLong": "<xid>"}}');
	RETURN CASE WHEN ok THEN '' ELSE 'INCONSISTENT: ' END || shorten(s);
END $$;

-- every event of the slot so far, consumed
CREATE FUNCTION events(slot name, VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE sql AS $$
	SELECT show(lsn, xid, data)
	FROM pg_logical_slot_get_binary_changes(slot, NULL, NULL, VARIADIC options)
$$;

-- the same without consuming them
CREATE FUNCTION peek(slot name, VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE sql AS $$
	SELECT show(lsn, xid, data)
	FROM pg_logical_slot_peek_binary_changes(slot, NULL, NULL, VARIADIC options)
$$;

CREATE TABLE orders (id int PRIMARY KEY, item text, qty int, price numeric(10, 2));
SELECT 'init' FROM pg_create_logical_replication_slot('events', 'bson_out');

-- insert, update, delete; the tokens of one transaction share the commit
-- LSN and count its events
INSERT INTO orders VALUES (1, 'pen', 2, 1.50), (2, 'ink', 1, 7.25);
UPDATE orders SET qty = 3 WHERE id = 1;
DELETE FROM orders WHERE id = 2;
-- tokens sort in stream order, as strings
SELECT bool_and(tok > prev) AS tokens_increase, count(*) AS events
FROM (SELECT from_bson(data)->'_id'->>'_data' AS tok,
             lag(from_bson(data)->'_id'->>'_data') OVER (ORDER BY n) AS prev
      FROM pg_logical_slot_peek_binary_changes('events', NULL, NULL) WITH ORDINALITY AS c(lsn, xid, data, n)) t
WHERE prev IS NOT NULL;
SELECT * FROM events('events');

-- a rolled-back transaction and a rolled-back subtransaction emit nothing;
-- what survives keeps counting positions without gaps
BEGIN;
INSERT INTO orders VALUES (10, 'kept', 1, 1);
SAVEPOINT a;
INSERT INTO orders VALUES (11, 'rolled back', 1, 1);
UPDATE orders SET qty = 99 WHERE id = 1;
ROLLBACK TO a;
SAVEPOINT b;
INSERT INTO orders VALUES (12, 'kept too', 1, 1);
RELEASE b;
COMMIT;
BEGIN;
INSERT INTO orders VALUES (13, 'never', 1, 1);
ROLLBACK;
SELECT * FROM events('events');

-- every column type of row_to_bson's table: fullDocument is what
-- row_to_bson writes, with _id first
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE point2 AS (x int, y float8);
CREATE TYPE line2 AS (a point2, b point2, label text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE DOMAIN intlist AS int[];
CREATE TABLE typed (
	id int PRIMARY KEY, b boolean, s smallint, i int, big bigint, r real, d double precision,
	amount numeric(12, 2), t text, vc varchar(10), c char(5), nm name, raw bytea,
	u uuid, day date, ts timestamp, tstz timestamptz, j json, jb jsonb,
	tags text[], grid int[], pt point2, ln line2, p posint, il intlist, m mood,
	iv interval
);
INSERT INTO typed VALUES
	(1, true, -32768, 2147483647, -9223372036854775808, 1.5, -0.1,
	 12.30, 'héllo', 'v', 'ab', 'nm', '\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	 '1970-01-02', '1969-12-31 23:59:59.9995', '2024-01-02 03:04:05.678+00',
	 '{"z": 1, "a": [true, null]}', '{"z": 1, "a": 1.0}', '{a,NULL,c}', '{{1,2},{3,4}}',
	 ROW(1, 2.5), ROW(ROW(1, 1), ROW(2, 2), 'L'), 7, '{1,2}', 'happy', '1 day 02:00'),
	(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- the bytes of row_to_bson's document, without its length and end, are
-- fullDocument's after _id
SELECT tr.id, position(substring(row_to_bson(tr) FROM 5 FOR octet_length(row_to_bson(tr)) - 5)
                       IN c.data) > 0 AS row_to_bson_inside
FROM typed tr
JOIN pg_logical_slot_peek_binary_changes('events', NULL, NULL) c
  ON (from_bson(c.data)->'documentKey'->>'_id')::int = tr.id
ORDER BY tr.id;
SELECT * FROM events('events');

-- TOAST: an update that leaves a TOASTed value as it was does not carry it
-- in the WAL: the column is left out of updatedFields and fullDocument is
-- left out, never a NULL or an old value in their place
CREATE TABLE docs (id int PRIMARY KEY, n int, body text);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO docs VALUES (1, 1, repeat('a', 3000));
UPDATE docs SET n = 2;
UPDATE docs SET body = repeat('b', 4000);
UPDATE docs SET n = 3, body = body || 'c';
-- a TOASTed key: the WAL logs the old key with every update, unchanged or
-- not, and the new row lacks it; the update keeps its key
CREATE TABLE long_keys (k text PRIMARY KEY, v int);
ALTER TABLE long_keys ALTER COLUMN k SET STORAGE EXTERNAL;
INSERT INTO long_keys VALUES (repeat('k', 2500), 1);
UPDATE long_keys SET v = 2;
SELECT * FROM events('events');

-- a key change is the delete of the old key and the insert of the new row;
-- a TOASTed value the update left unchanged is not in the WAL: the insert
-- names it in unchangedFields (the deleted document has it)
UPDATE orders SET id = 100 WHERE id = 1;
UPDATE docs SET id = 2;
UPDATE docs SET id = 3, body = 'short now';
SELECT * FROM events('events');

-- composite keys: documentKey._id is a document of the key's columns, in
-- the key's order
CREATE TABLE lines (order_id int, line int, sku text, PRIMARY KEY (line, order_id));
INSERT INTO lines VALUES (1, 1, 'x'), (1, 2, 'y');
UPDATE lines SET sku = 'z' WHERE line = 2;
UPDATE lines SET order_id = 2 WHERE line = 1;
DELETE FROM lines;
SELECT * FROM events('events');

-- a unique index as the replica identity
CREATE TABLE people (id int PRIMARY KEY, email text NOT NULL, name text);
CREATE UNIQUE INDEX people_email ON people (email);
ALTER TABLE people REPLICA IDENTITY USING INDEX people_email;
INSERT INTO people VALUES (1, 'a@example.com', 'Ann');
UPDATE people SET name = 'Anne';
UPDATE people SET email = 'anne@example.com';
DELETE FROM people;
SELECT * FROM events('events');

-- no replica identity (no primary key, or REPLICA IDENTITY NOTHING):
-- inserts as usual; updates and deletes without documentKey, with one
-- warning per table and session
CREATE TABLE loose (a int, b text);
CREATE TABLE nothing (id int PRIMARY KEY, b text);
ALTER TABLE nothing REPLICA IDENTITY NOTHING;
INSERT INTO loose VALUES (1, 'x'), (2, 'y');
UPDATE loose SET b = 'z';
DELETE FROM loose;
INSERT INTO nothing VALUES (1, 'x');
UPDATE nothing SET b = 'z';
DELETE FROM nothing;
SELECT * FROM events('events');

-- REPLICA IDENTITY FULL: the old row is known, so updatedFields holds only
-- what changed, fullDocument is there even when a TOASTed value did not
-- change, and fullDocumentBeforeChange comes with the option
CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance numeric, note text);
ALTER TABLE accounts ALTER COLUMN note SET STORAGE EXTERNAL;
ALTER TABLE accounts REPLICA IDENTITY FULL;
INSERT INTO accounts VALUES (1, 'ann', 10.00, repeat('n', 3000));
UPDATE accounts SET balance = 12.50;
UPDATE accounts SET owner = NULL;
UPDATE accounts SET id = 2;
DELETE FROM accounts;
SELECT * FROM peek('events', 'full-document-before-change', 'off');
SELECT * FROM events('events', 'full-document-before-change', 'on');
-- with omit-nulls a column that became NULL is a removed field
INSERT INTO accounts VALUES (3, 'bo', 1, NULL);
UPDATE accounts SET owner = NULL WHERE id = 3;
SELECT * FROM events('events', 'omit-nulls', 'on', 'full-document-before-change', 'on');
-- without the old row, updatedFields has every column of the new row: with
-- omit-nulls, its NULL columns are removed fields
UPDATE orders SET item = NULL WHERE id = 10;
SELECT * FROM events('events', 'omit-nulls', 'on');

-- REPLICA IDENTITY FULL without a primary key: the whole row is the key
CREATE TABLE tags (tag text, weight int);
ALTER TABLE tags REPLICA IDENTITY FULL;
INSERT INTO tags VALUES ('red', 1);
UPDATE tags SET weight = 2;
DELETE FROM tags;
SELECT * FROM events('events');

-- truncate: one event per table, in the command's order
CREATE TABLE t1 (id int PRIMARY KEY);
CREATE TABLE t2 (id int PRIMARY KEY);
CREATE SCHEMA archive;
CREATE TABLE archive.t3 (id int PRIMARY KEY);
INSERT INTO t1 VALUES (1);
TRUNCATE t2, archive.t3, t1;
SELECT * FROM events('events');

-- the row type in force at each change: a column added (with a default
-- for the rows written before), dropped, retyped, and the table renamed, in
-- the middle of the stream and of a transaction
CREATE TABLE evolve (id int PRIMARY KEY, a int);
ALTER TABLE evolve REPLICA IDENTITY FULL;
INSERT INTO evolve VALUES (1, 1);
ALTER TABLE evolve ADD COLUMN b text DEFAULT 'dflt';
INSERT INTO evolve VALUES (2, 2);
UPDATE evolve SET a = 10 WHERE id = 1;
BEGIN;
ALTER TABLE evolve DROP COLUMN a;
INSERT INTO evolve VALUES (3, 'three');
ALTER TABLE evolve ALTER COLUMN b DROP DEFAULT, ALTER COLUMN b TYPE int USING length(b);
INSERT INTO evolve VALUES (4, 44);
UPDATE evolve SET b = 0 WHERE id = 1;
ALTER TABLE evolve RENAME TO evolved;
INSERT INTO evolved VALUES (5, 5);
COMMIT;
-- a composite type used by a column changes too
CREATE TYPE pair AS (x int, y int);
CREATE TABLE shapes (id int PRIMARY KEY, p pair);
INSERT INTO shapes VALUES (1, ROW(1, 2));
ALTER TYPE pair ADD ATTRIBUTE z int;
INSERT INTO shapes VALUES (2, ROW(1, 2, 3));
SELECT * FROM events('events');

-- a column named _id: the key's value where it is the key; left out, with a
-- warning, where it is not
CREATE TABLE mongo_like (_id text PRIMARY KEY, v int);
CREATE TABLE clash (id int PRIMARY KEY, _id text);
INSERT INTO mongo_like VALUES ('k1', 1);
INSERT INTO clash VALUES (1, 'other');
SELECT * FROM events('events');

SELECT pg_drop_replication_slot('events');
\c :regress_db
DROP DATABASE bson_out_stream;
