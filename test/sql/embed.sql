-- Child tables embedded in their parent's documents: the declarations
-- (bson_embed, bson_unembed) and each refusal, the documents
-- (bson_document of a parent; the set-based query of bson_collections,
-- which must give the same bytes) and what bson_collections says.  In a
-- database of its own, so that bson_collections sees only these tables.
SELECT current_database() AS regress_db \gset
CREATE DATABASE bson_out_embed;
\c bson_out_embed
CREATE EXTENSION bson_out;

CREATE TABLE orders (id int PRIMARY KEY, customer text);
CREATE TABLE order_lines (
	order_id int REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE,
	line_no int, item text, qty int,
	PRIMARY KEY (order_id, line_no));
CREATE TABLE line_taxes (
	order_id int, line_no int, tax text, rate numeric,
	PRIMARY KEY (order_id, line_no, tax),
	FOREIGN KEY (order_id, line_no) REFERENCES order_lines ON DELETE CASCADE ON UPDATE CASCADE);
CREATE TABLE shipping (order_id int PRIMARY KEY REFERENCES orders, address text);

-- the documents of a table as bson_collections reads them, and as
-- bson_document makes them one row at a time: the same bytes
CREATE FUNCTION same_documents(tab regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	q text;
	set_based bytea[];
	one_by_one bytea[];
BEGIN
	SELECT query INTO q FROM bson_collections() WHERE source = tab;
	EXECUTE format('SELECT array_agg(d ORDER BY d) FROM (%s) s(d)', q) INTO set_based;
	EXECUTE format('SELECT array_agg(bson_document(t) ORDER BY bson_document(t)) FROM %s t', tab)
		INTO one_by_one;
	RETURN CASE WHEN set_based IS NOT DISTINCT FROM one_by_one
		THEN 'same ' || coalesce(cardinality(set_based), 0) || ' documents'
		ELSE 'DIFFERENT' END;
END $$;

-- nothing declared: flat documents
SELECT bson_to_json(bson_document(o)) FROM orders o;
SELECT coll, embedded FROM bson_collections() ORDER BY coll;

-- the refusals
SELECT bson_embed('orders', 'order_lines', 'x');            -- no foreign key that way
SELECT bson_embed('order_lines', 'orders', 'lines', foreign_key => 'order_lines_pkey');
SELECT bson_embed('order_lines', 'orders', 'lines', foreign_key => 'nope');
SELECT bson_embed('order_lines', 'orders', '_id');
SELECT bson_embed('order_lines', 'orders', 'a.b');
SELECT bson_embed('order_lines', 'orders', '$x');
SELECT bson_embed('order_lines', 'orders', '');
SELECT bson_embed('order_lines', 'orders', 'customer');    -- a column of the parent
SELECT bson_embed('order_lines', 'orders', 'lines', shape => 'document');
SELECT bson_embed('order_lines', 'orders', 'lines', shape => 'set');
SELECT bson_embed('order_lines', 'orders', 'lines', columns => '{item,qty}');
SELECT bson_embed('order_lines', 'orders', 'lines', columns => '{line_no,nope}');
SELECT bson_embed('shipping', 'orders', 'ship', shape => 'array');
SELECT bson_embed(NULL, 'orders', 'x');
SELECT bson_embed('order_lines', 'orders', NULL);
SELECT bson_unembed('order_lines');

-- a foreign key that is not to the parent's key
CREATE TABLE codes (id int PRIMARY KEY, code text UNIQUE);
CREATE TABLE coded (id int PRIMARY KEY, code text REFERENCES codes (code));
SELECT bson_embed('coded', 'codes', 'coded');
-- two foreign keys to one parent
CREATE TABLE transfers (id int PRIMARY KEY, src int REFERENCES codes, dst int REFERENCES codes);
ALTER TABLE transfers REPLICA IDENTITY FULL;
SELECT bson_embed('transfers', 'codes', 'transfers');
SELECT bson_embed('transfers', 'codes', 'transfers', foreign_key => 'transfers_src_fkey');
SELECT bson_unembed('transfers');
-- a child without a key
CREATE TABLE notes (code_id int REFERENCES codes, note text);
SELECT bson_embed('notes', 'codes', 'notes');
-- a replica identity that does not log the old parent
CREATE TABLE events (id int PRIMARY KEY, code_id int REFERENCES codes, at date);
SELECT bson_embed('events', 'codes', 'events');
ALTER TABLE events REPLICA IDENTITY FULL;
SELECT bson_embed('events', 'codes', 'events');
SELECT bson_unembed('events');
-- an element key whose order MongoDB does not share
CREATE TABLE readings (code_id int REFERENCES codes, at timestamptz, v float8,
	PRIMARY KEY (code_id, at));
SELECT bson_embed('readings', 'codes', 'readings');
-- a partition, an unlogged table
CREATE TABLE parted (id int, region text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
CREATE TABLE parted_items (id int, region text, n int,
	PRIMARY KEY (id, region, n), FOREIGN KEY (id, region) REFERENCES parted) PARTITION BY LIST (region);
CREATE TABLE parted_items_eu PARTITION OF parted_items FOR VALUES IN ('eu');
SELECT bson_embed('parted_items_eu', 'parted', 'items');
CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY, code_id int REFERENCES codes);
SELECT bson_embed('scratch', 'codes', 'scratch');
-- only the owner of both tables
CREATE ROLE bson_embed_other;
SET ROLE bson_embed_other;
SELECT bson_embed('order_lines', 'orders', 'lines');
INSERT INTO bson_embedding VALUES ('order_lines', 'orders', 'order_lines_order_id_fkey', 'lines', 'array', false, NULL);
SELECT count(*) FROM bson_embedding;
RESET ROLE;

-- order -> lines -> taxes, and a one-to-one shipping address
SELECT bson_embed('order_lines', 'orders', 'lines');
SELECT bson_embed('line_taxes', 'order_lines', 'taxes');
SELECT bson_embed('shipping', 'orders', 'ship');
SELECT bson_embed('order_lines', 'orders', 'lines2');       -- already embedded
SELECT child, parent, foreign_key, field, shape, keep_collection, columns
FROM bson_embedding ORDER BY field;

-- a cycle, and a parent's key that does not hold its own foreign key
CREATE TABLE a (id int PRIMARY KEY, b_id int);
CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a);
ALTER TABLE a ADD FOREIGN KEY (b_id) REFERENCES b;
ALTER TABLE a REPLICA IDENTITY FULL;
ALTER TABLE b REPLICA IDENTITY FULL;
SELECT bson_embed('b', 'a', 'bs');
SELECT bson_embed('a', 'b', 'as');
CREATE TABLE c (id int PRIMARY KEY, b_id int REFERENCES b);
ALTER TABLE c REPLICA IDENTITY FULL;
SELECT bson_embed('c', 'b', 'cs');
SELECT bson_unembed('b');
CREATE TABLE x (k int PRIMARY KEY);
CREATE TABLE y (k int PRIMARY KEY REFERENCES x);
ALTER TABLE x ADD FOREIGN KEY (k) REFERENCES y;
SELECT bson_embed('y', 'x', 'y');
SELECT bson_embed('x', 'y', 'x');
SELECT bson_unembed('y');
CREATE TABLE self (k int PRIMARY KEY REFERENCES self);
SELECT bson_embed('self', 'self', 'self');
CREATE TABLE twice (id int PRIMARY KEY, code_id int REFERENCES codes);
ALTER TABLE twice REPLICA IDENTITY FULL;
SELECT bson_embed('twice', 'codes', 'transfers');
SELECT bson_embed('transfers', 'codes', 'transfers', foreign_key => 'transfers_dst_fkey');
SELECT bson_unembed('twice');
-- too deep: five levels below the top
CREATE TABLE l0 (k0 int PRIMARY KEY);
CREATE TABLE l1 (k0 int REFERENCES l0, k1 int, PRIMARY KEY (k0, k1));
CREATE TABLE l2 (k0 int, k1 int, k2 int, PRIMARY KEY (k0, k1, k2), FOREIGN KEY (k0, k1) REFERENCES l1);
CREATE TABLE l3 (k0 int, k1 int, k2 int, k3 int, PRIMARY KEY (k0, k1, k2, k3), FOREIGN KEY (k0, k1, k2) REFERENCES l2);
CREATE TABLE l4 (k0 int, k1 int, k2 int, k3 int, k4 int, PRIMARY KEY (k0, k1, k2, k3, k4), FOREIGN KEY (k0, k1, k2, k3) REFERENCES l3);
CREATE TABLE l5 (k0 int, k1 int, k2 int, k3 int, k4 int, k5 int, PRIMARY KEY (k0, k1, k2, k3, k4, k5), FOREIGN KEY (k0, k1, k2, k3, k4) REFERENCES l4);
SELECT bson_embed('l1', 'l0', 'f');
SELECT bson_embed('l2', 'l1', 'f');
SELECT bson_embed('l3', 'l2', 'f');
SELECT bson_embed('l4', 'l3', 'f');
SELECT bson_embed('l5', 'l4', 'f');
INSERT INTO l0 VALUES (1);
INSERT INTO l1 VALUES (1, 1);
INSERT INTO l2 VALUES (1, 1, 1);
INSERT INTO l3 VALUES (1, 1, 1, 1);
INSERT INTO l4 VALUES (1, 1, 1, 1, 1), (1, 1, 1, 1, 2);
SELECT bson_to_json(bson_document(l)) FROM l0 l;
SELECT same_documents('l0');

