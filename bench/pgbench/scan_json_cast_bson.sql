-- the alternative to json_to_bson a user has for a json column: the
-- cast to jsonb (json_out + jsonb_in), then to_bson.
-- pgbench -n -f bench/pgbench/scan_json_cast_bson.sql -D table=medium_json -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(to_bson(doc::jsonb))) FROM :table;
