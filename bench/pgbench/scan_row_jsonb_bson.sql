-- the row to BSON without row_to_bson: to_jsonb of the row, then
-- to_bson (timestamps become strings, numerics integers or doubles, uuids strings).
-- pgbench -n -f bench/pgbench/scan_row_jsonb_bson.sql -D table=typed -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(to_bson(to_jsonb(t)))) FROM :table t;
