-- The output plugin's origin option: changes replayed under a replication
-- origin (by a subscription, or by Citus when it moves a shard) are streamed
-- with origin=any, the default without Citus, and left out with
-- origin=none, the default where Citus is loaded (test/citus/stream.sh).
-- The origin is made here by hand, as an apply worker makes one.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_stream_origin;
\c bson_out_stream_origin
CREATE EXTENSION bson_out;
\pset format unaligned

CREATE TABLE orig_t (id int PRIMARY KEY, v text);
SELECT 'slot' FROM pg_create_logical_replication_slot('bson_out_origin', 'bson_out');

INSERT INTO orig_t VALUES (1, 'made here');
SELECT pg_replication_origin_create('bson_out_test_origin') > 0 AS origin_created;
SELECT pg_replication_origin_session_setup('bson_out_test_origin');
-- a transaction replayed under the origin, all of it
BEGIN;
INSERT INTO orig_t VALUES (2, 'replayed');
UPDATE orig_t SET v = 'replayed too' WHERE id = 1;
COMMIT;
SELECT pg_replication_origin_session_reset();
DELETE FROM orig_t WHERE id = 2;

-- op documentKey fullDocument, one line per message; a commit marker as such
CREATE FUNCTION show_events(VARIADIC options text[] DEFAULT '{}') RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT CASE WHEN j ? 'commit' THEN 'commit ' || (j->'commit')::text
		ELSE concat_ws(' ', j->>'operationType', j->'documentKey', j->'fullDocument') END
	FROM pg_logical_slot_peek_binary_changes('bson_out_origin', NULL, NULL, VARIADIC options) c,
		LATERAL (SELECT bson_to_json(c.data)::jsonb) x(j)
$$;

-- without Citus the default is any: every change
SELECT * FROM show_events();
SELECT * FROM show_events('origin', 'any');
-- none: the replayed transaction is not there, nor its commit marker
SELECT * FROM show_events('origin', 'none', 'commit-markers', 'on');
SELECT * FROM show_events('origin', 'any', 'commit-markers', 'on');

-- errors (22023)
\set VERBOSITY default
SELECT * FROM show_events('origin', 'local');
SELECT * FROM show_events('origin', 'none', 'origin', 'any');

SELECT pg_drop_replication_slot('bson_out_origin');
SELECT pg_replication_origin_drop('bson_out_test_origin');
\c :regress_db
DROP DATABASE bson_out_stream_origin;
