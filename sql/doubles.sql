-- Doubles must be correctly rounded: compare to_bson's double with
-- PostgreSQL's own float8 input (strtod, correctly rounded) for 100,000
-- pseudo-random decimals of 1 to 40 significant digits and exponents across
-- the whole double range, including subnormals, plus values halfway between
-- adjacent doubles.  Only numbers that map to BSON doubles are used.

-- the little-endian BSON bytes of a float8
CREATE FUNCTION le_float8(x float8) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
	SELECT decode(string_agg(substr(h, 15 - 2 * i, 2), '' ORDER BY i), 'hex')
	FROM encode(float8send(x), 'hex') AS h, generate_series(0, 7) AS i
$$;

SELECT setseed(0.42);
CREATE TEMP TABLE dec AS
SELECT n, (CASE WHEN random() < 0.5 THEN '-' ELSE '' END)
          || substr(digits, 1, 1) || '.' || substr(digits, 2) || 'e' || exp AS t
FROM (
	SELECT n, exp,
	       (1 + floor(random() * 9))::int::text
	       || (SELECT string_agg(floor(random() * 10)::int::text, '')
	           FROM generate_series(1, (floor(random() * ndigits))::int + n * 0)) AS digits
	FROM (SELECT n, CASE WHEN wide THEN floor(random() * 630 - 325)::int
	                     ELSE floor(random() * 60 - 30)::int END AS exp,
	             CASE WHEN wide THEN 34 ELSE 40 END AS ndigits
	      FROM (SELECT n, random() < 0.3 AS wide FROM generate_series(1, 100000) AS n) w) e
) s;

-- halfway points: the exact midpoint of two adjacent doubles, and values a
-- hair above and below it
INSERT INTO dec
SELECT 200000 + n,
       (m::numeric + 0.5 + d)::text || 'e' || e
FROM (SELECT n, (floor(random() * 4503599627370496) + 4503599627370496)::bigint * 2 AS m,
             floor(random() * 40 - 20)::int AS e
      FROM generate_series(1, 5000) AS n) s,
     (VALUES (0.0), (0.000000000001), (-0.000000000001)) AS v(d);

SELECT count(*) AS numbers,
       count(*) FILTER (WHERE get_byte(b, 4) = 1) AS doubles,
       count(*) FILTER (WHERE get_byte(b, 4) = 19) AS decimal128s,
       count(*) FILTER (WHERE CASE WHEN get_byte(b, 4) = 1
                              THEN substring(b FROM 8 FOR 8) <> le_float8(t::float8)
                              END) AS wrongly_rounded
FROM dec, to_bson(('{"v": ' || t || '}')::jsonb) AS b;

-- the same with the decimal point moved into the digits (integers at
-- display scale 0 beyond int64 are doubles too)
SELECT count(*) AS numbers,
       count(*) FILTER (WHERE CASE WHEN get_byte(b, 4) = 1
                              THEN substring(b FROM 8 FOR 8) <> le_float8(t::float8)
                              END) AS wrongly_rounded
FROM (SELECT n, trunc(t::numeric * 1e25)::text AS t FROM dec
      WHERE abs(t::numeric) BETWEEN 1e-5 AND 1e30) d,
     to_bson(('{"v": ' || t || '}')::jsonb) AS b;