-- the documents: arrays in their key's order, empty arrays, a one-to-one
-- null when absent (left out with omit_nulls), two levels, composite keys
INSERT INTO orders VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
INSERT INTO order_lines VALUES (1, 10, 'pen', 1), (1, 2, 'ink', 3), (2, 1, 'pad', 2);
INSERT INTO line_taxes VALUES (1, 2, 'vat', 0.2), (1, 2, 'Eco', 0.01), (1, 2, 'eco', 0.02);
INSERT INTO shipping VALUES (1, 'here');
SELECT bson_to_json(bson_document(o)) FROM orders o ORDER BY id;
SELECT bson_to_json(bson_document(o, omit_nulls => true)) FROM orders o WHERE id = 3;
SELECT same_documents('orders');
SELECT coll, embedded FROM bson_collections() WHERE coll IN ('orders', 'order_lines', 'line_taxes', 'shipping');
-- the declarations' table is no collection
SELECT count(*) FROM bson_collections() WHERE coll = 'bson_embedding';

-- text keys in byte order, as MongoDB compares strings; NULL foreign keys:
-- the row belongs to no parent
CREATE TABLE tags (code_id int REFERENCES codes, tag text, PRIMARY KEY (code_id, tag));
CREATE TABLE loose (id int PRIMARY KEY, code_id int REFERENCES codes, label varchar);
ALTER TABLE loose REPLICA IDENTITY FULL;
SELECT bson_embed('tags', 'codes', 'tags', columns => '{tag}');
SELECT bson_embed('loose', 'codes', 'loose', keep_collection => true);
INSERT INTO codes VALUES (1, 'c1'), (2, 'c2');
INSERT INTO tags VALUES (1, 'b'), (1, 'B'), (1, 'a'), (1, 'é'), (1, 'Z');
INSERT INTO loose VALUES (1, 1, 'one'), (2, NULL, 'none'), (3, 2, 'two');
SELECT bson_to_json(bson_document(c)) FROM codes c ORDER BY id;
SELECT same_documents('codes');
-- kept: loose is its own collection too; tags is not
SELECT coll FROM bson_collections() WHERE coll IN ('codes', 'tags', 'loose') ORDER BY coll;

