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

-- a uniform number in [0, 1) drawn from md5 of (salt, n): the same data on
-- every PostgreSQL version (random() changed its algorithm in 15)
CREATE FUNCTION rnd(n int, salt text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
	SELECT ('x' || substr(md5(salt || ':' || n), 1, 13))::bit(52)::bigint / 4503599627370496.0::float8
$$;
-- 64 decimal digits drawn the same way
CREATE FUNCTION rnd_digits(n int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT translate(md5('d1:' || n) || md5('d2:' || n), 'abcdef', '012345')
$$;

CREATE TEMP TABLE dec AS
SELECT n, (CASE WHEN rnd(n, 'sign') < 0.5 THEN '-' ELSE '' END)
          || substr(digits, 1, 1) || rtrim('.' || substr(digits, 2), '.') || 'e' || exp AS t
FROM (
	SELECT n, exp,
	       (1 + floor(rnd(n, 'first') * 9))::int::text
	       || substr(rnd_digits(n), 1, floor(rnd(n, 'length') * ndigits)::int) AS digits
	FROM (SELECT n, CASE WHEN wide THEN floor(rnd(n, 'exp') * 630 - 325)::int
	                     ELSE floor(rnd(n, 'exp') * 60 - 30)::int END AS exp,
	             CASE WHEN wide THEN 34 ELSE 40 END AS ndigits
	      FROM (SELECT n, rnd(n, 'wide') < 0.3 AS wide FROM generate_series(1, 100000) AS n) w) e
) s;

-- halfway points: the exact midpoint of two adjacent doubles, and values a
-- hair above and below it
INSERT INTO dec
SELECT 200000 + n,
       (m::numeric + 0.5 + d)::text || 'e' || e
FROM (SELECT n, (floor(rnd(n, 'mantissa') * 4503599627370496) + 4503599627370496)::bigint * 2 AS m,
             floor(rnd(n, 'scale') * 40 - 20)::int AS e
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
