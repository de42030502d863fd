-- jsonb numbers -> BSON: int32 (10), int64 (12), double (01), decimal128 (13).
-- "value" is the element's value bytes, little-endian as in BSON.
CREATE FUNCTION bson_number(t text) RETURNS TABLE (input text, type text, value text)
LANGUAGE sql AS $$
	SELECT t, to_hex(get_byte(b, 4)),
	       encode(substring(b FROM 8 FOR octet_length(b) - 8), 'hex')
	FROM to_bson(('{"v": ' || t || '}')::jsonb) AS b
$$;

-- integers at display scale 0: int32, then int64, then double
SELECT (bson_number(t)).* FROM unnest(ARRAY[
	'0', '-0', '1', '-1', '100', '1e2', '1E+2', '1.5e3',
	'2147483646', '2147483647', '2147483648', '2147483649',
	'-2147483647', '-2147483648', '-2147483649', '-2147483650',
	'9007199254740993',
	'9223372036854775806', '9223372036854775807', '9223372036854775808',
	'-9223372036854775807', '-9223372036854775808', '-9223372036854775809',
	'18446744073709551615', '18446744073709551616',
	'99999999999999999999', '100000000000000000000', '1e20'
]) AS t;

-- a fractional digit shown makes it a double, even when integral
SELECT (bson_number(t)).* FROM unnest(ARRAY[
	'0.0', '-0.0', '1.0', '1.00', '2147483647.0', '12e-1', '1.500', '0.5e1'
]) AS t;

-- doubles: correctly rounded, the nearest double to the decimal value
SELECT (bson_number(t)).* FROM unnest(ARRAY[
	'0.1', '0.2', '0.3', '-0.1', '1.7976931348623157e308',
	'1.7976931348623158e308',          -- rounds down to DBL_MAX
	'2.2250738585072014e-308',         -- smallest normal
	'2.2250738585072011e-308',         -- just below: subnormal, rounds up
	'5e-324', '4.9406564584124654e-324', '3e-324', '2.5e-324',
	'9007199254740993.0',              -- 2^53 + 1: ties to even, 2^53
	'9007199254740995.0',              -- ties to even, 2^53 + 4
	'1.00000000000000011102230246251565404236316680908203125',  -- exact tie: to even (1.0)
	'1.00000000000000011102230246251565404236316680908203126',  -- just above the tie
	'123456789012345678901234567890',
	'9223372036854775807.5',
	'0.000001', '1e-7', '12345.67', '-98765.4321', '3.141592653589793238462643383279',
	'1e22', '1e23', '8.98846567431158e307', '1e308', '1e-300'
]) AS t;

-- beyond double's range (it would become infinity, or 0 for a nonzero
-- number): the exact decimal128, coefficient at the display scale
SELECT (bson_number(t)).* FROM unnest(ARRAY[
	'1e309', '-1e309', '1e400', '1e-400', '-1e-400', '2e-324', '1.000e-400',
	'1.7976931348623159e308',          -- rounds up to infinity as a double
	'123456789012345678901234567890123.4e300',  -- 34 digits
	'1e6111', '1e6144', '9.999999999999999999999999999999999e6144',
	'1e-6176', '1e-6100', '12.3400e-6170'
]) AS t;
