-- Runs in a LATIN1 database (make installcheck-encodings): keys and strings
-- are converted to UTF-8; ASCII passes through.  The file is pure ASCII and
-- writes LATIN1 bytes with E'\x..' escapes, so the client encoding does not
-- matter.
SELECT getdatabaseencoding() <> 'LATIN1' AS skip_test \gset
\if :skip_test
\quit
\endif

-- e-acute is 0xe9 in LATIN1 and c3 a9 in UTF-8
SELECT encode(to_bson(jsonb_build_object(E'caf\xe9', E'cr\xe8me br\xfbl\xe9e')), 'hex');
SELECT encode(to_bson(jsonb_build_object('ascii', 'plain')), 'hex');

-- every LATIN1 character from 0xa0 to 0xff in one value: 96 characters,
-- 192 bytes of UTF-8
SELECT octet_length(b) AS doc_bytes,
       substring(b FROM 12 FOR 192) = convert_to(s, 'UTF8') AS utf8_ok
FROM (SELECT string_agg(chr(c), '' ORDER BY c) AS s FROM generate_series(160, 255) c) x,
     to_bson(jsonb_build_object('s', s)) AS b;

-- keys of 24, 25 and 26 bytes with a non-ASCII last byte, first byte, and
-- none, fast path on and off: identical bytes
CREATE TEMP TABLE samples AS
SELECT row_number() OVER () AS id,
       jsonb_build_object(k, k, 'arr', jsonb_build_array(k, 1)) AS doc
FROM (SELECT repeat('a', n - 1) || E'\xfc' AS k FROM generate_series(1, 30) n
      UNION ALL SELECT E'\xdf' || repeat('b', n - 1) FROM generate_series(1, 30) n
      UNION ALL SELECT repeat('c', n) FROM generate_series(0, 30) n) s;
SET bson_out.ascii_fast_path = on;
CREATE TEMP TABLE fast AS SELECT id, to_bson(doc) AS b FROM samples;
SET bson_out.ascii_fast_path = off;
CREATE TEMP TABLE general AS SELECT id, to_bson(doc) AS b FROM samples;
RESET bson_out.ascii_fast_path;
SELECT count(*) AS compared, count(*) FILTER (WHERE f.b IS DISTINCT FROM g.b) AS differing
FROM fast f JOIN general g USING (id);

-- every key comes out as PostgreSQL's own conversion to UTF-8 gives it
SELECT count(*) AS keys_checked,
       count(*) FILTER (WHERE position(convert_to(k, 'UTF8') || '\x00'::bytea IN b) = 0) AS wrong
FROM (SELECT s.doc, f.b FROM samples s JOIN fast f USING (id)) x,
     LATERAL jsonb_object_keys(doc) AS k;

-- long strings with conversion (the buffer grows beyond its estimate: every
-- character doubles)
SELECT octet_length(b) AS doc_bytes,
       substring(b FROM 12 FOR 200000) = convert_to(repeat(E'\xe9', 100000), 'UTF8') AS utf8_ok
FROM to_bson(jsonb_build_object('s', repeat(E'\xe9', 100000))) AS b;

-- json_to_bson: raw LATIN1 text and \u escapes both become UTF-8; an escape
-- for a character LATIN1 cannot hold is refused, as PostgreSQL's own JSON
-- input refuses it in this database
SELECT encode(json_to_bson(E'{"caf\xe9": "\\u00e9t\xe9", "k": "\\u00fc"}'), 'hex');
SELECT json_to_bson('{"s": "\u6771"}');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT json_to_bson(E'{"k": "\xfc"}') = to_bson(E'{"k": "\xfc"}'::jsonb) AS same_as_jsonb;

-- row_to_bson: text columns are converted the same way
SELECT encode(row_to_bson(ROW(E'caf\xe9'::text, E'\xfc'::char(2), E'n\xe4me'::name)), 'hex');

-- reading back (from_bson, bson_to_json): UTF-8 strings and keys come out in
-- LATIN1; a character LATIN1 cannot hold is 22P05 naming where it is
SELECT from_bson(to_bson(jsonb_build_object(E'caf\xe9', E'cr\xe8me br\xfbl\xe9e'))) =
       jsonb_build_object(E'caf\xe9', E'cr\xe8me br\xfbl\xe9e') AS round_trip;
SELECT bson_to_json(to_bson(jsonb_build_object(E'caf\xe9', E'cr\xe8me\n')))::text =
       E'{"caf\xe9": "cr\xe8me\\n"}' AS json_text_ok;
SELECT convert_to(bson_to_json(json_to_bson(E'{"k": "\\u00e9\\u0000x"}'))::text, 'UTF8');
-- "a": {"b": ["x", "€"]} and {"€": 1}, built in UTF-8 bytes
SELECT from_bson('\x29000000036100210000000462001900000002300002000000780002310004000000e282ac00000000'::bytea);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT bson_to_json('\x29000000036100210000000462001900000002300002000000780002310004000000e282ac00000000'::bytea);
SELECT bson_to_json('\x0e00000010e282ac000100000000'::bytea);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- the byte offset counts from the start of the string, past a NUL
SELECT bson_to_json('\x1300000002730007000000616200e282ac0000'::bytea);
-- an array key that is not a digit, and a long key, in the path: escaped, cut
SELECT bson_to_json('\x190000000461001100000002c3a90004000000e282ac000000'::bytea);
SELECT from_bson('\x73000000026b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b0004000000e282ac0000'::bytea);

-- the document model in a LATIN1 database: names and values as UTF-8 in the
-- documents; bson_collections' names and metadata are text, converted to
-- the client's encoding as all text is
SELECT E'caf\xe9' AS tname, E'na\xefve' AS cname \gset
CREATE TABLE :"tname" (id int PRIMARY KEY, :"cname" text UNIQUE);
INSERT INTO :"tname" VALUES (1, E'cr\xe8me');
SELECT encode(bson_document(t), 'hex') FROM :"tname" t;
SELECT convert_to(coll, 'UTF8') AS coll_utf8,
       position(convert_to(E'"na\xefve":', 'UTF8') IN convert_to(metadata, 'UTF8')) > 0 AS index_key_utf8
FROM bson_collections(ARRAY['public.' || :'tname']);
DROP TABLE :"tname";
