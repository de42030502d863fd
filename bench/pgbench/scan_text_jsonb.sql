-- the reference for from_bson's target: the jsonb column
-- printed to text and parsed back (jsonb_out + textin, then textout + jsonb_in).
-- pgbench -n -f bench/pgbench/scan_text_jsonb.sql -D table=medium -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(pg_column_size(doc::text::jsonb)) FROM :table;
