-- Malformed BSON: every rule of the validation broken once.  Each case
-- raises 22P03 with the byte offset and the problem (from_bson and
-- bson_to_json validate the same way), and bson_is_valid says false
-- without raising.
CREATE FUNCTION check_invalid(label text, b bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	detail text;
	message text;
BEGIN
	IF bson_is_valid(b) THEN
		RETURN label || ': VALID?';
	END IF;
	BEGIN
		PERFORM from_bson(b);
		RETURN label || ': from_bson accepted it';
	EXCEPTION WHEN others THEN
		GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
			detail = PG_EXCEPTION_DETAIL;
	END;
	BEGIN
		PERFORM bson_to_json(b);
		RETURN label || ': bson_to_json accepted it';
	EXCEPTION WHEN others THEN
		NULL;
	END;
	RETURN format('%s: %s %s: %s', label, state, message, detail);
END
$$;

CREATE FUNCTION le32(n int) RETURNS bytea IMMUTABLE LANGUAGE sql AS $$
	SELECT set_byte(set_byte(set_byte(set_byte('\x00000000'::bytea, 0, n & 255),
	                                  1, (n >> 8) & 255), 2, (n >> 16) & 255), 3, (n >> 24) & 255)
$$;

-- whole inputs, as they are
SELECT check_invalid(label, b::bytea) FROM (VALUES
  ('empty input', '\x'),
  ('4 bytes', '\x05000000'),
  ('length below 5', '\x0400000000'),
  ('negative length', '\xffffffff00'),
  ('length beyond the input', '\x0600000000'),
  ('no final NUL', '\x0500000001'),
  ('trailing bytes', '\x050000000000'),
  ('length header shorter than the input', '\x08000000 0a 6100 00 00')
) v(label, b);

-- one element each, in a document whose length header is right: the
-- element's type byte is at offset 4, its key "a" at 5, its value at 7
SELECT check_invalid(label, le32(octet_length(e::bytea) + 5) || e::bytea || '\x00'::bytea)
FROM (VALUES
  ('unknown type 0x14', '\x14 6100'),
  ('unknown type 0x00', '\x00 6100'),
  ('unknown type 0x80', '\x80 6100'),
  ('key without NUL', '\x0a 61'),
  ('key: overlong 2-byte', '\x0a c0af 00'),
  ('key: overlong 3-byte', '\x0a e08080 00'),
  ('key: surrogate', '\x0a eda080 00'),
  ('key: above U+10FFFF', '\x0a f4908080 00'),
  ('key: truncated sequence', '\x0a e282 00'),
  ('key: lone continuation byte', '\x0a 80 00'),
  ('string length 0', '\x02 6100 00000000'),
  ('string length negative', '\x02 6100 ffffffff 00'),
  ('string length beyond the document', '\x02 6100 05000000 6100'),
  ('string without NUL', '\x02 6100 02000000 6161'),
  ('string invalid UTF-8', '\x02 6100 02000000 ff00'),
  ('string length truncated', '\x02 6100 0100'),
  ('JavaScript code length 0', '\x0d 6100 00000000'),
  ('symbol without NUL', '\x0e 6100 02000000 6161'),
  ('boolean 2', '\x08 6100 02'),
  ('boolean truncated', '\x08 6100'),
  ('double truncated', '\x01 6100 0000f03f'),
  ('int32 truncated', '\x10 6100 0100'),
  ('int64 truncated', '\x12 6100 01000000'),
  ('datetime truncated', '\x09 6100 01000000'),
  ('timestamp truncated', '\x11 6100 01000000'),
  ('ObjectId truncated', '\x07 6100 0102030405060708'),
  ('decimal128 truncated', '\x13 6100 0102030405060708'),
  ('binary negative length', '\x05 6100 ffffffff 00'),
  ('binary length beyond the document', '\x05 6100 02000000 00 61'),
  ('binary subtype truncated', '\x05 6100 00000000'),
  ('binary subtype 2, inner length wrong', '\x05 6100 06000000 02 03000000 ffff'),
  ('binary subtype 2, shorter than 4', '\x05 6100 02000000 02 ffff'),
  ('embedded document length beyond its parent', '\x03 6100 06000000 00'),
  ('embedded document length below 5', '\x03 6100 04000000 00'),
  ('embedded document without NUL', '\x03 6100 05000000 01'),
  ('array with a bad element', '\x04 6100 09000000 08 3000 05 00'),
  ('regex pattern without NUL', '\x0b 6100 7878'),
  ('regex options without NUL', '\x0b 6100 78 00 69'),
  ('regex pattern invalid UTF-8', '\x0b 6100 ff 00 00'),
  ('regex options invalid UTF-8', '\x0b 6100 78 00 ff 00'),
  ('DBPointer namespace without NUL', '\x0c 6100 02000000 6e6e 0102030405060708090a0b0c'),
  ('DBPointer ObjectId truncated', '\x0c 6100 02000000 6e00 010203040506'),
  ('code with scope length below 14', '\x0f 6100 0d000000 02000000 6600 0500000000'),
  ('code with scope length beyond its document', '\x0f 6100 10000000 02000000 6600 0500000000'),
  ('code with scope longer than its parts', '\x0f 6100 10000000 02000000 6600 0500000000 00'),
  ('code with scope, scope beyond its length', '\x0f 6100 0f000000 02000000 6600 0600000000'),
  ('code with scope, code beyond its length', '\x0f 6100 0f000000 09000000 6600 0500000000'),
  ('code with scope, invalid scope', '\x0f 6100 13000000 02000000 6600 09000000 08 6200 07 00')
) v(label, e);

-- nesting deeper than the stack allows: 54001 from from_bson, false from
-- bson_is_valid (it never raises for the bytes it is given)
-- 100,000 levels of {"": {"": ...}}: each level is its length, 0x03, an
-- empty key, the level inside, and a NUL
CREATE TEMP TABLE deep AS
SELECT (SELECT string_agg(le32(5 + 7 * (100000 - n)) || '\x0300'::bytea, ''::bytea ORDER BY n)
        FROM generate_series(0, 99999) n)
       || '\x0500000000'::bytea || decode(repeat('00', 100000), 'hex') AS b;
SET max_stack_depth = '100kB';
SELECT octet_length(b), bson_is_valid(b) FROM deep;
SELECT from_bson(b) FROM deep;
SELECT bson_to_json(b) FROM deep;
RESET max_stack_depth;

-- every truncation of a valid document of every type is rejected, with
-- 22P03, never a crash: 0 .. length-1 bytes of it
CREATE TEMP TABLE full_doc AS
SELECT json_to_bson('{"d": 1.5, "s": "x\u00e9", "o": {"a": [1, {"b": null}]},
  "bin": {"$binary": {"base64": "AQID", "subType": "02"}}, "u": {"$undefined": true},
  "oid": {"$oid": "57e193d7a9cc81b4027498b5"}, "t": true, "dt": {"$date": {"$numberLong": "1"}},
  "re": {"$regularExpression": {"pattern": "a", "options": "i"}},
  "dbp": {"$dbPointer": {"$ref": "n", "$id": {"$oid": "57e193d7a9cc81b4027498b5"}}},
  "c": {"$code": "f"}, "sym": {"$symbol": "s"}, "cws": {"$code": "g", "$scope": {"x": 1}},
  "i": 1, "ts": {"$timestamp": {"t": 1, "i": 2}}, "l": {"$numberLong": "3"},
  "dec": {"$numberDecimal": "1.5"}, "min": {"$minKey": 1}, "max": {"$maxKey": 1}}', true) AS b;

CREATE FUNCTION truncation_errors(b bytea) RETURNS TABLE (sqlstate text, n bigint)
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	counts jsonb := '{}';
BEGIN
	FOR len IN 0 .. octet_length(b) - 1 LOOP
		IF bson_is_valid(substr(b, 1, len)) THEN
			counts := counts || jsonb_build_object('valid', coalesce((counts->>'valid')::int, 0) + 1);
			CONTINUE;
		END IF;
		BEGIN
			PERFORM from_bson(substr(b, 1, len));
			state := 'accepted';
		EXCEPTION WHEN others THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
		END;
		counts := counts || jsonb_build_object(state, coalesce((counts->>state)::int, 0) + 1);
		-- the same bytes with their length header fixed up to the truncation
		IF len >= 4 THEN
			BEGIN
				PERFORM bson_to_json(overlay(substr(b, 1, len) PLACING le32(len) FROM 1 FOR 4));
				state := 'accepted';
			EXCEPTION WHEN others THEN
				GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
			END;
			counts := counts || jsonb_build_object('fixed ' || state, coalesce((counts->>('fixed ' || state))::int, 0) + 1);
		END IF;
	END LOOP;
	RETURN QUERY SELECT key, value::bigint FROM jsonb_each_text(counts) ORDER BY key;
END
$$;
SELECT octet_length(b) FROM full_doc;
SELECT t.* FROM full_doc, truncation_errors(b) t;
-- and the whole document is fine
SELECT bson_is_valid(b), bson_to_json(b) IS NOT NULL FROM full_doc;
