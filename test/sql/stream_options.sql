-- The output plugin's options: table filters, the options that shape the
-- events, and the errors (22023) for unknown options and bad values, raised
-- when a session starts.  Also: the plugin needs no CREATE EXTENSION, and
-- its output is binary.  Events are shown as in stream_events, the parts
-- that differ from run to run checked and replaced.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_stream_options;
\c bson_out_stream_options
CREATE EXTENSION bson_out;
\pset format unaligned

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
	RETURN CASE WHEN ok THEN '' ELSE 'INCONSISTENT: ' END || s;
END $$;

-- whole events, without consuming them
CREATE FUNCTION peek(VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE sql AS $$
	SELECT show(lsn, xid, data)
	FROM pg_logical_slot_peek_binary_changes('opts', NULL, NULL, VARIADIC options)
$$;

-- which tables' events come through: operationType and ns.coll of each
CREATE FUNCTION selected(VARIADIC options text[] DEFAULT '{}')
RETURNS TABLE (op text, coll text) LANGUAGE sql AS $$
	SELECT from_bson(data)->>'operationType', from_bson(data)->'ns'->>'coll'
	FROM pg_logical_slot_peek_binary_changes('opts', NULL, NULL, VARIADIC options)
$$;

CREATE SCHEMA sales;
CREATE TABLE orders (id int PRIMARY KEY, note text);
CREATE TABLE order_lines (id int PRIMARY KEY);
CREATE TABLE secret (id int PRIMARY KEY);
CREATE TABLE "weird.name" (id int PRIMARY KEY);
CREATE TABLE sales.orders (id int PRIMARY KEY);
CREATE TABLE sales.audit (id int PRIMARY KEY);
SELECT 'init' FROM pg_create_logical_replication_slot('opts', 'bson_out');
INSERT INTO orders VALUES (1, NULL);
INSERT INTO order_lines VALUES (1);
INSERT INTO secret VALUES (1);
INSERT INTO "weird.name" VALUES (1);
INSERT INTO sales.orders VALUES (1);
INSERT INTO sales.audit VALUES (1);
TRUNCATE orders, secret, sales.audit;

-- table filters: schema.table patterns, * for any run of characters, a
-- backslash for a literal dot, comma, star or backslash; exclusions win
SELECT * FROM selected();
SELECT * FROM selected('include-tables', 'public.*');
SELECT * FROM selected('include-tables', 'public.order*', 'exclude-tables', 'public.order_lines');
SELECT * FROM selected('include-tables', '*.orders');
SELECT * FROM selected('exclude-tables', 'public.secret, sales.*');
SELECT * FROM selected('include-tables', 'public.weird\.name');
SELECT * FROM selected('include-tables', ' sales.audit ,public.secret');
-- include-tables and exclude-tables may be repeated: their lists add up
SELECT * FROM selected('include-tables', 'sales.audit', 'include-tables', 'public.orders');
SELECT * FROM selected('include-tables', 'nosuch.*');

-- ns: db is the database's name unless ns-db says otherwise; coll has the
-- schema unless it is public, or always with include-schema
SELECT * FROM peek('include-tables', '*.orders', 'ns-db', 'shop', 'include-schema', 'on');

-- omit-nulls leaves NULL columns out
SELECT * FROM peek('include-tables', 'public.orders', 'omit-nulls', 'on');
SELECT count(*) FROM pg_logical_slot_get_binary_changes('opts', NULL, NULL);

-- full-document off: updates without fullDocument (as MongoDB's change
-- streams by default); inserts keep theirs
INSERT INTO orders VALUES (2, 'two');
UPDATE orders SET note = 'second' WHERE id = 2;
SELECT * FROM peek('full-document', 'off');
SELECT * FROM peek('full-document', 'on');

-- errors, when the session starts: unknown options and bad values
SELECT * FROM peek('full_document', 'off');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('omit-nulls', 'sometimes');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('full-document-before-change', '');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('include-tables', 'orders');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('include-tables', 'public.orders,');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('exclude-tables', 'public.');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('exclude-tables', 'public.orders\');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('include-tables', ',');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('ns-db', '');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT * FROM peek('omit-nulls', 'on', 'omit-nulls', 'off');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- the output is binary: the text functions refuse it
SELECT count(*) FROM pg_logical_slot_peek_changes('opts', NULL, NULL);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) FROM pg_logical_slot_get_binary_changes('opts', NULL, NULL);
SELECT pg_drop_replication_slot('opts');

-- the plugin is the library: a database without the extension streams too
CREATE DATABASE bson_out_no_extension;
\c bson_out_no_extension
SELECT count(*) AS bson_out_extensions FROM pg_extension WHERE extname = 'bson_out';
CREATE TABLE items (id int PRIMARY KEY, price numeric);
SELECT 'init' FROM pg_create_logical_replication_slot('plain', 'bson_out');
INSERT INTO items VALUES (1, 9.99);
SELECT lsn AS item_lsn, xid AS item_xid, encode(data, 'hex') AS item_event
FROM pg_logical_slot_get_binary_changes('plain', NULL, NULL) \gset
SELECT pg_drop_replication_slot('plain');
\c bson_out_stream_options
SELECT show(:'item_lsn', :'item_xid', decode(:'item_event', 'hex'));
\c :regress_db
DROP DATABASE bson_out_no_extension;
DROP DATABASE bson_out_stream_options;
