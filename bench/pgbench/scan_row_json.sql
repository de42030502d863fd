-- row_to_json's text (row_to_bson's reference): the row as JSON text; the cast
-- json -> text is binary, so octet_length reads the text row_to_json built.
-- pgbench -n -f bench/pgbench/scan_row_json.sql -D table=typed -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(row_to_json(t)::text)) FROM :table t;
