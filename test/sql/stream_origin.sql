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

-- heartbeats: a transactional message of prefix bson_out.heartbeat is a
-- "heartbeat" event at its commit (its position counted, its commit marker
-- after it); other prefixes and non-transactional messages are nothing;
-- without the option, nothing
SELECT pg_drop_replication_slot('bson_out_origin');
SELECT 'slot' FROM pg_create_logical_replication_slot('bson_out_origin', 'bson_out');
SELECT 'lsn' FROM pg_logical_emit_message(true, 'bson_out.heartbeat', '');
SELECT 'lsn' FROM pg_logical_emit_message(false, 'bson_out.heartbeat', '');
SELECT 'lsn' FROM pg_logical_emit_message(true, 'bson_out.other', 'x');
BEGIN;
INSERT INTO orig_t VALUES (3, 'with a heartbeat');
SELECT 'lsn' FROM pg_logical_emit_message(true, 'bson_out.heartbeat', '');
COMMIT;
SELECT * FROM show_events();
SELECT * FROM show_events('heartbeats', 'on', 'commit-markers', 'on');
-- the heartbeat's head: its token, clusterTime and wallTime as any event's
SELECT j->'_id'->>'_data' ~ '^[0-9A-F]{32}$' AS token, j ? 'clusterTime' AS cluster_time,
	j ? 'wallTime' AS wall_time, j ? 'ns' AS ns, j ? 'txnNumber' AS txn
FROM pg_logical_slot_peek_binary_changes('bson_out_origin', NULL, NULL, 'heartbeats', 'on') c,
	LATERAL (SELECT bson_to_json(c.data)::jsonb) x(j)
WHERE j->>'operationType' = 'heartbeat' LIMIT 1;

-- errors (22023)
\set VERBOSITY default
SELECT * FROM show_events('heartbeats', 'maybe');
SELECT * FROM show_events('origin', 'local');
SELECT * FROM show_events('origin', 'none', 'origin', 'any');

SELECT pg_drop_replication_slot('bson_out_origin');
SELECT pg_replication_origin_drop('bson_out_test_origin');
\c :regress_db
DROP DATABASE bson_out_stream_origin;
