-- per call: one document by primary key, encoded as BSON.
-- pgbench -n -M prepared -f bench/pgbench/call_bson.sql -D nrows=200000 -T 10
\set id random(1, :nrows)
SELECT to_bson(doc) FROM medium WHERE id = :id;
