-- to_bson with the short-ASCII-string fast path on (the default).
-- pgbench -n -f bench/pgbench/scan_bson.sql -D table=medium -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(to_bson(doc))) FROM :table;
