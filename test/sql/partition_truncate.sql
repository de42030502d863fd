-- A TRUNCATE of some partitions of a table streamed as its root: the event
-- names them ("partitions") and gives their documents as a MongoDB filter
-- ("partitionFilter"), made from their bounds up to the root: list bounds
-- $in, range bounds $gte/$lt (lexicographic over several columns, MINVALUE
-- and MAXVALUE left open, NULL keys excluded), a default partition the $nor
-- of its siblings'.  Where no filter can say which documents are theirs
-- (hash partitions, key expressions, types whose order BSON does not share)
-- the event has none and the plugin warns.  The filters' meaning is checked
-- against a MongoDB-protocol server in test/mongo.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_ptrunc;
\c bson_out_ptrunc
CREATE EXTENSION bson_out;
\pset format unaligned

CREATE FUNCTION truncates(slot name) RETURNS TABLE (coll text, partitions json, filter json)
LANGUAGE sql AS $$
	SELECT e -> 'ns' ->> 'coll', e -> 'partitions', e -> 'partitionFilter'
	FROM (SELECT bson_to_json(data)::json AS e
		  FROM pg_logical_slot_get_binary_changes(slot, NULL, NULL)) s
	WHERE e ->> 'operationType' = 'truncate'
$$;

CREATE TABLE li (id int, region text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE li_eu PARTITION OF li FOR VALUES IN ('eu', 'uk');
CREATE TABLE li_asia PARTITION OF li FOR VALUES IN ('jp');
CREATE TABLE li_none PARTITION OF li FOR VALUES IN (NULL, 'x');
CREATE TABLE li_other PARTITION OF li DEFAULT;
CREATE TABLE ra (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE ra_low PARTITION OF ra FOR VALUES FROM (MINVALUE) TO (0);
CREATE TABLE ra_1 PARTITION OF ra FOR VALUES FROM (0) TO (100);
CREATE TABLE ra_2 PARTITION OF ra FOR VALUES FROM (100) TO (200);
CREATE TABLE ra2 (a int, b bigint, v text, PRIMARY KEY (a, b)) PARTITION BY RANGE (a, b);
CREATE TABLE ra2_1 PARTITION OF ra2 FOR VALUES FROM (1, MINVALUE) TO (2, 10);
CREATE TABLE ra2_2 PARTITION OF ra2 FOR VALUES FROM (2, 10) TO (MAXVALUE, MAXVALUE);
CREATE TABLE ra2_d PARTITION OF ra2 DEFAULT;
-- two levels: a year's range, then a list of regions
CREATE TABLE ev (id int, at timestamptz, region text, PRIMARY KEY (id, at, region))
	PARTITION BY RANGE (at);
CREATE TABLE ev_2025 PARTITION OF ev FOR VALUES FROM ('2025-01-01 00:00:00+00') TO ('2026-01-01 00:00:00+00')
	PARTITION BY LIST (region);
CREATE TABLE ev_2025_eu PARTITION OF ev_2025 FOR VALUES IN ('eu');
CREATE TABLE ev_2025_us PARTITION OF ev_2025 FOR VALUES IN ('us');
CREATE TABLE ev_2026 PARTITION OF ev FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2027-01-01 00:00:00+00');
CREATE TABLE tx (name text COLLATE "C" PRIMARY KEY) PARTITION BY RANGE (name);
CREATE TABLE tx_am PARTITION OF tx FOR VALUES FROM ('a') TO ('n');
CREATE TABLE tx_nz PARTITION OF tx FOR VALUES FROM ('n') TO (MAXVALUE);
-- no filter for these
CREATE TABLE ha (id int PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE ha_0 PARTITION OF ha FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ha_1 PARTITION OF ha FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE nu (id numeric PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE nu_1 PARTITION OF nu FOR VALUES FROM (0) TO (1.5);
CREATE TABLE ex (id int, v text) PARTITION BY LIST ((id % 2));
CREATE TABLE ex_0 PARTITION OF ex FOR VALUES IN (0);
CREATE TABLE tl (at timestamp PRIMARY KEY) PARTITION BY LIST (at);
CREATE TABLE tl_1 PARTITION OF tl FOR VALUES IN ('2026-01-01');
CREATE TABLE tm (at timestamp PRIMARY KEY) PARTITION BY RANGE (at);
CREATE TABLE tm_1 PARTITION OF tm FOR VALUES FROM ('2026-01-01 00:00:00.0005') TO ('2026-02-01');

SELECT 'init' FROM pg_create_logical_replication_slot('ptrunc', 'bson_out');
-- list: the partitions' values, NULL among them; the default: none of its
-- siblings'
TRUNCATE li_eu, li_asia;
TRUNCATE li_none;
TRUNCATE li_other;
-- range: one column, an open end, several columns
TRUNCATE ra_1;
TRUNCATE ra_low, ra_2;
TRUNCATE ra2_1;
TRUNCATE ra2_2;
TRUNCATE ra2_d;
-- two levels: the leaf's bound and its parent's; a sub-partitioned
-- partition truncates its leaves
TRUNCATE ev_2025_eu;
TRUNCATE ev_2025;
-- text in byte order
TRUNCATE tx_nz;
SELECT * FROM truncates('ptrunc');
-- the whole table: no partitions, no filter
TRUNCATE li;
SELECT * FROM truncates('ptrunc');
-- none expresses these: the event says which partitions, the plugin warns
TRUNCATE ha_0;
TRUNCATE nu_1;
TRUNCATE ex_0;
TRUNCATE tl_1;
TRUNCATE tm_1;
SELECT * FROM truncates('ptrunc');
-- as their own collections (partition-root off) partitions are whole ones
TRUNCATE ra_1;
SELECT e -> 'ns' ->> 'coll' AS coll, e -> 'partitions' AS partitions, e -> 'partitionFilter' AS filter
FROM (SELECT bson_to_json(data)::json AS e
	  FROM pg_logical_slot_get_binary_changes('ptrunc', NULL, NULL, 'partition-root', 'off')) s
WHERE e ->> 'operationType' = 'truncate';
SELECT pg_drop_replication_slot('ptrunc');
\c :regress_db
DROP DATABASE bson_out_ptrunc;
