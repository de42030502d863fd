-- bson_to_json, canonical Extended JSON v2 (for information).
-- pgbench -n -f bench/pgbench/scan_bson_to_json_canonical.sql -D table=medium_bson -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(bson_to_json(b, true)::text)) FROM :table;
