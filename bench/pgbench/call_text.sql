-- per call: the same document as jsonb's text output.
-- pgbench -n -M prepared -f bench/pgbench/call_text.sql -D nrows=200000 -T 10
\set id random(1, :nrows)
SELECT doc::text FROM medium WHERE id = :id;
