-- Runs in a SQL_ASCII database (make installcheck-encodings): bytes above
-- 0x7f have no declared encoding, so they are passed through only when they
-- already form valid UTF-8; otherwise 22021, naming the key or value.
SELECT getdatabaseencoding() <> 'SQL_ASCII' AS skip_test \gset
\if :skip_test
\quit
\endif

-- valid UTF-8 (c3 a9 is e-acute; f0 9f 98 80 an emoji) passes through
SELECT encode(to_bson(jsonb_build_object(E'caf\xc3\xa9', E'\xf0\x9f\x98\x80')), 'hex');
SELECT encode(to_bson(jsonb_build_object('ascii', 'plain')), 'hex');

-- a LATIN1 byte is not UTF-8: in a value
SELECT to_bson(jsonb_build_object('name', E'caf\xe9'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- in a key, nested, with the fast path off too
SELECT to_bson(jsonb_build_object('a', jsonb_build_array(1, jsonb_build_object(E'k\xe9y', 1))));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SET bson_out.ascii_fast_path = off;
SELECT to_bson(jsonb_build_object('a', jsonb_build_array(1, jsonb_build_object(E'k\xe9y', 1))));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
RESET bson_out.ascii_fast_path;
-- a truncated sequence at the end of a long value, and an overlong encoding
SELECT to_bson(jsonb_build_object('long', repeat('x', 40) || E'\xe6\x9d'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson(jsonb_build_object('overlong', E'\xc0\xaf'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- a UTF-16 surrogate written as UTF-8 bytes is not valid UTF-8 either
SELECT to_bson(jsonb_build_object('surrogate', E'\xed\xa0\x80'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- json_to_bson: \u escapes become UTF-8; raw bytes must already be UTF-8
SELECT encode(json_to_bson('{"s": "\u00e9\u6771\ud83d\ude00"}'), 'hex');
SELECT encode(json_to_bson(E'{"s": "\xc3\xa9"}'), 'hex');
SELECT json_to_bson(E'{"s": "caf\xe9"}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- row_to_bson: the error names the column
SELECT row_to_bson(t) FROM (SELECT 1 AS id, ROW(E'caf\xe9'::text) AS nested) t;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- reading back: SQL_ASCII takes the UTF-8 bytes as they are
SELECT convert_to(from_bson('\x13000000026b000700000078f09f9880790000'::bytea)->>'k', 'SQL_ASCII') AS utf8_bytes;
SELECT convert_to(bson_to_json('\x13000000026b000700000078f09f9880790000'::bytea)::text, 'SQL_ASCII') AS json_bytes;
SELECT from_bson(to_bson(E'{"k": "\xc3\xa9"}'::jsonb)) = E'{"k": "\xc3\xa9"}'::jsonb AS round_trip;
