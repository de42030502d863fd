#!/usr/bin/env bash
# The main job on sample data: install what is missing, build and install
# bson_out (and pg_bsonexport), start a throwaway cluster, convert sample rows
# with to_bson (and a mongoexport-style line with json_to_bson), show the BSON
# as pymongo's independent decoder reads it, export the table to a .bson file
# with pg_bsonexport (mongorestore's format) and read that file back, with
# pymongo and with bson_documents/bson_to_json inside the database; then
# stream a few changes through bson_out as a logical decoding output plugin
# and show the change events; then the whole pipeline into a MongoDB-protocol
# server (FerretDB, built once, on a loopback port): pg_bsonstream --to makes
# the first copy there and applies a change made in PostgreSQL, which
# pymongo then reads from the collection.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

source scripts/ferretdb.sh
install_packages libpq-dev libmongoc-dev pkg-config
build_install
logical_decoding_opts
cluster_start

psql -qX -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION bson_out;
CREATE TABLE people (id int, doc jsonb);
INSERT INTO people VALUES
  (1, '{"_id": 1, "name": "Ann", "email": "ann@example.com", "age": 34, "tags": ["admin", "ops"],
        "address": {"city": "Zürich", "zip": "8001"}, "balance": 1234.56, "active": true, "manager": null}'),
  (2, '{"_id": 2, "name": "東京 Tarō", "visits": 3000000000, "ratio": 0.1, "huge": 1e400, "tiny": 1e-400}'),
  (3, '{"_id": 3, "nested": {"a": [1, [2, 3], {"b": "c"}]}}');
\echo
\echo 'SELECT id, to_bson(doc) FROM people:'
SELECT id, octet_length(to_bson(doc)) AS bytes, encode(to_bson(doc), 'hex') AS bson FROM people ORDER BY id;
SQL

echo
echo "Decoded by pymongo's BSON codec (python3-bson), with the BSON type of each value:"
{
	psql -qXAt -c "SELECT encode(to_bson(doc), 'hex') FROM people ORDER BY id"
	# a mongoexport line: JSON text, key order kept, Extended JSON as BSON types
	psql -qXAt -c "SELECT encode(json_to_bson('{\"_id\": {\"\$oid\": \"5f0c8a3e9b1e8a2d4c6b7a90\"}, \"at\": {\"\$date\": \"2024-01-02T03:04:05.678Z\"}, \"n\": {\"\$numberLong\": \"42\"}, \"price\": {\"\$numberDecimal\": \"19.99\"}}', true), 'hex')"
} | "$PYTHON" -c '
import sys, bson
from bson.codec_options import CodecOptions
from bson.son import SON

def show(v):
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (k, show(x)) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    return "%r (%s)" % (v, type(v).__name__)

for line in sys.stdin:
    doc = bson.decode(bytes.fromhex(line.strip()), CodecOptions(document_class=SON))
    print(show(doc))
'

echo
echo "pg_bsonexport: the table as a .bson file (what mongorestore and bsondump read):"
pg_bsonexport --table people --column doc -o "$CLUSTER_DIR/people.bson"
ls -l "$CLUSTER_DIR/people.bson"
echo "The file read back by pymongo (bson.decode_file_iter):"
"$PYTHON" - "$CLUSTER_DIR/people.bson" <<'PY'
import sys, bson
from bson.codec_options import CodecOptions
from bson.son import SON
with open(sys.argv[1], "rb") as f:
    for doc in bson.decode_file_iter(f, CodecOptions(document_class=SON)):
        print(dict(doc))
PY
echo "The file read back inside the database (bson_documents, then bson_to_json):"
# the file is private (0600): the server, which reads it, runs as postgres
[ "$(id -u)" -eq 0 ] && chown postgres "$CLUSTER_DIR/people.bson"
psql -qX -v ON_ERROR_STOP=1 -v file="$CLUSTER_DIR/people.bson" <<'SQL'
SELECT bson_to_json(d) AS document FROM bson_documents(pg_read_binary_file(:'file')) AS d;
SQL

echo
echo "Change streams: bson_out as a logical decoding output plugin, one BSON change event per row change:"
psql -qX -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE orders (id int PRIMARY KEY, item text, qty int, price numeric(8,2), at timestamptz);
SELECT 'slot created' AS to_mongo FROM pg_create_logical_replication_slot('to_mongo', 'bson_out');
INSERT INTO orders VALUES (1, 'pen', 2, 1.50, '2024-01-02 03:04:05.678+00'), (2, 'ink', 1, 7.25, now());
UPDATE orders SET qty = 3 WHERE id = 1;
DELETE FROM orders WHERE id = 2;
\pset format unaligned
SELECT bson_to_json(data) AS event FROM pg_logical_slot_get_binary_changes('to_mongo', NULL, NULL);
SELECT pg_drop_replication_slot('to_mongo');
SQL

