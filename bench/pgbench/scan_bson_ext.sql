-- to_bson with Extended JSON v2 wrappers turned into native BSON types
--; compare with scan_bson.sql on the same table, which writes the
-- wrappers as plain sub-documents.
-- pgbench -n -f bench/pgbench/scan_bson_ext.sql -D table=medium_ext -t 5
SET max_parallel_workers_per_gather = 0;
SET bson_out.ascii_fast_path = on;
SELECT sum(octet_length(to_bson(doc, true))) FROM :table;
