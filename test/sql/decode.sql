-- Reading BSON back: from_bson, bson_to_json, bson_is_valid, bson_documents.
-- Documents are written as hex by hand (each byte commented where it is not
-- obvious) or made by the encoder.

-- unaligned output: psql's column widths for emoji differ between versions
\pset format unaligned

-- every BSON type, built with json_to_bson's Extended JSON (checked byte for
-- byte against pymongo elsewhere), read back three ways
CREATE TEMP TABLE every_type AS
SELECT json_to_bson('{
  "double": 1.5, "integral_double": 2.0, "neg_zero": {"$numberDouble": "-0.0"},
  "nan": {"$numberDouble": "NaN"}, "inf": {"$numberDouble": "Infinity"},
  "ninf": {"$numberDouble": "-Infinity"}, "tiny": 5e-324, "huge": 1.7976931348623157e308,
  "string": "h\u00e9llo \"q\" \\ \n\t\u0001 \u20ac \ud83d\ude00",
  "doc": {"a": {"b": [1, [2, []], {}]}},
  "bin0": {"$binary": {"base64": "AQID", "subType": "00"}},
  "bin2": {"$binary": {"base64": "//8=", "subType": "02"}},
  "uuid": {"$uuid": "c8edabc3-f738-4ca3-b68d-ab92a91478a3"},
  "bin80": {"$binary": {"base64": "", "subType": "80"}},
  "undefined": {"$undefined": true},
  "oid": {"$oid": "57e193d7a9cc81b4027498b5"},
  "t": true, "f": false,
  "date": {"$date": "2024-01-02T03:04:05.678Z"},
  "date_whole": {"$date": "2024-01-02T03:04:05Z"},
  "date_epoch": {"$date": {"$numberLong": "0"}},
  "date_before_1970": {"$date": {"$numberLong": "-1"}},
  "date_max": {"$date": {"$numberLong": "253402300799999"}},
  "date_after_9999": {"$date": {"$numberLong": "253402300800000"}},
  "null": null,
  "regex": {"$regularExpression": {"pattern": "^a.*\"b", "options": "xsmi"}},
  "dbpointer": {"$dbPointer": {"$ref": "db.coll", "$id": {"$oid": "57e193d7a9cc81b4027498b1"}}},
  "code": {"$code": "function() { return 1; }"},
  "symbol": {"$symbol": "sym"},
  "code_w_scope": {"$code": "f(x)", "$scope": {"x": {"$numberLong": "1"}}},
  "int32": 2147483647, "int32_min": -2147483648,
  "ts": {"$timestamp": {"t": 4294967295, "i": 1}},
  "int64_small": {"$numberLong": "7"}, "int64_big": 9223372036854775807,
  "int64_min": {"$numberLong": "-9223372036854775808"},
  "dec": {"$numberDecimal": "1.50"}, "dec_exp": {"$numberDecimal": "1E+3"},
  "dec_small": {"$numberDecimal": "-1.00E-8"}, "dec_nan": {"$numberDecimal": "NaN"},
  "dec_inf": {"$numberDecimal": "-Infinity"},
  "dec_max": {"$numberDecimal": "9.999999999999999999999999999999999E+6144"},
  "min": {"$minKey": 1}, "max": {"$maxKey": 1}
}', true) AS b;

SELECT bson_is_valid(b) FROM every_type;
SELECT key, left(value::text, 90) AS value FROM every_type, jsonb_each(from_bson(b)) ORDER BY key;
SELECT bson_to_json(b) FROM every_type;
SELECT bson_to_json(b, true) FROM every_type;
-- relaxed and canonical are valid JSON
SELECT bson_to_json(b)::jsonb IS NOT NULL AS relaxed_ok,
       bson_to_json(b, true)::jsonb IS NOT NULL AS canonical_ok FROM every_type;

-- the round trip of types: to_bson(from_bson(b), true) has the same elements
-- as b, in jsonb's key order: compare element by element through
-- bson_to_json, canonical (which shows every type)
SELECT (SELECT jsonb_object_agg(key, value) FROM json_each(bson_to_json(b, true))) =
       bson_to_json(to_bson(from_bson(b), true), true)::jsonb AS same_values_and_types
FROM every_type;
-- and byte for byte once the keys are in jsonb's order
SELECT to_bson(from_bson(b), true) = to_bson(from_bson(to_bson(from_bson(b), true)), true) AS stable
FROM every_type;

