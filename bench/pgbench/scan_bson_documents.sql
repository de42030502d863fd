-- bson_documents over one stream of concatenated BSON documents (a
-- .bson file as mongodump writes it), stored uncompressed in a one-row table
-- (s bytea, docs int); every document is validated and returned as a row.
-- pgbench -n -f bench/pgbench/scan_bson_documents.sql -D table=medium_stream -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(d)) FROM bson_documents((SELECT s FROM :table)) d;
