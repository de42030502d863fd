-- to_bson scan with :workers parallel workers (0 or 2); the costs are zeroed so
-- that the planner takes the parallel plan (the runner checks it with EXPLAIN).
-- pgbench -n -f bench/pgbench/scan_bson_parallel.sql -D table=medium -D workers=2 -t 5
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = :workers;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(to_bson(doc))) FROM :table;
