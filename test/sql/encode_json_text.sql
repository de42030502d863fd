-- json_to_bson: JSON text straight to BSON, keys in the order written.

-- an untyped literal still resolves to to_bson(jsonb), without ambiguity
SELECT encode(to_bson('{"b": 1, "a": 2}'), 'hex');
-- json_to_bson keeps the written order; to_bson(jsonb) shows jsonb's
SELECT encode(json_to_bson('{"name": "x", "_id": 1, "z": 2}'), 'hex');
SELECT encode(to_bson('{"name": "x", "_id": 1, "z": 2}'::jsonb), 'hex');

-- duplicate keys are kept, as written
SELECT encode(json_to_bson('{"a": 1, "a": 2, "b": {"c": 1, "c": [true]}}'), 'hex');

-- every JSON type, whitespace anywhere
SELECT encode(json_to_bson(E' {\n\t"s" : "hi" , "t":true,"f":false,"n":null, "o":{ }, "a":[ 1 , [ ] , {"x":"y"} ] } '), 'hex');

-- numbers by their written form: integer literals are int32 / int64,
-- anything with a fraction or an exponent is a double (1e2 too, unlike
-- jsonb, which stores it as the integer 100), -0.0 keeps its sign
SELECT n, to_hex(get_byte(b, 4)) AS type, encode(substring(b FROM 8 FOR octet_length(b) - 8), 'hex') AS value
FROM unnest(ARRAY['0', '-0', '1', '-1', '2147483647', '2147483648', '-2147483648', '-2147483649',
                  '9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809',
                  '1e2', '1E+2', '1.0', '-0.0', '0.1', '1.7976931348623157e308', '5e-324',
                  '123456789012345678901234567890', '0.30000000000000004', '1e22', '1e23']) AS n,
     json_to_bson(('{"v": ' || n || '}')::json) AS b;

-- beyond double's range: the exact decimal128 of the written digits
SELECT n, to_hex(get_byte(b, 4)) AS type, encode(substring(b FROM 8 FOR octet_length(b) - 8), 'hex') AS value
FROM unnest(ARRAY['1e400', '-1e400', '1e-400', '1.000e-400', '1234567890123456789012345678901234e400',
                  '1' || repeat('0', 400), '9.999999999999999999999999999999999e6144', '1e-6176']) AS n,
     json_to_bson(('{"v": ' || n || '}')::json) AS b;
SELECT json_to_bson('{"a": [1, {"big": 1234567890123456789012345678901234567891e400}]}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"tiny": 1e-7000}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- escapes: \uXXXX, surrogate pairs, \u0000 inside string values
SELECT encode(json_to_bson('{"s": "q\"b\\s\/n\nt\tr\rf\fb\b"}'), 'hex');
SELECT encode(json_to_bson('{"s": "\u00e9\u6771\ud83d\ude00", "k\u00e9y": 1}'), 'hex');
SELECT encode(json_to_bson('{"nul": "a\u0000b"}'), 'hex');
-- a NUL in a key cannot be a C string
SELECT json_to_bson('{"a\u0000b": 1}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- lone surrogates
SELECT json_to_bson('{"s": "\ud83d"}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"s": "\ude00x"}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"s": "\ud83d\u0041"}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- the same bytes as to_bson(jsonb) when order and numbers agree
SELECT json_to_bson(j) = to_bson(j::jsonb) AS same
FROM (VALUES ('{"a": 1, "bb": "x", "ccc": [true, null, 1.5, {"d": -7}]}'::json)) v(j);

-- fast path on and off: identical
SET bson_out.ascii_fast_path = off;
SELECT encode(json_to_bson('{"key": "value", "é": "東京", "long key over twenty-five bytes": "and a long value over twenty-five bytes"}'), 'hex');
RESET bson_out.ascii_fast_path;
SELECT encode(json_to_bson('{"key": "value", "é": "東京", "long key over twenty-five bytes": "and a long value over twenty-five bytes"}'), 'hex');

-- not a document
SELECT json_to_bson('[1, 2]');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('"x"');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson(NULL) IS NULL AS null_in_null_out;

-- deep nesting, large arrays
SELECT octet_length(json_to_bson(('{"a": ' || repeat('[', 1000) || repeat(']', 1000) || '}')::json)) AS depth_1000;
SELECT octet_length(b), position('\x103939393939000000'::bytea IN b) > 0 AS has_key_99999
FROM json_to_bson(('{"a": [' || (SELECT string_agg('0', ',') FROM generate_series(1, 100000)) || ']}')::json) AS b;

-- strings of every length up to 40 with a quote, backslash, control
-- character or non-ASCII character at every position: the eight-bytes-at-
-- a-time scan for the end of a string must stop at the right place
SELECT count(*) AS compared,
       count(*) FILTER (WHERE json_to_bson(j::json) IS DISTINCT FROM to_bson(j::jsonb)) AS differing
FROM (SELECT json_build_object('a', repeat('x', pos) || ch || repeat('y', n - pos), 'b', repeat('z', n))::text AS j
      FROM generate_series(0, 40) AS n, generate_series(0, 40) AS pos,
           unnest(ARRAY['"', '\', E'\n', E'\x01', 'é', '東', '😀', '/']) AS ch
      WHERE pos <= n) s;
