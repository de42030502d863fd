-- the stricter reference for from_bson: parsing stored JSON text
-- alone (textout + jsonb_in), on a text column holding doc::text.
-- pgbench -n -f bench/pgbench/scan_jsonb_in.sql -D table=medium_text -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(pg_column_size(t::jsonb)) FROM :table;
