-- Documents, arrays and key order.

-- empty containers
SELECT encode(to_bson('{"o": {}, "a": []}'), 'hex');
SELECT encode(to_bson('{"a": [[], [[]], {}]}'), 'hex');

-- array keys are "0" .. "n-1": here up to "11"
SELECT encode(to_bson(jsonb_build_object('a', (SELECT jsonb_agg(i) FROM generate_series(0, 11) i))), 'hex');

-- large arrays: the 100,000th element's key is "99999"
SELECT octet_length(b) AS doc_bytes,
       position('\x103939393939000000'::bytea IN b) > 0 AS has_key_99999
FROM to_bson(jsonb_build_object('a', (SELECT jsonb_agg(0) FROM generate_series(1, 100000)))) AS b;

-- nesting: objects in arrays in objects
SELECT encode(to_bson('{"a": [{"b": [1, {"c": null}]}, [true]]}'), 'hex');

-- keys come out in jsonb's stored order: shorter keys first, then bytewise;
-- a repeated key keeps its last value
SELECT encode(to_bson('{"bb": 1, "a": 2, "ab": 3, "B": 4}'), 'hex');
SELECT '{"name": "x", "_id": 1, "z": 2}'::jsonb::text AS jsonb_order,
       encode(to_bson('{"name": "x", "_id": 1, "z": 2}'), 'hex');
SELECT encode(to_bson('{"a": 1, "a": 2}'), 'hex');

-- deep nesting: 1,000 levels of arrays and of objects encode
SELECT octet_length(to_bson(('{"a": ' || repeat('[', 1000) || repeat(']', 1000) || '}')::jsonb)) AS array_depth_1000;
SELECT octet_length(to_bson((repeat('{"a": ', 1000) || '1' || repeat('}', 1000))::jsonb)) AS object_depth_1000;

-- nesting beyond the stack raises PostgreSQL's stack-depth error cleanly
CREATE TEMP TABLE deep AS
	SELECT ('{"a": ' || repeat('[', 5000) || repeat(']', 5000) || '}')::jsonb AS doc;
SET max_stack_depth = '100kB';
SELECT octet_length(to_bson(doc)) FROM deep;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
RESET max_stack_depth;
SELECT octet_length(to_bson(doc)) AS depth_5000 FROM deep;

-- many keys and mixed values in one document
SELECT octet_length(b) AS doc_bytes,
       get_byte(b, 0) + get_byte(b, 1) * 256 + get_byte(b, 2) * 65536 = octet_length(b) AS length_ok
FROM to_bson((SELECT jsonb_object_agg('key' || i, CASE i % 4 WHEN 0 THEN to_jsonb(i) WHEN 1 THEN to_jsonb('v' || i)
                                                    WHEN 2 THEN to_jsonb(i / 7.0) ELSE 'null'::jsonb END)
              FROM generate_series(1, 5000) i)) AS b;
