-- The output plugin's size rule and commit markers.  An event over
-- max-event-size (default 16MB; here 1kB) is cut, as MongoDB's
-- $changeStreamSplitLargeEvent cuts one, between its top-level fields into
-- fragments no larger than the limit, each with its own resume token (the
-- next position in the transaction) and splitEvent {fragment, of}; merged
-- in order they give back the event.  A field too large for any fragment is
-- written whole in a fragment of its own with a warning (unmappable-values
-- fallback, the default) or stops decoding with an error (error).  With
-- commit-markers, each transaction that wrote messages ends with
-- {"commit": <its number of messages>}, at the end of its commit record.
-- The cluster runs with wal_level = logical and bson_out in
-- output_plugin_libraries (scripts/test.sh).
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_split;
\c bson_out_split
CREATE EXTENSION bson_out;
\pset format unaligned

-- a message as a line: its position in the transaction, its size, and its
-- top-level fields in order (values left out: they are long)
CREATE FUNCTION shape(data bytea) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(right(bson_to_json(data)->'_id'->>'_data', 16)::text, '-') || ' ' ||
		octet_length(data) || ' bytes: ' ||
		(SELECT string_agg(k, ', ') FROM json_object_keys(bson_to_json(data)) k) ||
		coalesce(' ' || (bson_to_json(data)->'splitEvent')::text, '') ||
		CASE WHEN bson_to_json(data)->'commit' IS NOT NULL
			 THEN ' ' || (from_bson(data)->>'commit') ELSE '' END
$$;

CREATE TABLE big (id int PRIMARY KEY, a text, b text);
ALTER TABLE big REPLICA IDENTITY FULL;
CREATE TABLE small (id int PRIMARY KEY);
SELECT 'init' FROM pg_create_logical_replication_slot('split', 'bson_out');

-- an insert whose event fits: one message
INSERT INTO big VALUES (1, repeat('a', 400), repeat('b', 300));
-- an update with the old row whole and its image: four fragments
UPDATE big SET a = repeat('c', 450) WHERE id = 1;
-- a transaction of a small event and a split one
BEGIN;
INSERT INTO small VALUES (1);
DELETE FROM big WHERE id = 1;
COMMIT;
-- a transaction of unselected changes only, then an event of one field
-- larger than the limit
INSERT INTO small VALUES (2);
INSERT INTO big VALUES (2, repeat('d', 1500), 'e');

SELECT shape(data) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
	'max-event-size', '1kB', 'full-document-before-change', 'on',
	'exclude-tables', 'public.small');

-- no fragment over the limit but the one of a field alone over it
SELECT count(*) AS messages,
	count(*) FILTER (WHERE octet_length(data) > 1024) AS over_limit,
	count(*) FILTER (WHERE octet_length(data) > 1024 AND
		(bson_to_json(data)->'splitEvent'->>'of')::int > 1 AND
		(SELECT count(*) FROM json_object_keys(bson_to_json(data))) = 3) AS alone_in_fragment
FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '1kB',
	'full-document-before-change', 'on');

-- merged in order, the fragments are the event written whole (the default
-- limit), but for _id, which is the first fragment's
WITH whole AS (
	SELECT row_number() OVER () AS n, from_bson(data) AS doc
	FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
		'full-document-before-change', 'on')
), fragments AS (
	SELECT from_bson(data) AS doc, ordinality AS i
	FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '1kB',
		'full-document-before-change', 'on') WITH ORDINALITY
), numbered AS (
	-- each event's fragments share the number of the event's first fragment
	SELECT doc, i, sum(CASE WHEN coalesce((doc->'splitEvent'->>'fragment')::int, 1) = 1
						THEN 1 ELSE 0 END) OVER (ORDER BY i) AS n
	FROM fragments
), merged AS (
	SELECT n, (SELECT jsonb_object_agg(key, value) FROM numbered m, jsonb_each(m.doc)
			   WHERE m.n = e.n AND key NOT IN ('_id', 'splitEvent')) ||
			  jsonb_build_object('_id', (SELECT doc->'_id' FROM numbered m WHERE m.n = e.n
										 ORDER BY i LIMIT 1)) AS doc
	FROM (SELECT DISTINCT n FROM numbered) e
)
SELECT count(*) AS events,
	count(*) FILTER (WHERE whole.doc = merged.doc) AS merged_equal
FROM whole JOIN merged USING (n);

-- the resume tokens of the messages, fragments included, grow along the stream
SELECT bool_and(token > prev) AS tokens_grow, count(*) AS tokens
FROM (SELECT token, lag(token, 1, '') OVER (ORDER BY i) AS prev
	  FROM (SELECT bson_to_json(data)->'_id'->>'_data' AS token, ordinality AS i
			FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
				'max-event-size', '1kB', 'full-document-before-change', 'on')
			WITH ORDINALITY) m) t;

-- commit markers: one per transaction with messages, counting them, at the
-- end of the commit record (after the commit LSN its events' tokens start with)
SELECT shape(data) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
	'commit-markers', 'on', 'exclude-tables', 'public.big');
SELECT count(*) AS markers,
	bool_and(lsn > (substr(prev_token, 1, 8) || '/' || substr(prev_token, 9, 8))::pg_lsn)
		AS after_commit_start
FROM (SELECT lsn, data, lag(bson_to_json(data)->'_id'->>'_data') OVER (ORDER BY i) AS prev_token
	  FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'commit-markers', 'on',
		  'max-event-size', '1kB') WITH ORDINALITY AS m(lsn, xid, data, i)) t
WHERE octet_length(data) = 21;

-- with unmappable-values error, a field too large for any fragment stops
-- decoding; the error's context names the table, the transaction and its
-- commit's end and how to skip it (what varies masked)
DO $$
DECLARE
	msg text;
	detail text;
	hint text;
	context text;
BEGIN
	PERFORM * FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
		'max-event-size', '1kB', 'unmappable-values', 'error', 'include-tables', 'public.big');
EXCEPTION WHEN program_limit_exceeded THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
		hint = PG_EXCEPTION_HINT, context = PG_EXCEPTION_CONTEXT;
	-- raised again: a decoding function that failed keeps its slot until an
	-- error reaches the top level
	RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded', MESSAGE = msg,
		DETAIL = detail || E'\ndecoding context: ' ||
			regexp_replace(regexp_replace(split_part(context, E'\n', 1),
				'[0-9A-F]+/[0-9A-F]+', '<commit end lsn>'), 'transaction [0-9]+', 'transaction <xid>') ||
			E'\nskip context: ' ||
			regexp_replace(split_part(context, E'\n', 2), '[0-9A-F]+/[0-9A-F]+', '<commit end lsn>'),
		HINT = hint;
END $$;

-- events are held to max-event-size alone: bson_out.max_document_size,
-- the SQL functions' limit, does not apply to any part of them (the key,
-- the values compared for updatedFields)
SET bson_out.max_document_size = 100;
SELECT count(*) AS messages FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL,
	'max-event-size', '1kB', 'full-document-before-change', 'on');
RESET bson_out.max_document_size;

-- the options' values
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '1000');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', 'large');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '3GB');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '1kB', 'max-event-size', '2kB');
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'commit-markers', 'maybe');
-- 16MB is MongoDB's limit, and the default: no event here reaches it
SELECT count(*) FROM pg_logical_slot_peek_binary_changes('split', NULL, NULL, 'max-event-size', '16MB', 'commit-markers', 'off');

SELECT pg_drop_replication_slot('split');
\c :regress_db
DROP DATABASE bson_out_split;
