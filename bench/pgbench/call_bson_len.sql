-- per call, informational: as call_bson.sql but returning only the length, so
-- that bytea's hex output (pgbench reads text results) is not part of the cost.
-- pgbench -n -M prepared -f bench/pgbench/call_bson_len.sql -D nrows=200000 -T 10
\set id random(1, :nrows)
SELECT octet_length(to_bson(doc)) FROM medium WHERE id = :id;
