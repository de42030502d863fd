-- per call, informational: as call_text.sql but returning only the length.
-- pgbench -n -M prepared -f bench/pgbench/call_text_len.sql -D nrows=200000 -T 10
\set id random(1, :nrows)
SELECT octet_length(doc::text) FROM medium WHERE id = :id;
