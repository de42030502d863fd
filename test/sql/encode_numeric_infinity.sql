-- numeric +-Infinity, which PostgreSQL has from 14 on, as decimal128
-- infinities: a one-column row's type byte and value bytes.  PostgreSQL 13
-- has no numeric infinity (expected/numeric_infinity_1.out).
SELECT x, to_hex(get_byte(b, 4)) AS type, encode(substring(b FROM 9 FOR octet_length(b) - 9), 'hex') AS value
FROM unnest(ARRAY['Infinity', '-Infinity']::numeric[]) x, row_to_bson(ROW(x)) b;
SELECT bson_to_json(row_to_bson(ROW(ARRAY['-Infinity', '1.5', 'Infinity']::numeric[])));
