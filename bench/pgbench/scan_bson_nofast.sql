-- to_bson with the short-ASCII-string fast path off.
-- pgbench -n -f bench/pgbench/scan_bson_nofast.sql -D table=medium -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = off;
SELECT sum(octet_length(to_bson(doc))) FROM :table;
