-- One row of the jsonb -> BSON mapping each, as whole documents in hex:
-- int32 total length, elements (type byte, key, NUL, value), trailing 0x00.

-- the function as declared
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
       p.prorettype::regtype, p.provolatile, p.proisstrict, p.proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
FROM pg_proc p WHERE p.proname = 'to_bson';

-- empty object: 5 bytes
SELECT encode(to_bson('{}'), 'hex');

-- string 0x02: int32 length including NUL, bytes, NUL
SELECT encode(to_bson('{"s": "hi"}'), 'hex');
SELECT encode(to_bson('{"s": ""}'), 'hex');

-- booleans 0x08, null 0x0A
SELECT encode(to_bson('{"t": true, "f": false}'), 'hex');
SELECT encode(to_bson('{"n": null}'), 'hex');

-- int32 0x10, int64 0x12, double 0x01, decimal128 0x13
SELECT encode(to_bson('{"i": 1}'), 'hex');
SELECT encode(to_bson('{"i": 2147483648}'), 'hex');
SELECT encode(to_bson('{"d": 1.0}'), 'hex');
SELECT encode(to_bson('{"d": 1.5}'), 'hex');
SELECT encode(to_bson('{"x": 1e400}'), 'hex');

-- embedded document 0x03 and array 0x04 (keys "0", "1", ...)
SELECT encode(to_bson('{"o": {"a": 1}}'), 'hex');
SELECT encode(to_bson('{"a": [1, "x", true]}'), 'hex');

-- everything at once
SELECT encode(to_bson('{"_id": 7, "name": "Ann", "ok": true, "none": null, "ratio": 0.25, "big": 9007199254740993, "tags": ["a", "b"], "addr": {"city": "Oslo"}}'), 'hex');

-- SQL NULL in, NULL out (STRICT)
SELECT to_bson(NULL) IS NULL AS null_in_null_out;
SELECT to_bson(NULL::jsonb) IS NULL AS null_in_null_out;

-- a JSON null inside is a BSON null, not SQL NULL
SELECT to_bson('{"a": null}') IS NOT NULL AS json_null_is_a_value;

-- works on table data (detoasted, compressed) the same as on literals
CREATE TEMP TABLE docs (id int, doc jsonb);
ALTER TABLE docs ALTER COLUMN doc SET STORAGE EXTENDED;
INSERT INTO docs SELECT 1, jsonb_build_object('k', repeat('abc', 5000), 'n', 42);
SELECT id, octet_length(to_bson(doc)) AS bson_bytes,
       pg_column_size(doc) < octet_length(doc::text) AS stored_compressed,
       to_bson(doc) = to_bson(doc::text::jsonb) AS same_as_literal
FROM docs;
