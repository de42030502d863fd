-- Extended JSON v2 wrappers, through json_to_bson(doc, true) and
-- to_bson(doc jsonb, true); "type" is the element's BSON type byte.
CREATE FUNCTION ej(j text, legacy boolean DEFAULT false)
RETURNS TABLE (type text, value text, same_from_jsonb boolean)
LANGUAGE sql AS $$
	SELECT to_hex(get_byte(b, 4)),
	       encode(substring(b FROM 8 FOR octet_length(b) - 8), 'hex'),
	       b = to_bson(('{"v": ' || j || '}')::jsonb, true, legacy)
	FROM json_to_bson(('{"v": ' || j || '}')::json, true, legacy) AS b
$$;

-- without extended_json the wrappers are plain documents
SELECT encode(json_to_bson('{"v": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}'), 'hex');
SELECT encode(to_bson('{"v": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}'::jsonb), 'hex');
-- the top-level document is never a wrapper
SELECT encode(json_to_bson('{"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}', true), 'hex');

-- each wrapper, canonical and relaxed forms
SELECT j, (ej(j)).* FROM unnest(ARRAY[
	'{"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}',
	'{"$oid": "5F0C8A3E9B1E8A2D4C6B7A90"}',
	'{"$symbol": "sym"}',
	'{"$numberInt": "42"}', '{"$numberInt": "-2147483648"}', '{"$numberInt": "2147483647"}',
	'{"$numberLong": "42"}', '{"$numberLong": "-9223372036854775808"}', '{"$numberLong": "9223372036854775807"}',
	'{"$numberDouble": "1.5"}', '{"$numberDouble": "-0.0"}', '{"$numberDouble": "Infinity"}',
	'{"$numberDouble": "-Infinity"}', '{"$numberDouble": "NaN"}', '{"$numberDouble": "5e-324"}',
	'{"$numberDouble": "1.7976931348623157E+308"}',
	'{"$numberDecimal": "1"}', '{"$numberDecimal": "-1.50"}', '{"$numberDecimal": "0E-6176"}',
	'{"$numberDecimal": "-0"}', '{"$numberDecimal": "NaN"}', '{"$numberDecimal": "-Infinity"}',
	'{"$numberDecimal": "Infinity"}', '{"$numberDecimal": "9.999999999999999999999999999999999E+6144"}',
	'{"$numberDecimal": "1E+6144"}', '{"$numberDecimal": "1E-6176"}',
	'{"$binary": {"base64": "", "subType": "00"}}',
	'{"$binary": {"base64": "AQID", "subType": "00"}}',
	'{"$binary": {"subType": "80", "base64": "AQID"}}',
	'{"$binary": {"base64": "AQID", "subType": "2"}}',
	'{"$binary": {"base64": "c//SZESzTGmQ6OfR38A11A==", "subType": "04"}}',
	'{"$binary": {"base64": "AA==", "subType": "ff"}}',
	'{"$uuid": "73ffd264-44b3-4c69-90e8-e7d1dfc035d4"}',
	'{"$code": "function() {}"}',
	'{"$code": "f(x)", "$scope": {"x": 1}}',
	'{"$scope": {"x": {"$numberLong": "1"}}, "$code": "f(x)"}',
	'{"$timestamp": {"t": 1, "i": 2}}', '{"$timestamp": {"i": 4294967295, "t": 4294967295}}',
	'{"$timestamp": {"t": 0, "i": 0}}',
	'{"$regularExpression": {"pattern": "^a.*b$", "options": "xmi"}}',
	'{"$regularExpression": {"options": "", "pattern": ""}}',
	'{"$dbPointer": {"$ref": "db.coll", "$id": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}}',
	'{"$date": {"$numberLong": "1704164645678"}}', '{"$date": {"$numberLong": "-1"}}',
	'{"$date": {"$numberLong": "-9223372036854775808"}}', '{"$date": {"$numberLong": "253402300800000"}}',
	'{"$date": "2024-01-02T03:04:05.678Z"}', '{"$date": "2024-01-02T03:04:05Z"}',
	'{"$date": "2024-01-02T04:04:05.678+01:00"}', '{"$date": "1969-12-31T23:59:59.999Z"}',
	'{"$date": "0001-01-01T00:00:00Z"}', '{"$date": "9999-12-31T23:59:59.999Z"}',
	'{"$minKey": 1}', '{"$maxKey": 1}', '{"$undefined": true}'
]) AS j;

