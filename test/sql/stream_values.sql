-- The output plugin and values without a BSON mapping (the option
-- unmappable-values): by default (fallback) an infinite date or timestamp
-- becomes the latest / earliest datetime drivers decode
-- (9999-12-31T23:59:59.999Z = 253402300799999 ms and
-- 0001-01-01T00:00:00.000Z = -62135596800000 ms) and a numeric with no exact
-- decimal128 the string of its digits, with a warning once per table and
-- column; with error, decoding stops at the change with an error that names
-- the table, the column, the transaction and the end of its commit, its own
-- hint (set unmappable-values to fallback, ...) kept, and a line of its
-- context that skips that transaction.  What differs from run to run (commit
-- LSNs, times, transaction ids) is checked, then shown as a placeholder.
-- The cluster runs with wal_level = logical and bson_out in
-- output_plugin_libraries (scripts/test.sh).
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_values;
\c bson_out_values
CREATE EXTENSION bson_out;
\pset format unaligned

-- an event as canonical Extended JSON, its varying parts masked
CREATE FUNCTION show(data bytea) RETURNS text LANGUAGE sql AS $$
	SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(
		bson_to_json(data, true)::text,
		'"_data": "[0-9A-F]{16}', '"_data": "<commit lsn>'),
		'"t": [0-9]+', '"t": <commit second>'),
		'"wallTime": \{"\$date": \{"\$numberLong": "[0-9]+"\}\}',
		'"wallTime": {"$date": {"$numberLong": "<commit ms>"}}'),
		'"txnNumber": \{"\$numberLong": "[0-9]+"\}\}$', '"txnNumber": {"$numberLong": "<xid>"}}')
$$;

