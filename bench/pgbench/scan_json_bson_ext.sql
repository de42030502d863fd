-- json_to_bson with Extended JSON v2 wrappers turned into native BSON types
-- (for information), on a json column.
-- pgbench -n -f bench/pgbench/scan_json_bson_ext.sql -D table=medium_ext_json -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(json_to_bson(doc, true))) FROM :table;