echo
echo "PostgreSQL into MongoDB: pg_bsonstream --to, the first copy and then every change (FerretDB here):"
FERRET_DIR=$CLUSTER_DIR/ferretdb
FERRET_PORT=$(( 27400 + RANDOM % 500 ))
ferretdb_start "$FERRET_DIR" "$FERRET_PORT" >/dev/null
STREAM_PID=
trap 'kill $STREAM_PID 2>/dev/null; wait $STREAM_PID 2>/dev/null || true; ferretdb_stop "$FERRET_DIR" || true; cluster_stop' EXIT
# no numeric here: FerretDB does not store Decimal128 (MongoDB does)
psql -qX -v ON_ERROR_STOP=1 -c "CREATE TABLE stock (id int PRIMARY KEY, item text, qty int, at timestamptz)" \
	-c "INSERT INTO stock VALUES (1, 'pen', 2, now()), (2, 'ink', 1, now())"
# an order's lines inside the order's document (bson_embed, declared once on the server)
psql -qX -v ON_ERROR_STOP=1 <<'SQL'
CREATE TABLE sales (id int PRIMARY KEY, customer text);
CREATE TABLE sale_lines (sale_id int REFERENCES sales ON DELETE CASCADE, line_no int, item text, qty int,
                         PRIMARY KEY (sale_id, line_no));
INSERT INTO sales VALUES (7, 'Ann'), (8, 'Bob');
INSERT INTO sale_lines VALUES (7, 1, 'pen', 2), (7, 2, 'ink', 1);
SQL
echo "\$ psql -c \"SELECT bson_embed('sale_lines', parent => 'sales', field => 'lines')\""
psql -qXAt -v ON_ERROR_STOP=1 -c "SELECT bson_embed('sale_lines', parent => 'sales', field => 'lines')" >/dev/null
echo "\$ pg_bsonstream --slot to_mongo --create-slot --initial-copy --include-tables 'public.stock, public.sales' -o DIR --to mongodb://127.0.0.1:$FERRET_PORT/shop"
pg_bsonstream --slot to_mongo --create-slot --initial-copy --include-tables 'public.stock, public.sales' \
	-o "$CLUSTER_DIR/stream" --to "mongodb://127.0.0.1:$FERRET_PORT/shop" --segment-time 0.2 -q &
STREAM_PID=$!
show_orders() {
	"$PYTHON" - "$FERRET_PORT" <<'PY'
import sys, time, pymongo
c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]))
for d in c.shop.stock.find(sort=[("_id", 1)]):
    print("  ", dict(d))
PY
}
wait_orders() {   # until the collection has $1 documents with qty $2 for _id 1
	"$PYTHON" - "$FERRET_PORT" "$1" "$2" <<'PY'
import sys, time, pymongo
c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]))
for _ in range(300):
    one = c.shop.stock.find_one({"_id": 1})
    if c.shop.stock.count_documents({}) == int(sys.argv[2]) and one and one["qty"] == int(sys.argv[3]):
        break
    time.sleep(0.1)
PY
}
wait_orders 2 2
echo "The collection shop.stock in MongoDB after the first copy (read with pymongo):"
show_orders
echo "\$ psql -c \"UPDATE stock SET qty = 5 WHERE id = 1\" -c \"INSERT INTO stock VALUES (3, 'pad', 9, now())\""
psql -qX -v ON_ERROR_STOP=1 -c "UPDATE stock SET qty = 5 WHERE id = 1" -c "INSERT INTO stock VALUES (3, 'pad', 9, now())"
wait_orders 3 5
echo "... and a moment later, the same collection:"
show_orders

show_sale() {
	"$PYTHON" - "$FERRET_PORT" <<'PY'
import sys, pymongo
c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]))
print("  ", dict(c.shop.sales.find_one({"_id": 7})))
PY
}
wait_sale() {   # until order 7 has $1 lines, the first with qty $2
	"$PYTHON" - "$FERRET_PORT" "$1" "$2" <<'PY'
import sys, time, pymongo
c = pymongo.MongoClient("127.0.0.1", int(sys.argv[1]))
for _ in range(300):
    d = c.shop.sales.find_one({"_id": 7})
    if d and len(d["lines"]) == int(sys.argv[2]) and d["lines"][0]["qty"] == int(sys.argv[3]):
        break
    time.sleep(0.1)
PY
}
echo
echo "Order 7 in MongoDB, its lines inside it (shop.sales; there is no collection of lines):"
wait_sale 2 2
show_sale
echo "\$ psql -c \"UPDATE sale_lines SET qty = 5 WHERE sale_id = 7 AND line_no = 1\" -c \"INSERT INTO sale_lines VALUES (7, 3, 'pad', 1)\" -c \"UPDATE sale_lines SET sale_id = 8 WHERE sale_id = 7 AND line_no = 2\""
psql -qX -v ON_ERROR_STOP=1 -c "UPDATE sale_lines SET qty = 5 WHERE sale_id = 7 AND line_no = 1" \
	-c "INSERT INTO sale_lines VALUES (7, 3, 'pad', 1)" -c "UPDATE sale_lines SET sale_id = 8 WHERE sale_id = 7 AND line_no = 2"
wait_sale 2 5
echo "... and a moment later, the same order (line 2 moved to order 8):"
show_sale
echo "Collections in shop: $("$PYTHON" -c "import pymongo; print(sorted(pymongo.MongoClient('127.0.0.1', $FERRET_PORT).shop.list_collection_names()))")"
