-- text: jsonb's own text output, what a client calls before encoding BSON itself.
-- pgbench -n -f bench/pgbench/scan_text.sql -D table=medium -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(doc::text)) FROM :table;
