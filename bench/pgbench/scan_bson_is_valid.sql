-- bson_is_valid on a bytea column of BSON documents: the validation
-- alone, every rule of the specification, no output built.
-- pgbench -n -f bench/pgbench/scan_bson_is_valid.sql -D table=medium_bson -t 5
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FILTER (WHERE bson_is_valid(b)) FROM :table;