-- from_bson(to_bson(x)) = x for jsonb whose numbers are integers within
-- int64 or shortest decimals
SELECT x, from_bson(to_bson(x)) = x AS same, from_bson(to_bson(x))
FROM (VALUES ('{}'::jsonb),
             ('{"a": 1, "b": -2147483649, "c": 9223372036854775807, "d": -9223372036854775808}'),
             ('{"e": 0.1, "f": 1.5e-7, "g": 123456.789, "h": 1e-300, "i": 2.5}'),
             ('{"s": "", "t": "x\ny", "u": "\u00e9\u20ac\ud83d\ude00", "v": [null, true, false, [], {}]}'),
             ('{"_id": {"$oid": "57e193d7a9cc81b4027498b5"}, "plain": {"$foo": 1}}')) v(x);
-- integral doubles keep their fraction so that to_bson makes them doubles again
SELECT from_bson(json_to_bson('{"a": 1.0, "b": -3.0, "c": 1e15, "d": 1e19, "e": 1e300, "f": 9007199254740993.0}'));
SELECT encode(to_bson(from_bson(json_to_bson('{"a": 1.0}'))), 'hex') AS still_a_double;

-- doubles in bson_to_json: the shortest text, as Python's repr writes it
SELECT bson_to_json(json_to_bson('{"a": [1.0, 0.1, 1e-4, 1e-5, 1e15, 1e16, 123.456, -2.5e-300, 0.0, 5e-324, 1.7976931348623157e308, 9007199254740993.0, 100.0, 1234567890123456.7]}'));
-- a decimal exactly between two doubles reads back as the even one: 1e+23,
-- not the 9.999999999999999e+22 that a search within the interval finds
SELECT bson_to_json(json_to_bson('{"a": [1e23, 1.950555423931417e16, -1.507508548612624e18, 9007199254740994.0]}')),
       from_bson(json_to_bson('{"a": [1e23]}'));

-- strings: escapes as json.dumps writes them, NUL as \u0000 in json text
SELECT bson_to_json(json_to_bson('{"k\"\\\u001f": "a\u0000b\u007f\b\f\r/"}'));
-- jsonb cannot hold NUL
SELECT from_bson(json_to_bson('{"a": {"b": ["x", "a\u0000b"]}}'));
-- duplicate keys: bson_to_json keeps them, from_bson keeps the last
SELECT bson_to_json(json_to_bson('{"a": 1, "a": 2}')), from_bson(json_to_bson('{"a": 1, "a": 2}'));
-- key order: bson_to_json keeps the document's
SELECT bson_to_json(json_to_bson('{"zz": 1, "_id": 2, "a": {"y": 1, "x": 2}}'));

-- hand-made: regex options kept as stored, written sorted; unknown ones kept
-- 0b 'r' 00 'a' 00 'xim' 00
SELECT bson_to_json('\x0e000000 0b 7200 6100 78696d00 00'::bytea);
-- options that are not ASCII are left as stored (sorting bytes would split
-- the characters): pattern "abc", options "i\u00e9"
SELECT bson_to_json('\x100000000b72006162630069c3a90000'::bytea),
       from_bson('\x100000000b72006162630069c3a90000'::bytea);
-- binary subtype 2 shows its payload, without the inner length
SELECT bson_to_json('\x13000000 05 6200 06000000 02 02000000 ffff 00'::bytea);
-- a non-canonical decimal128 (coefficient above 10^34 - 1) reads as zero
SELECT bson_to_json('\x18000000 13 6400 ffffffffffffffff ffffffffffff4130 00'::bytea);
-- a code-with-scope whose scope is empty
SELECT bson_to_json('\x17000000 0f 6300 0f000000 02000000 6600 0500000000 00'::bytea) AS cws;

-- NULL in, NULL out
SELECT from_bson(NULL), bson_to_json(NULL), bson_is_valid(NULL);

-- bson_documents: a stream of documents, as in a .bson file
CREATE TEMP TABLE stream AS
SELECT string_agg(to_bson(jsonb_build_object('i', i, 's', repeat('x', i))), ''::bytea ORDER BY i) AS s
FROM generate_series(1, 50) i;
SELECT count(*), sum((from_bson(d)->>'i')::int) AS sum_i, bool_and(bson_is_valid(d)) AS valid
FROM stream, bson_documents(s) d;
SELECT array_agg(from_bson(d)->'i') = (SELECT array_agg(to_jsonb(i)) FROM generate_series(1, 50) i) AS in_order
FROM stream, bson_documents(s) d;
SELECT count(*) FROM bson_documents(''::bytea);
-- a truncated last document: the complete ones come out first, then the error
BEGIN;
DECLARE c CURSOR FOR SELECT from_bson(bson_documents(s || '\x0c000000'::bytea)) FROM stream;
MOVE 49 FROM c;
FETCH 1 FROM c;
FETCH 1 FROM c;
ROLLBACK;
-- an invalid document inside the stream names its offset in the stream
SELECT count(*) FROM bson_documents('\x0500000000'::bytea || '\x0600000001 00'::bytea);
SELECT count(*) FROM bson_documents('\x0500000000'::bytea || '\x07000000 0a 00 01'::bytea);
