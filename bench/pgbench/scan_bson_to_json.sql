-- bson_to_json on a bytea column of BSON documents: relaxed
-- Extended JSON v2 text; json -> text is a binary cast, so octet_length reads
-- the length word, as in scan_text.sql (its reference, on medium).
-- pgbench -n -f bench/pgbench/scan_bson_to_json.sql -D table=medium_bson -t 5
SET max_parallel_workers_per_gather = 0;
SELECT sum(octet_length(bson_to_json(b)::text)) FROM :table;
