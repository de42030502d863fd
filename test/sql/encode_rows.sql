-- row_to_bson: typed rows as native BSON types.  "v" shows a one-column
-- row's element: its type byte and its value bytes (key "f1").
CREATE FUNCTION v(b bytea) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT to_hex(get_byte(b, 4)) || ' ' || encode(substring(b FROM 9 FOR octet_length(b) - 9), 'hex')
$$;

-- the function as declared
SELECT p.oid::regprocedure, p.provolatile, p.proisstrict, p.proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS has_comment
FROM pg_proc p WHERE p.proname = 'row_to_bson';

-- whole rows: keys in column order, every type
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE point2 AS (x int, y float8);
CREATE TYPE line2 AS (a point2, b point2, label text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE DOMAIN intlist AS int[];
CREATE TABLE typed (
	id int, b boolean, s smallint, i int, big bigint, r real, d double precision,
	amount numeric(12, 2), t text, vc varchar(10), c char(5), nm name, raw bytea,
	u uuid, day date, ts timestamp, tstz timestamptz, j json, jb jsonb,
	tags text[], grid int[], pt point2, ln line2, p posint, il intlist, m mood,
	iv interval
);
INSERT INTO typed VALUES
	(1, true, -32768, 2147483647, -9223372036854775808, 1.5, -0.1,
	 12.30, 'héllo', 'v', 'ab', 'nm', '\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	 '1970-01-02', '1969-12-31 23:59:59.9995', '2024-01-02 03:04:05.678+00',
	 '{"z": 1, "a": [true, null]}', '{"z": 1, "a": 1.0}', '{a,NULL,c}', '{{1,2},{3,4}}',
	 ROW(1, 2.5), ROW(ROW(1, 1), ROW(2, 2), 'L'), 7, '{1,2}', 'happy', '1 day 02:00'),
	(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT id, encode(row_to_bson(tr), 'hex') FROM typed tr ORDER BY id;
-- NULL columns omitted on request, nested composites too
SELECT id, encode(row_to_bson(tr, true), 'hex') FROM typed tr ORDER BY id;
SELECT encode(row_to_bson(ROW(1, ROW(NULL, 2)::point2, NULL::int), true), 'hex');

-- a dropped column is skipped
ALTER TABLE typed DROP COLUMN r;
CREATE TABLE dropped (a int, b text, c int);
INSERT INTO dropped VALUES (1, 'x', 3);
ALTER TABLE dropped DROP COLUMN b;
SELECT encode(row_to_bson(d), 'hex') FROM dropped d;
SELECT position('\x0172'::bytea IN row_to_bson(tr)) = 0 AS no_r FROM typed tr WHERE id = 1;

-- integers and their limits
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY[-32768, 0, 32767]::int2[]) x;
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY[-2147483648, -1, 2147483647]::int4[]) x;
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY[-9223372036854775808, 0, 9223372036854775807]::int8[]) x;

-- real and double precision, special values kept
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['0.1', '-0', 'NaN', 'Infinity', '-Infinity', '1e-45', '3.4028235e38']::real[]) x;
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['0.1', '-0', 'NaN', 'Infinity', '-Infinity', '5e-324', '1.7976931348623157e308']::float8[]) x;

-- numeric as exact decimal128, at its display scale
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['0', '0.00', '12.30', '-12.30', '1', '1e10', '0.000001',
	'1234567890123456789012345678901234', '0.1234567890123456789012345678901234',
	'1234567890123456789012345678901234000000', '1e-100', 'NaN']::numeric[]) x;
-- (numeric infinities: numeric_infinity.sql)
SELECT v(row_to_bson(ROW(12.3::numeric(12, 2))));
-- 35 significant digits: no exact decimal128
SELECT row_to_bson(ROW('12345678901234567890123456789012345'::numeric));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT row_to_bson(t) FROM (SELECT 1 AS id, ARRAY['0.12345678901234567890123456789012345'::numeric] AS amounts) t;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- strings: text, varchar, char(n) with its blanks, name; non-ASCII
SELECT v(row_to_bson(ROW('x'::text))), v(row_to_bson(ROW('héllo'::varchar(9)))),
       v(row_to_bson(ROW('ab'::char(4)))), v(row_to_bson(ROW('nm'::name))), v(row_to_bson(ROW(''::text)));

