-- The upgrade path: install the first release, update it to the current
-- one, and compare the result with a fresh install of the current one.
-- While 1.0.0 is the only release the update changes nothing; from the
-- second release on, this walks the whole chain of upgrade scripts.
-- The current version is that of the extension as created (its default
-- version), the first is 1.0.0 (versions before it were never released):
-- pg_available_extensions does not list the extensions that a package build
-- tests through extension_destdir before they are installed.
SELECT extversion AS current FROM pg_extension WHERE extname = 'bson_out' \gset
\set first 1.0.0
SELECT :'first' AS first_release, :'current' AS current_release;

DROP EXTENSION bson_out;
CREATE EXTENSION bson_out VERSION :'first';
SELECT encode(to_bson('{"a": 1}'), 'hex');
-- (quiet: while there is one release, PostgreSQL notes that it is installed)
SET client_min_messages = warning;
ALTER EXTENSION bson_out UPDATE;
RESET client_min_messages;
SELECT extversion = :'current' AS updated_to_current FROM pg_extension WHERE extname = 'bson_out';
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
