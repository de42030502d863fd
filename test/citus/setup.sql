-- The tables of the Citus stage: loc (a plain table), dist (distributed,
-- 32 shards) and ref (a reference table), with the same rows.  The rows are
-- made once, in loc, and copied: the other tables then hold the same bytes,
-- including the BSON columns that the readers take.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TYPE pair AS (a int, b text);

CREATE TABLE loc (
	id int PRIMARY KEY,
	doc jsonb,					-- plain jsonb for to_bson
	ej jsonb,					-- Extended JSON v2 wrappers
	lej jsonb,					-- legacy Extended JSON forms
	js json,					-- JSON text: key order and duplicate keys kept
	n numeric,
	f float8,
	ts timestamptz,
	d date,
	iv interval,
	b bytea,
	ia int[],
	ta text[],
	p pair,
	pa pair[],
	u uuid,
	flag boolean,
	bs bytea,					-- one BSON document, for the readers
	stream bytea				-- several concatenated, for bson_documents
);

INSERT INTO loc (id, doc, ej, lej, js, n, f, ts, d, iv, b, ia, ta, p, pa, u, flag)
SELECT g,
	jsonb_build_object(
		'id', g,
		'name', 'näme ' || g || ' ✓ 日本語 ' || chr(128512 + g % 50),
		'big', (repeat('9', 1 + g % 40) || '.' || repeat('1', 1 + g % 30))::numeric,
		'digits', 3.14159265358979323846264338327950288419716939937510582097494459,
		'int', (g::bigint * 1000000007) * (CASE WHEN g % 2 = 0 THEN -1 ELSE 1 END),
		'exp', (g || 'e' || (g % 300 - 150))::numeric,
		'frac', g / 7.0,
		'nested', jsonb_build_array(g, jsonb_build_array('x', NULL, true,
			jsonb_build_array(g % 3, jsonb_build_array())), jsonb_build_object('k', g::text, 'e', '{}'::jsonb)),
		'flag', g % 2 = 0,
		'nothing', NULL,
		'pad', repeat('p', g % 200)),
	jsonb_build_object(
		'_id', jsonb_build_object('$oid', lpad(to_hex(g), 24, '0')),
		'when', jsonb_build_object('$date', jsonb_build_object('$numberLong', (1700000000000 + g * 1000)::text)),
		'iso', jsonb_build_object('$date', '2024-01-02T03:04:05.678Z'),
		'n', jsonb_build_object('$numberLong', (g::bigint * 1000000007)::text),
		'i', jsonb_build_object('$numberInt', (g % 1000)::text),
		'dec', jsonb_build_object('$numberDecimal', g || '.25E-3'),
		'dbl', jsonb_build_object('$numberDouble', CASE WHEN g % 50 = 0 THEN 'NaN' ELSE (g / 8.0)::text END),
		'bin', jsonb_build_object('$binary', jsonb_build_object('base64',
			encode(decode(md5(g::text), 'hex'), 'base64'), 'subType', '00')),
		'uuid', jsonb_build_object('$uuid', md5(g::text)::uuid::text),
		'ts', jsonb_build_object('$timestamp', jsonb_build_object('t', g, 'i', 1)),
		're', jsonb_build_object('$regularExpression', jsonb_build_object('pattern', '^ä' || g, 'options', 'mi')),
		'min', jsonb_build_object('$minKey', 1),
		'ref', jsonb_build_object('$ref', 'c', '$id', g)),
	jsonb_build_object(
		'when', jsonb_build_object('$date', 1700000000000 + g),
		'bin', jsonb_build_object('$binary', encode(decode(md5(g::text), 'hex'), 'base64'), '$type', '80'),
		're', jsonb_build_object('$regex', 'a' || g, '$options', 'ix'),
		'plain', g),
	('{"z": ' || g || ', "a": "ü", "z": [1.50, 2e3, -0], "doc": {"k": "' || g || '"}, "n": '
		|| repeat('7', 1 + g % 35) || '}')::json,
	CASE WHEN g % 97 = 0 THEN 'NaN' ELSE g * 12345.678901234567890123456789 END,
	CASE WHEN g % 89 = 0 THEN 'Infinity' ELSE g / 3.0 END,
	timestamptz '2024-01-01 00:00:00+00' + g * interval '1 hour 7 minutes 3.123456 seconds',
	date '2000-01-01' + g,
	make_interval(0, g % 13, 0, g % 40, g % 24, g % 60, g / 7.0),
	decode(md5(g::text), 'hex'),
	CASE WHEN g % 5 = 0 THEN ARRAY[[g, -g], [NULL, g * g]] ELSE ARRAY[g, -g, NULL] END,
	ARRAY['ä', g::text, NULL, ''],
	ROW(g, 'b' || g)::pair,
	ARRAY[ROW(g, 'x')::pair, ROW(NULL, NULL)::pair],
	md5(g::text)::uuid,
	g % 2 = 0
FROM generate_series(1, 2000) g;

-- some NULLs, for omit_nulls and the STRICT functions
UPDATE loc SET doc = NULL, n = NULL, iv = NULL, p = NULL, ta = NULL WHERE id % 10 = 3;

UPDATE loc SET bs = to_bson(doc),
	stream = to_bson(ej, true) || coalesce(to_bson(doc), '\x') || to_bson('{}'::jsonb);

CREATE TABLE dist (LIKE loc INCLUDING ALL);
CREATE TABLE ref (LIKE loc INCLUDING ALL);
SET citus.shard_count = 32;
SELECT create_distributed_table('dist', 'id');
SELECT create_reference_table('ref');
INSERT INTO dist SELECT * FROM loc;
INSERT INTO ref SELECT * FROM loc;

-- the target of the conversion in place, on the same shards as dist
CREATE TABLE t2 (id int PRIMARY KEY, bson bytea);
SELECT create_distributed_table('t2', 'id', colocate_with => 'dist');
