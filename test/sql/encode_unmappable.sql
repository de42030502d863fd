-- Values without a BSON mapping in the SQL functions: bson_out.unmappable_values.
-- error (the default) refuses them; fallback writes +-infinity dates and
-- timestamps as the latest / earliest datetime drivers decode
-- (9999-12-31T23:59:59.999Z = 253402300799999 ms and
-- 0001-01-01T00:00:00.000Z = -62135596800000 ms) and a numeric with no exact
-- decimal128 as the string of its digits, warning once per column and query.
-- Shown in canonical Extended JSON, which keeps every BSON type.
LOAD 'bson_out';
SHOW bson_out.unmappable_values;
SET bson_out.unmappable_values = 'lossy';
SET bson_out.unmappable_values = fallback;

-- both directions, in date, timestamp and timestamptz
SELECT bson_to_json(row_to_bson(ROW(d, ts, tstz)), true)
FROM (VALUES ('infinity'::date, 'infinity'::timestamp, 'infinity'::timestamptz),
			 ('-infinity', '-infinity', '-infinity')) v(d, ts, tstz);

-- they sort after (before) every finite value written, as BSON datetimes
-- (int64 milliseconds) do; finite values are unchanged
SELECT (x AT TIME ZONE 'UTC')::text AS x_utc, bson_to_json(row_to_bson(ROW(x)), true)
FROM unnest(ARRAY['-infinity', '0001-01-01 00:00:00+00', '1969-12-31 23:59:59.999+00',
				  '9999-12-31 23:59:59.999+00', 'infinity']::timestamptz[]) x;

-- inside arrays and composites, at any depth; one warning per column
CREATE TYPE span AS (valid_from date, valid_to timestamptz, amount numeric);
CREATE TABLE spans (id int PRIMARY KEY, s span, history span[], stamps timestamp[]);
INSERT INTO spans VALUES
	(1, ROW('-infinity', 'infinity', 1.5), ARRAY[ROW('2024-01-01', 'infinity', 2)::span],
	 ARRAY['2024-01-01', 'infinity', '-infinity']::timestamp[]),
	(2, ROW('2024-01-01', 'infinity', 1.5), ARRAY[ROW('-infinity', '2025-01-01', 2)::span],
	 '{{-infinity},{infinity}}');
SELECT bson_to_json(row_to_bson(x), true) FROM spans x ORDER BY id;
-- a new query warns again
SELECT bson_to_json(row_to_bson(ROW(x.stamps)), true) FROM spans x ORDER BY id;
-- anonymous records nested in a value
SELECT bson_to_json(row_to_bson(ROW(ROW(ROW('infinity'::date)))), true);

-- numerics with no exact decimal128: every digit, as their text
CREATE TABLE wide (id int, n numeric);
INSERT INTO wide VALUES
	(1, 1234567890123456789012345678901234567.5),      -- 38 digits
	(2, 12345678901234567890123456789012345),           -- 35 digits
	(3, -0.12345678901234567890123456789012345),        -- 35 digits, negative
	(4, repeat('9', 100)::numeric),                     -- 100 digits
	(5, ('1' || repeat('0', 998) || '1')::numeric),     -- 1000 digits
	(6, ('0.' || repeat('3', 1000))::numeric),          -- 1000 digits after the point
	(7, 1234567890123456789012345678901234),            -- 34 digits: decimal128
	(8, 'NaN'),                                         -- decimal128 NaN
	(9, 12.30);                                         -- decimal128 at its scale
WITH w AS MATERIALIZED (
	SELECT id, n, (bson_to_json(row_to_bson(ROW(n)), true)::jsonb->'f1') AS j FROM wide ORDER BY id
)
SELECT id, bson_type, n::text = bson_text AS same_text, length(bson_text) AS length
FROM w,
	 LATERAL (SELECT CASE jsonb_typeof(j) WHEN 'string' THEN 'string' ELSE 'decimal128' END AS bson_type,
					 CASE jsonb_typeof(j) WHEN 'string' THEN j #>> '{}' ELSE j->>'$numberDecimal' END AS bson_text) b
ORDER BY id;
SELECT bson_to_json(row_to_bson(w), true) FROM wide w WHERE id IN (1, 3, 8, 9) ORDER BY id;
-- beyond decimal128's exponent range, with few digits
SELECT length(bson_to_json(row_to_bson(ROW(('1' || repeat('0', 6145))::numeric)), true)::jsonb->>'f1') AS digits;
SELECT bson_to_json(row_to_bson(ROW(power(10::numeric, 6144))), true);
-- in arrays and composites
SELECT bson_to_json(row_to_bson(ROW(ARRAY[1.5, 12345678901234567890123456789012345.6],
									ROW(12345678901234567890123456789012345.6, 'NaN'::numeric))), true);

-- bson_document names the table
SELECT bson_to_json(bson_document(x), true) FROM spans x ORDER BY id;

-- back to error: refused again, with the setting named
SET bson_out.unmappable_values = error;
SELECT row_to_bson(ROW('infinity'::date));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT row_to_bson(w) FROM wide w WHERE id = 1;
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT bson_document(x) FROM spans x WHERE id = 1;
RESET bson_out.unmappable_values;
DROP TABLE spans, wide;
DROP TYPE span;
