-- json_to_bson on a json column: JSON text straight to BSON, key
-- order kept, fast path on (the default).
-- pgbench -n -f bench/pgbench/scan_json_bson.sql -D table=medium_json -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(json_to_bson(doc))) FROM :table;
