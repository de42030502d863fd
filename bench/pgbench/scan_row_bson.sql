-- row_to_bson on a table of typed columns: the whole row as one
-- BSON document, every column as its native BSON type.
-- pgbench -n -f bench/pgbench/scan_row_bson.sql -D table=typed -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(row_to_bson(t))) FROM :table t;