-- bytea and uuid as binary 0 and 4
SELECT v(row_to_bson(ROW(''::bytea))), v(row_to_bson(ROW('\x0102ff'::bytea))),
       v(row_to_bson(ROW('00000000-0000-0000-0000-000000000000'::uuid))),
       v(row_to_bson(ROW('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)));

-- dates and timestamps: milliseconds since 1970 UTC, floored
SET TimeZone = 'America/New_York';
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['1970-01-01', '1969-12-31', '2000-02-29', '0001-01-01', '9999-12-31', '4713-01-01 BC']::date[]) x;
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['1970-01-01 00:00:00', '1970-01-01 00:00:00.000999',
	'1969-12-31 23:59:59.999999', '1969-12-31 23:59:59.9995', '2024-01-02 03:04:05.678901', '294247-01-10 04:00:54.775807', '294247-01-10 04:00:54.775808', '294276-12-31 23:59:59.999999']::timestamp[]) x;
SELECT x, v(row_to_bson(ROW(x))) FROM unnest(ARRAY['1970-01-01 00:00:00+00', '2024-01-02 04:04:05.678+01',
	'1969-12-31 18:59:59.999999-05']::timestamptz[]) x;
RESET TimeZone;
-- infinite values cannot be BSON datetimes
SELECT row_to_bson(ROW('infinity'::date));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT row_to_bson(t) FROM (SELECT 1 AS id, '-infinity'::timestamptz AS created) t;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT row_to_bson(t) FROM (SELECT ARRAY['2024-01-01', 'infinity']::timestamp[] AS stamps) t;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;

-- json keeps its key order and written numbers; jsonb maps as to_bson
SELECT v(row_to_bson(ROW('{"z": 1, "a": 1e2}'::json))), v(row_to_bson(ROW('{"z": 1, "a": 1e2}'::jsonb)));
SELECT v(row_to_bson(ROW('[1, "x", null]'::json))), v(row_to_bson(ROW('"s"'::jsonb))),
       v(row_to_bson(ROW('3'::jsonb))), v(row_to_bson(ROW('null'::json))), v(row_to_bson(ROW('true'::jsonb)));

-- arrays of 0 to 3 dimensions, NULL elements
SELECT x, v(row_to_bson(ROW(x))) FROM (VALUES ('{}'::int[]), ('{1,NULL,3}'), ('{{1,2},{3,NULL}}'), ('{{{1},{2}},{{3},{4}}}'), ('[0:1]={7,8}')) t(x);
SELECT v(row_to_bson(ROW('{a,NULL}'::text[]))), v(row_to_bson(ROW(ARRAY[ROW(1, 2.0)::point2]))),
       v(row_to_bson(ROW(ARRAY['{"a": 1}'::jsonb]))), v(row_to_bson(ROW(ARRAY['12.30'::numeric(5,2)])));
-- NULLs beyond the first byte of the null bitmap, between elements of fixed
-- and of variable length, in one and two dimensions (columns in jsonb's key
-- order)
SELECT row_to_bson(t) = to_bson(to_jsonb(t)) AS same
FROM (SELECT '{{1,2,3,4,5,6,7,8,9},{NULL,2,3,4,5,6,7,NULL,NULL}}'::int[] AS grid,
             ARRAY(SELECT CASE WHEN i % 7 < 2 OR i = 40 THEN NULL ELSE i END FROM generate_series(0, 40) i) AS ints,
             ARRAY(SELECT CASE WHEN i % 5 = 3 THEN NULL ELSE repeat('x', i) END FROM generate_series(0, 40) i) AS texts,
             '{{a,bb,NULL,ccc,d,e,f,g,h},{i,NULL,jj,k,l,m,n,o,NULL}}'::text[] AS words) t;

-- composites, nested; anonymous records; domains; enums and other types by their output
SELECT v(row_to_bson(ROW(ROW(ROW(1, 1.5)::point2, NULL, 'L')::line2)));
SELECT v(row_to_bson(ROW(ROW(1, 'x'))));
-- anonymous records in arrays and in each other, of two row types in one
-- array (and in one 2-dimensional array)
SELECT omit, f.key, f.value
FROM (SELECT array_agg(CASE WHEN i % 3 = 0 THEN ROW(i, ROW('x' || i, NULL::int, ROW(i % 2 = 0)))
                            ELSE ROW(i::text, ARRAY[ROW(i), NULL, ROW(-i)]) END ORDER BY i) AS a
      FROM generate_series(1, 3) i) s, (VALUES (false), (true)) o(omit),
     json_each(bson_to_json(row_to_bson(ROW(a[2:3], ROW(a[1], a[3]), ARRAY[[a[1], NULL], [a[2], a[3]]]), omit), false)) f;
-- many of them: each row type is worked out once per call, not once per
-- value, with the same bytes
SELECT omit, length(b), md5(b)
FROM (SELECT omit, row_to_bson(ROW(a, ROW(a[1], a[3])), omit) AS b
      FROM (SELECT array_agg(CASE WHEN i % 3 = 0 THEN ROW(i, ROW('x' || i, NULL::int, ROW(i % 2 = 0)))
                                  ELSE ROW(i::text, ARRAY[ROW(i), NULL, ROW(-i)]) END ORDER BY i) AS a
            FROM generate_series(1, 20000) i) s,
           (VALUES (false), (true)) o(omit)) t;
SELECT v(row_to_bson(ROW(5::posint))), v(row_to_bson(ROW('{1,2}'::intlist))), v(row_to_bson(ROW('ok'::mood)));
SELECT v(row_to_bson(ROW('1 day'::interval))), v(row_to_bson(ROW('(1,2)'::point))), v(row_to_bson(ROW('10.0.0.1'::inet)));

-- SQL NULL in, NULL out
SELECT row_to_bson(NULL::typed) IS NULL AS null_in_null_out;

-- the same query over rows of two types (the cache follows the type)
SELECT encode(row_to_bson(x), 'hex') FROM (VALUES (ROW(1)), (ROW('a'::text))) v(x);

-- the same bytes as to_bson where the types agree
SELECT row_to_bson(t) = to_bson(to_jsonb(t)) AS same FROM (SELECT 1 AS a, 'x' AS b, true AS c, ARRAY[1, 2] AS d) t;
