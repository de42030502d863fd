-- Runs in a WIN1252 database (make installcheck-encodings): a character
-- with no UTF-8 equivalent raises 22P05, naming the key or value.
SELECT getdatabaseencoding() <> 'WIN1252' AS skip_test \gset
\if :skip_test
\quit
\endif

-- 0x80 is the euro sign in WIN1252: e2 82 ac in UTF-8
SELECT encode(to_bson(jsonb_build_object(E'\x80', E'5 \x80')), 'hex');

-- 0x81 is unassigned in WIN1252: no UTF-8 equivalent
SELECT to_bson(jsonb_build_object('price', E'5 \x81'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_bson(jsonb_build_object('list', jsonb_build_array(jsonb_build_object(E'k\x81', 1))));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
-- past the first 64 kB piece of a long value
SELECT to_bson(jsonb_build_object('long', repeat(E'\xe9', 70000) || E'\x81'));
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT octet_length(to_bson(jsonb_build_object('long', repeat(E'\xe9', 70000) || E'\x80'))) AS doc_bytes;

-- reading back: the euro sign (UTF-8 e2 82 ac) is 0x80 in WIN1252; an emoji
-- has no WIN1252 equivalent: 22P05 naming where it is
SELECT convert_to(bson_to_json('\x12000000026b00060000003520e282ac0000'::bytea)::text, 'UTF8') AS utf8_of_json;
SELECT from_bson('\x12000000026b00060000003520e282ac0000'::bytea)->>'k' = E'5 \x80' AS euro_ok;
SELECT bson_to_json('\x13000000026b000700000078f09f9880790000'::bytea);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT from_bson('\x13000000026b000700000078f09f9880790000'::bytea);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
