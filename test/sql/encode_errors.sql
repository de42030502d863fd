-- Every error to_bson raises, with its SQLSTATE.

-- not a document: 22023, naming the jsonb type found
SELECT to_bson('[1, 2]');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('"text"');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('42');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('true');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('null');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('[]');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- the hint works
SELECT encode(to_bson(jsonb_build_object('value', '[1, 2]'::jsonb)), 'hex');

-- a number neither double nor decimal128 can hold exactly: 22003, with the
-- path to it
SELECT to_bson('{"n": 1234567890123456789012345678901234567891e400}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"a": {"b": [1, 2, -1234567890123456789012345678901234567890e-400]}}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"odd key": [1e7000]}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"tiny": 1e-7000}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"e": 1e6145}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- 35 significant digits beyond double range
SELECT to_bson('{"d": 1.2345678901234567890123456789012345e400}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- but 40 digits within double range are simply rounded to the nearest double
SELECT encode(to_bson('{"d": 1234567890123456789012345678901234567890}'), 'hex');

-- nothing half-written: the error leaves no partial result behind
CREATE TEMP TABLE t (id int, doc jsonb);
INSERT INTO t VALUES (1, '{"ok": 1}'), (2, '{"bad": 1e7000}'), (3, '{"ok": 3}');
CREATE TEMP TABLE out AS SELECT id, to_bson(doc) AS b FROM t;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) FROM pg_class WHERE relname = 'out' AND relpersistence = 't';

-- the size guard: bson_out.max_document_size (default: what a bytea can
-- hold, 1 GB) is checked before the buffer grows past it
SET bson_out.max_document_size = '16MB';
SHOW bson_out.max_document_size;
SELECT octet_length(to_bson(jsonb_build_object('s', repeat('x', 16 * 1024 * 1024 - 20)))) AS just_fits;
SELECT octet_length(to_bson(jsonb_build_object('s', repeat('x', 16 * 1024 * 1024))));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SET bson_out.max_document_size = 100;
SELECT octet_length(to_bson(jsonb_build_object('s', repeat('x', 87)))) AS just_fits;
SELECT octet_length(to_bson(jsonb_build_object('s', repeat('x', 88))));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT octet_length(to_bson((SELECT jsonb_object_agg(i, i) FROM generate_series(1, 100) i)));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
RESET bson_out.max_document_size;
SHOW bson_out.max_document_size;
SET bson_out.max_document_size = '2GB';
-- below the range: PostgreSQL's own message, which shows units from 17 on,
-- so only its SQLSTATE here, and the range from pg_settings
\set VERBOSITY sqlstate
SET bson_out.max_document_size = 4;
\set VERBOSITY default
SELECT min_val, max_val, unit FROM pg_settings WHERE name = 'bson_out.max_document_size';