-- a partitioned parent and a partitioned child
SELECT bson_embed('parted_items', 'parted', 'items');
CREATE TABLE parted_us PARTITION OF parted FOR VALUES IN ('us');
CREATE TABLE parted_items_us PARTITION OF parted_items FOR VALUES IN ('us');
INSERT INTO parted VALUES (1, 'eu'), (1, 'us');
INSERT INTO parted_items VALUES (1, 'eu', 2), (1, 'eu', 1), (1, 'us', 7);
SELECT bson_to_json(bson_document(p)) FROM parted p ORDER BY region;
SELECT bson_to_json(bson_document(p)) FROM parted_us p;
SELECT same_documents('parted_eu'), same_documents('parted_us');

-- bson_array_agg on its own
SELECT bson_to_json(to_bson(jsonb_build_object('a', 1)) || ''::bytea) IS NOT NULL;
SELECT bson_to_json(json_to_bson(format('{"v": []}')::json)) AS empty_example;
SELECT bson_array_agg(d) IS NULL AS no_rows FROM (SELECT to_bson('{}') d WHERE false) s;
SELECT bson_array_agg(d) FROM (VALUES ('\x00'::bytea)) s(d);
SELECT bson_array_agg(NULL::bytea);

-- a DROP of the foreign key or of a table removes its declarations (an
-- event trigger); a declaration a DDL breaks otherwise is an error where it
-- is used, naming it
ALTER TABLE shipping DROP CONSTRAINT shipping_order_id_fkey;
SELECT count(*) FROM bson_embedding WHERE child = 'shipping'::regclass;
SELECT bson_to_json(bson_document(o)) FROM orders o WHERE id = 2;
CREATE TABLE gone (code_id int REFERENCES codes, n int, PRIMARY KEY (code_id, n));
SELECT bson_embed('gone', 'codes', 'gone');
DROP TABLE gone;
SELECT count(*) FROM bson_embedding WHERE field = 'gone';
ALTER TABLE orders ADD COLUMN lines int;
SELECT count(*) FROM bson_collections();
ALTER TABLE orders DROP COLUMN lines;
ALTER TABLE loose REPLICA IDENTITY DEFAULT;
SELECT bson_to_json(bson_document(c)) FROM codes c WHERE id = 1;
ALTER TABLE loose REPLICA IDENTITY FULL;
ALTER TABLE tags RENAME CONSTRAINT tags_code_id_fkey TO tags_fk;
SELECT bson_to_json(bson_document(c)) FROM codes c WHERE id = 1;
ALTER TABLE tags RENAME CONSTRAINT tags_fk TO tags_code_id_fkey;
-- bson_unembed writes as the table's owner: nothing of the caller's
-- search_path runs there
CREATE SCHEMA evil;
CREATE FUNCTION evil.eq(oid, oid) RETURNS boolean LANGUAGE plpgsql AS
	$$ BEGIN RAISE EXCEPTION 'the caller''s operator ran'; END $$;
