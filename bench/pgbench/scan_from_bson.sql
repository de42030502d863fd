-- from_bson on a bytea column of BSON documents: BSON to jsonb.
-- pg_column_size reads only the result's length word, so the sum costs nothing
-- beyond building the jsonb (the denominators below are consumed the same way).
-- pgbench -n -f bench/pgbench/scan_from_bson.sql -D table=medium_bson -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(pg_column_size(from_bson(b))) FROM :table;
