-- base: detoast only (jsonb_typeof detoasts the whole document): the floor.
-- pgbench -n -f bench/pgbench/scan_base.sql -D table=medium -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(jsonb_typeof(doc))) FROM :table;
