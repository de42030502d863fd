-- The upgrade path: install the first release, update to the current one,
-- and compare with a fresh install of the current one.
DROP EXTENSION bson_out;
CREATE EXTENSION bson_out VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'bson_out';
SELECT p.oid::regprocedure AS function FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'bson_out') ORDER BY 1::text;
SELECT encode(to_bson('{"a": 1}'), 'hex');

ALTER EXTENSION bson_out UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'bson_out';
CREATE TEMP TABLE updated AS
SELECT p.oid::regprocedure::text AS function, p.provolatile, p.proisstrict, p.proparallel,
       pg_get_function_arguments(p.oid) AS args, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'bson_out');
SELECT function, args FROM updated ORDER BY 1;

DROP EXTENSION bson_out;
CREATE EXTENSION bson_out;
CREATE TEMP TABLE fresh AS
SELECT p.oid::regprocedure::text AS function, p.provolatile, p.proisstrict, p.proparallel,
       pg_get_function_arguments(p.oid) AS args, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'bson_out');
-- no difference either way
(SELECT * FROM updated EXCEPT SELECT * FROM fresh)
UNION ALL
(SELECT * FROM fresh EXCEPT SELECT * FROM updated);
