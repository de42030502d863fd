-- json_to_bson on a json column with the short-ASCII-string fast path off.
-- pgbench -n -f bench/pgbench/scan_json_bson_nofast.sql -D table=medium_json -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = off;
SELECT sum(octet_length(json_to_bson(doc))) FROM :table;
