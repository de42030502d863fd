-- Strings and keys: BSON strings are int32 length (bytes + 1), UTF-8, NUL;
-- keys are UTF-8 C strings.

-- unaligned output: psql's column widths for emoji differ between versions
\pset format unaligned

-- ASCII keys of 0, 1, 24, 25, 26 and 100 bytes: both sides of the fast
-- path's 25-byte threshold
SELECT n AS key_bytes, encode(to_bson(jsonb_build_object(repeat('k', n), 1)), 'hex')
FROM unnest(ARRAY[0, 1, 24, 25, 26]) AS n;
SELECT octet_length(b) AS doc_bytes,
       substring(b FROM 6 FOR 100) = convert_to(repeat('k', 100), 'UTF8') AS key_ok,
       get_byte(b, 105) AS key_nul
FROM to_bson(jsonb_build_object(repeat('k', 100), 1)) AS b;

-- non-ASCII keys of the same lengths in bytes (é is 2 bytes, 東 3, 😀 4)
SELECT k, octet_length(convert_to(k, 'UTF8')) AS key_bytes,
       encode(to_bson(jsonb_build_object(k, 1)), 'hex')
FROM unnest(ARRAY[
	'é', 'aé', '東', '😀', repeat('a', 22) || 'é', repeat('a', 23) || 'é',
	repeat('a', 24) || 'é', repeat('é', 12), repeat('é', 13), repeat('東', 8),
	'😀' || repeat('a', 21), repeat('a', 21) || '😀', repeat('a', 22) || '😀'
]) AS k;
SELECT octet_length(b) AS doc_bytes,
       substring(b FROM 6 FOR 100) = convert_to(repeat('東', 33) || 'a', 'UTF8') AS key_ok
FROM to_bson(jsonb_build_object(repeat('東', 33) || 'a', 1)) AS b;

-- string values: 1-, 2-, 3- and 4-byte UTF-8, around the threshold
SELECT s, encode(to_bson(jsonb_build_object('s', s)), 'hex')
FROM unnest(ARRAY[
	'a', 'é', '東', '😀', 'Zürich', '東京', 'Москва', 'a😀b',
	repeat('x', 24), repeat('x', 25), repeat('x', 26),
	repeat('x', 24) || 'é', repeat('x', 25) || 'é', 'é' || repeat('x', 24)
]) AS s;

-- escapes: JSON escapes are decoded by jsonb; BSON holds the characters
SELECT encode(to_bson('{"s": "q\"b\\s/n\nt\tr\rf\fb\b"}'), 'hex');
SELECT encode(to_bson('{"s": "\u0001\u001f\u007f\u00e9\u6771\ud83d\ude00"}'), 'hex');
SELECT encode(to_bson('{"k\"\\\n": "\u00e9"}'), 'hex');

-- long strings: 1 kB, 64 kB and 100 kB, ASCII and not; the bytes after the
-- length prefix are the UTF-8 text and a NUL
SELECT n, enc, octet_length(b) AS doc_bytes,
       get_byte(b, 7) + get_byte(b, 8) * 256 + get_byte(b, 9) * 65536 AS string_length_field,
       substring(b FROM 12 FOR octet_length(convert_to(s, 'UTF8'))) = convert_to(s, 'UTF8') AS text_ok,
       get_byte(b, octet_length(b) - 2) AS string_nul, get_byte(b, octet_length(b) - 1) AS doc_nul
FROM (VALUES (1000, 'ascii', repeat('x', 1000)),
             (65536, 'ascii', repeat('y', 65536)),
             (100000, 'ascii', repeat('z', 100000)),
             (100000, 'utf8', repeat('é東😀a', 10000))) AS v(n, enc, s),
     to_bson(jsonb_build_object('s', s)) AS b;
