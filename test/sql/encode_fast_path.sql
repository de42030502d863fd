-- The basic-latin fast path (bson_out.ascii_fast_path) and the general
-- string path must produce identical bytes for every key and string.

-- settings exist once the library is loaded (any call of its functions does)
LOAD 'bson_out';
SHOW bson_out.ascii_fast_path;

-- keys and values of 0..40 bytes: ASCII, with a non-ASCII character at the
-- start, middle or end, with 2-, 3- and 4-byte characters, and with JSON
-- escapes (control characters, DEL)
CREATE TEMP TABLE samples AS
SELECT row_number() OVER () AS id, jsonb_build_object(k, v, 'n', 1, 'arr', jsonb_build_array(v, k)) AS doc
FROM (
	SELECT CASE pos WHEN 0 THEN repeat('a', n)
	                WHEN 1 THEN ch || repeat('a', greatest(n - 1, 0))
	                WHEN 2 THEN repeat('a', n / 2) || ch || repeat('a', n / 2)
	                ELSE repeat('a', greatest(n - 1, 0)) || ch END AS k,
	       CASE pos WHEN 0 THEN repeat('v', n)
	                ELSE repeat('v', greatest(n - 1, 0)) || ch END AS v
	FROM generate_series(0, 40) AS n,
	     generate_series(0, 3) AS pos,
	     unnest(ARRAY['é', '東', '😀', E'\x01', E'\x7f', '~']) AS ch
) s;
SELECT count(*) AS documents FROM samples;

SET bson_out.ascii_fast_path = on;
CREATE TEMP TABLE fast AS SELECT id, to_bson(doc) AS b FROM samples;
SET bson_out.ascii_fast_path = off;
SHOW bson_out.ascii_fast_path;
CREATE TEMP TABLE general AS SELECT id, to_bson(doc) AS b FROM samples;
RESET bson_out.ascii_fast_path;

SELECT count(*) AS compared, count(*) FILTER (WHERE f.b IS DISTINCT FROM g.b) AS differing
FROM fast f JOIN general g USING (id);