-- every event of the slot so far, consumed
CREATE FUNCTION events(slot name, VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE sql AS $$
	SELECT show(data) FROM pg_logical_slot_get_binary_changes(slot, NULL, NULL, VARIADIC options)
$$;

-- the same without consuming them
CREATE FUNCTION peek(slot name, VARIADIC options text[] DEFAULT '{}')
RETURNS SETOF text LANGUAGE sql AS $$
	SELECT show(data) FROM pg_logical_slot_peek_binary_changes(slot, NULL, NULL, VARIADIC options)
$$;

-- The error that stops decoding, raised again with what varies masked.
-- The transaction id must be xid, and the commit's end must lie after
-- before (an LSN taken inside the transaction) and not after after (one
-- taken once it committed); the context's second line, the command that
-- skips the transaction, must name that LSN.  The end LSN is kept in the
-- sequence hinted_lsn (sequences ignore rollbacks) for the test to run that
-- command.  The
-- error is raised again, not returned: a decoding function that fails in a
-- subtransaction keeps its slot until an error reaches the top level
-- (PostgreSQL's rule).
CREATE SEQUENCE hinted_lsn MINVALUE 0;
CREATE FUNCTION decode_error(slot name, xid text, before pg_lsn, after pg_lsn,
							 VARIADIC options text[] DEFAULT '{}')
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	code text;
	msg text;
	detail text;
	hint text;
	context text;
	skip text;
	end_lsn text;
BEGIN
	PERFORM * FROM pg_logical_slot_peek_binary_changes(slot, NULL, NULL, VARIADIC options);
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT,
		context = PG_EXCEPTION_CONTEXT;
	skip := split_part(context, E'\n', 2);
	context := split_part(context, E'\n', 1);
	end_lsn := substring(context FROM 'whose commit ends at ([0-9A-F]+/[0-9A-F]+)$');
	PERFORM setval('hinted_lsn', (end_lsn::pg_lsn - '0/0')::bigint);
	RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg,
		DETAIL = detail || E'\ndecoding context: ' ||
			replace(replace(context, 'transaction ' || xid || ',', 'transaction <xid>,'),
					end_lsn, '<commit end lsn>') ||
			E'\nskip context: ' || replace(skip, end_lsn, '<commit end lsn>') ||
			E'\ncommit end within the transaction''s commit: ' ||
			(end_lsn::pg_lsn > before AND end_lsn::pg_lsn <= after),
		HINT = hint;
END $$;

CREATE TYPE span AS (valid_from date, valid_to timestamptz, amount numeric);
CREATE TABLE vals (id int PRIMARY KEY, d date, ts timestamp, tstz timestamptz,
				   n numeric, stamps timestamptz[], s span);
CREATE TABLE other (id int PRIMARY KEY, ts timestamptz);
SELECT 'init' FROM pg_create_logical_replication_slot('vals', 'bson_out');

-- the default, fallback: both infinities in every datetime type, at the top,
-- in arrays and in composites; numerics of 35 to 1000 digits; NaN stays
-- decimal128's.  One warning per table and column, however many values.
INSERT INTO vals VALUES
	(1, 'infinity', 'infinity', 'infinity', 1234567890123456789012345678901234567.5,
	 ARRAY['2024-01-01', 'infinity', '-infinity']::timestamptz[],
	 ROW('-infinity', 'infinity', 12345678901234567890123456789012345)),
	(2, '-infinity', '-infinity', '-infinity', 'NaN', '{}', ROW('2024-01-01', NULL, 1.5)),
	(3, '2024-01-01', '2024-01-01 10:00', '2024-01-01 10:00+00', 12.30, NULL, NULL);
UPDATE vals SET n = -0.12345678901234567890123456789012345 WHERE id = 3;
INSERT INTO other VALUES (1, 'infinity'), (2, '-infinity');
SELECT * FROM events('vals');

-- wide numerics keep every digit, as their text
INSERT INTO vals (id, n) VALUES
	(4, repeat('9', 100)::numeric),
	(5, ('1' || repeat('0', 998) || '1')::numeric),
	(6, ('0.' || repeat('3', 1000))::numeric),
	(7, ('1' || repeat('0', 6145))::numeric),
	(8, 1234567890123456789012345678901234);
SELECT v.id, jsonb_typeof(e.doc->'n') AS json_type,
	   CASE jsonb_typeof(e.doc->'n') WHEN 'string' THEN e.doc->>'n'
	   ELSE e.doc->'n'->>'$numberDecimal' END = v.n::text AS same_text,
	   length(v.n::text) AS length
FROM (SELECT from_bson(data)->'fullDocument' AS doc
	  FROM pg_logical_slot_get_binary_changes('vals', NULL, NULL)) e
JOIN vals v ON v.id = (e.doc->>'id')::int
ORDER BY v.id;

-- error: a transaction before the poison one, the poison one, one after
INSERT INTO vals (id, ts) VALUES (10, '2024-01-01');
BEGIN;
INSERT INTO vals (id, tstz) VALUES (11, 'infinity');
SELECT xid(pg_current_xact_id())::text AS poison_xid, pg_current_wal_insert_lsn() AS before \gset
COMMIT;
SELECT pg_current_wal_insert_lsn() AS after \gset
INSERT INTO vals (id, ts) VALUES (12, '2024-01-02');
-- the default streams all three
SELECT * FROM peek('vals');
-- error stops at the poison one, naming it, as often as it is asked
SELECT decode_error('vals', :'poison_xid', :'before', :'after', 'unmappable-values', 'error');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT decode_error('vals', :'poison_xid', :'before', :'after', 'unmappable-values', 'error');
-- as the context says: first receive what came before (one transaction here),
-- then skip the poison one with the context's command, at the LSN it names;
-- the next transaction follows
SELECT show(data) FROM pg_logical_slot_get_binary_changes('vals', NULL, 1, 'unmappable-values', 'error');
SELECT slot_name FROM pg_replication_slot_advance('vals',
	(to_hex(currval('hinted_lsn') >> 32) || '/' || to_hex(currval('hinted_lsn') & 4294967295))::pg_lsn);
SELECT * FROM events('vals', 'unmappable-values', 'error');

-- the same for a numeric, in a composite
BEGIN;
INSERT INTO vals (id, s) VALUES (13, ROW(NULL, NULL, 1234567890123456789012345678901234567.5));
SELECT xid(pg_current_xact_id())::text AS poison_xid, pg_current_wal_insert_lsn() AS before \gset
COMMIT;
SELECT pg_current_wal_insert_lsn() AS after \gset
SELECT decode_error('vals', :'poison_xid', :'before', :'after', 'unmappable-values', 'error');

-- events are held to max-event-size (stream_split), not to
-- bson_out.max_document_size: a setting for the SQL functions does not stop
-- the stream
SET bson_out.max_document_size = 100;
SELECT count(*) AS messages, max(octet_length(data)) > 100 AS over_100_bytes
FROM pg_logical_slot_peek_binary_changes('vals', NULL, NULL);
RESET bson_out.max_document_size;
SELECT * FROM events('vals');

-- the option's values
SELECT * FROM peek('vals', 'unmappable-values', 'lossy');
SELECT * FROM peek('vals', 'unmappable-values', 'error', 'unmappable-values', 'fallback');

SELECT pg_drop_replication_slot('vals');
\c :regress_db
DROP DATABASE bson_out_values;