-- legacy forms: errors by default, accepted with legacy_extended_json
SELECT j, (ej(j, true)).* FROM unnest(ARRAY[
	'{"$date": 1704164645678}', '{"$date": -1}',
	'{"$binary": "AQID", "$type": "00"}', '{"$type": "80", "$binary": "AQID"}',
	'{"$regex": "^a", "$options": "mi"}', '{"$regex": "^a"}'
]) AS j;
SELECT json_to_bson('{"v": {"$date": 1704164645678}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"v": {"$binary": "AQID", "$type": "00"}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"v": {"$regex": "^a", "$options": "i"}}'::jsonb, true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- not wrappers: plain documents
SELECT encode(json_to_bson('{"ref": {"$ref": "c", "$id": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}}', true), 'hex');
SELECT encode(json_to_bson('{"q": {"$foo": 1}, "r": {"$regex": {"x": 1}}, "t": {"$type": "string"}}', true), 'hex');

-- nested wrappers keep their place, key order kept
SELECT encode(json_to_bson('{"_id": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}, "at": {"$date": "2024-01-02T03:04:05.678Z"}, "n": {"$numberLong": "42"}, "orders": [{"at": {"$date": {"$numberLong": "0"}}}]}', true), 'hex');

-- malformed wrappers: 22P02 naming the wrapper, with the path
SELECT json_to_bson('{"orders": [1, 2, {"at": {"$date": "yesterday"}}]}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson('{"orders": [1, 2, {"at": {"$date": "yesterday"}}]}'::jsonb, true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"v": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a9"}}', true);
SELECT json_to_bson('{"v": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a9g"}}', true);
SELECT json_to_bson('{"v": {"$oid": 5}}', true);
SELECT json_to_bson('{"v": {"$oid": "5f0c8a3e9b1e8a2d4c6b7a90", "x": 1}}', true);
SELECT json_to_bson('{"v": {"x": 1, "$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}', true);
SELECT to_bson('{"v": {"x": 1, "$oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}'::jsonb, true);
SELECT json_to_bson('{"v": {"$numberInt": "2147483648"}}', true);
SELECT json_to_bson('{"v": {"$numberInt": 42}}', true);
SELECT json_to_bson('{"v": {"$numberLong": "9223372036854775808"}}', true);
SELECT json_to_bson('{"v": {"$numberDouble": "1e400"}}', true);
SELECT json_to_bson('{"v": {"$numberDouble": "abc"}}', true);
SELECT json_to_bson('{"v": {"$numberDecimal": "1.2345678901234567890123456789012345"}}', true);
SELECT json_to_bson('{"v": {"$numberDecimal": "1E+6145"}}', true);
SELECT json_to_bson('{"v": {"$binary": {"base64": "AQI", "subType": "00"}}}', true);
SELECT json_to_bson('{"v": {"$binary": {"base64": "AQID", "subType": "100"}}}', true);
SELECT json_to_bson('{"v": {"$binary": {"base64": "AQID"}}}', true);
SELECT json_to_bson('{"v": {"$uuid": "73ffd264-44b3-4c69-90e8-e7d1dfc035d"}}', true);
SELECT json_to_bson('{"v": {"$code": 1}}', true);
SELECT json_to_bson('{"v": {"$code": "f", "$scope": 1}}', true);
SELECT json_to_bson('{"v": {"$timestamp": {"t": -1, "i": 0}}}', true);
SELECT json_to_bson('{"v": {"$timestamp": {"t": 4294967296, "i": 0}}}', true);
SELECT json_to_bson('{"v": {"$timestamp": {"t": 1}}}', true);
SELECT json_to_bson('{"v": {"$regularExpression": {"pattern": "a\u0000b", "options": ""}}}', true);
SELECT json_to_bson('{"v": {"$regularExpression": {"pattern": "a", "options": "i\u0000"}}}', true);
-- options are written sorted; MongoDB's options are ASCII letters, and sorting
-- anything else byte by byte would split UTF-8 characters: refused (22P02),
-- from jsonb and from JSON text, in the current and the legacy form
SELECT encode(json_to_bson('{"r": {"$regularExpression": {"pattern": "a", "options": "xsmi"}}}', true), 'hex');
SELECT to_bson('{"r": {"$regularExpression": {"pattern": "a", "options": "éi"}}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"r": {"$regularExpression": {"pattern": "a", "options": "éi"}}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"r": {"$regex": "a", "$options": "i\u00e9"}}', true, true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson('{"v": {"$dbPointer": {"$ref": "c", "$id": "x"}}}', true);
SELECT json_to_bson('{"v": {"$date": "2024-02-30T00:00:00Z"}}', true);
SELECT json_to_bson('{"v": {"$date": "2024-01-02T03:04:05"}}', true);
SELECT json_to_bson('{"v": {"$date": {"$numberLong": "x"}}}', true);
SELECT json_to_bson('{"v": {"$minKey": 2}}', true);
SELECT json_to_bson('{"v": {"$undefined": false}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- "$" written as the escape \u0024 is the same key
SELECT encode(json_to_bson('{"v": {"\u0024oid": "5f0c8a3e9b1e8a2d4c6b7a90"}}', true), 'hex');
SELECT encode(json_to_bson('{"v": {"\u0024scope": {}, "$code": "x"}}', true), 'hex');
SELECT json_to_bson('{"v": {"\u0024date": 5}}', true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