CREATE OPERATOR evil.= (FUNCTION = evil.eq, LEFTARG = oid, RIGHTARG = oid);
SET search_path = evil, pg_catalog, public;
SELECT bson_unembed('tags');
RESET search_path;
DROP SCHEMA evil CASCADE;
SELECT bson_embed('tags', 'codes', 'tags', columns => '{tag}');
SELECT same_documents('orders');

-- the change events: where an embedded row is (embeddedIn, with its
-- element) and was (embeddedFrom), a parent's embedded fields
-- (embeddedFields); with schema-events, an embedding declared is a modify
-- of the parent's collection and a drop of the child's
CREATE FUNCTION show(data bytea) RETURNS text
LANGUAGE sql AS $$
	SELECT concat_ws(' ', j ->> 'operationType', j -> 'ns' ->> 'coll',
					 j -> 'documentKey' -> '_id',
					 CASE WHEN j ? 'embeddedFrom' THEN 'from ' || ((j -> 'embeddedFrom') - 'ns')::text END,
					 CASE WHEN j ? 'embeddedIn' THEN 'in ' || ((j -> 'embeddedIn') - 'ns')::text END,
					 CASE WHEN j ? 'embeddedFields' THEN 'fields ' || (j -> 'embeddedFields')::text END,
					 CASE WHEN j ? 'operationDescription' THEN
						 (j -> 'operationDescription' ->> 'table') || ' ' ||
						 coalesce(j -> 'operationDescription' ->> 'shape', '') END)
	FROM (SELECT bson_to_json(data)::jsonb AS j) x
$$;
TRUNCATE orders, order_lines, line_taxes, shipping;
ALTER TABLE shipping ADD FOREIGN KEY (order_id) REFERENCES orders ON DELETE CASCADE ON UPDATE CASCADE;
SELECT bson_embed('shipping', 'orders', 'ship');
SELECT 'init' FROM pg_create_logical_replication_slot('embed', 'bson_out');
INSERT INTO orders VALUES (1, 'ann'), (2, 'bob');
INSERT INTO order_lines VALUES (1, 1, 'pen', 1), (1, 2, 'ink', 3);
INSERT INTO line_taxes VALUES (1, 2, 'vat', 0.2);
INSERT INTO shipping VALUES (1, 'here');
UPDATE order_lines SET qty = 5 WHERE line_no = 2;
-- a move to another parent (the key holds the foreign key: a key change)
UPDATE order_lines SET order_id = 2 WHERE line_no = 1;
-- the parent's key: its rows follow by ON UPDATE CASCADE
UPDATE orders SET id = 3 WHERE id = 1;
UPDATE orders SET customer = 'cy' WHERE id = 3;
DELETE FROM shipping;
TRUNCATE line_taxes;
SELECT show(data) FROM pg_logical_slot_get_binary_changes('embed', NULL, NULL);
-- REPLICA IDENTITY FULL: an update that moves the row names both places
ALTER TABLE loose REPLICA IDENTITY FULL;
UPDATE loose SET code_id = 2 WHERE id = 1;
UPDATE loose SET label = 'uno' WHERE id = 1;
UPDATE loose SET code_id = NULL WHERE id = 1;
SELECT show(data) FROM pg_logical_slot_get_binary_changes('embed', NULL, NULL);
-- declared while streaming, with schema events: the parent's documents
-- have another shape, the child's collection is gone
CREATE TABLE extras (order_id int REFERENCES orders, n int, PRIMARY KEY (order_id, n));
SELECT count(*) FROM pg_logical_slot_get_binary_changes('embed', NULL, NULL, 'schema-events', 'on');
SELECT bson_embed('extras', 'orders', 'extras');
SELECT regexp_replace(show(data), '"model":\{[^}]*\}', '"model":{...}', 'g')
FROM pg_logical_slot_get_binary_changes('embed', NULL, NULL, 'schema-events', 'on', 'include-tables', 'public.orders, public.extras');
SELECT pg_drop_replication_slot('embed');

\c :regress_db
DROP DATABASE bson_out_embed;
DROP ROLE bson_embed_other;
