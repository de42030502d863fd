package bson_out.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.bson.BsonDocument;
import org.bson.BsonValue;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.BulkWriteOptions;
import com.mongodb.client.model.DeleteOneModel;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.ReplaceOneModel;
import com.mongodb.client.model.ReplaceOptions;
import com.mongodb.client.model.WriteModel;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;

/**
 * The Java side of bench/debezium_bench.sh: Debezium's embedded engine with
 * its PostgreSQL connector (pgoutput), in one of three modes.
 *
 * <pre>
 *   capture   stream an existing slot (snapshot.mode=no_data), count the
 *             events and drop them, stop after --events N
 *   mongo     the same, each batch applied into a MongoDB-protocol server
 *             as MongoDB's sink connector applies Debezium's events
 *             (replace with upsert on the key, delete one; ordered bulk
 *             writes), offsets committed after the writes
 *   snapshot  snapshot.mode=initial of --table on a new slot: count the
 *             rows read, stop after --events N (the table's row count)
 * </pre>
 *
 * Every event goes through the JSON converter (schemas off), as a Kafka
 * pipeline would send it.  The last line is "RESULT key=value ...": the
 * events, the seconds from the JVM's start to the first event and to the
 * last, and from the engine's start to the last.
 */
public final class DebeziumBench {

    private static final class Options {
        String mode;
        String host = "127.0.0.1";
        String port = "5432";
        String dbname = "postgres";
        String user = "postgres";
        String password = "unused";
        String slot;
        String publication;
        String table;
        long events;
        Path offsets;
        String mongoUri;
        String mongoDb = "dbz";
        int bulkSize = 64;
        long timeoutSeconds = 3600;
        Map<String, String> extra = new LinkedHashMap<>();
    }

    private static void usage(String message) {
        System.err.println("DebeziumBench: " + message);
        System.err.println("usage: DebeziumBench capture|mongo|snapshot --port P --dbname D --slot S "
                + "--publication P --table schema.table --events N --offsets FILE "
                + "[--mongo URI --mongo-db DB --bulk-size N] [--timeout S] [--set key=value]...");
        System.exit(2);
    }

    private static Options parse(String[] args) {
        Options o = new Options();
        if (args.length < 1) {
            usage("no mode");
        }
        o.mode = args[0];
        if (!o.mode.equals("capture") && !o.mode.equals("mongo") && !o.mode.equals("snapshot")) {
            usage("unknown mode " + o.mode);
        }
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                usage("no value for " + args[i]);
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--host" -> o.host = v;
                case "--port" -> o.port = v;
                case "--dbname" -> o.dbname = v;
                case "--user" -> o.user = v;
                case "--slot" -> o.slot = v;
                case "--publication" -> o.publication = v;
                case "--table" -> o.table = v;
                case "--events" -> o.events = Long.parseLong(v);
                case "--offsets" -> o.offsets = Path.of(v);
                case "--mongo" -> o.mongoUri = v;
                case "--mongo-db" -> o.mongoDb = v;
                case "--bulk-size" -> o.bulkSize = Integer.parseInt(v);
                case "--timeout" -> o.timeoutSeconds = Long.parseLong(v);
                case "--set" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) {
                        usage("--set wants key=value");
                    }
                    o.extra.put(v.substring(0, eq), v.substring(eq + 1));
                }
                default -> usage("unknown option " + args[i]);
            }
        }
        if (o.slot == null || o.publication == null || o.table == null || o.events <= 0 || o.offsets == null) {
            usage("--slot, --publication, --table, --events and --offsets are needed");
        }
        if (o.mode.equals("mongo") && o.mongoUri == null) {
            usage("mongo needs --mongo URI");
        }
        return o;
    }

    /** The connector's settings: those of a user streaming one table with pgoutput. */
    private static Properties engineProperties(Options o) {
        Properties p = new Properties();
        p.setProperty("name", "bson_out-bench");
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        p.setProperty("offset.storage.file.filename", o.offsets.toString());
        // as often as pg_bsonstream closes a segment by time (--segment-time 10s)
        p.setProperty("offset.flush.interval.ms", "10000");
        p.setProperty("database.hostname", o.host);
        p.setProperty("database.port", o.port);
        p.setProperty("database.user", o.user);
        p.setProperty("database.password", o.password);
        p.setProperty("database.dbname", o.dbname);
        p.setProperty("database.sslmode", "disable");
        p.setProperty("topic.prefix", "bench");
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", o.slot);
        p.setProperty("publication.name", o.publication);
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("table.include.list", o.table);
        // the slots of capture and mongo exist before the workload; the
        // snapshot's is made by the connector at its start and dropped after
        p.setProperty("snapshot.mode", o.mode.equals("snapshot") ? "initial" : "no_data");
        p.setProperty("slot.drop.on.stop", o.mode.equals("snapshot") ? "true" : "false");
        // a delete is one event, as in bson_out's stream (no tombstone after it)
        p.setProperty("tombstones.on.delete", "false");
        // numeric as its exact decimal text: what a JSON pipeline keeps
        p.setProperty("decimal.handling.mode", "string");
        p.setProperty("converter.schemas.enable", "false");
        p.setProperty("key.converter.schemas.enable", "false");
        p.setProperty("value.converter.schemas.enable", "false");
        for (Map.Entry<String, String> e : o.extra.entrySet()) {
            p.setProperty(e.getKey(), e.getValue());
        }
        return p;
    }

    /** Counts the events, and tells main when the last one has come. */
    private static final class Progress {
        final long target;
        final CountDownLatch done = new CountDownLatch(1);
        long count;
        long firstNanos;
        long lastNanos;

        Progress(long target) {
            this.target = target;
        }

        void add(int n) {
            if (count == 0 && n > 0) {
                firstNanos = System.nanoTime();
            }
            count += n;
            if (count >= target && done.getCount() > 0) {
                lastNanos = System.nanoTime();
                done.countDown();
            }
        }
    }

    /** capture and snapshot: every event converted to JSON, then dropped. */
    private static DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> counter(Progress progress) {
        return (records, committer) -> {
            int n = 0;
            for (ChangeEvent<String, String> r : records) {
                if (r.value() != null) {
                    n++;
                }
                committer.markProcessed(r);
            }
            committer.markBatchFinished();
            progress.add(n);
        };
    }

    /**
     * mongo: each batch applied as MongoDB's sink connector applies
     * Debezium's events of a table with a primary key (its RDBMS CDC
     * handler): create, read and update replace the document whose _id is
     * the key with the "after" row, upsert; delete deletes it; the writes in
     * order, in ordered bulk writes of at most --bulk-size.  One difference:
     * a key of one column is that column's value as the _id (the handler
     * makes it a document {column: value}), so that both pipelines write
     * the same _id and FerretDB's _id index serves both.
     */
    private static final class MongoWriter implements DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> {
        private static final ReplaceOptions UPSERT = new ReplaceOptions().upsert(true);
        private static final BulkWriteOptions ORDERED = new BulkWriteOptions().ordered(true);
        private final Progress progress;
        private final MongoDatabase db;
        private final int bulkSize;
        private final Map<String, MongoCollection<BsonDocument>> collections = new HashMap<>();

        MongoWriter(Progress progress, MongoClient client, String dbName, int bulkSize) {
            this.progress = progress;
            this.db = client.getDatabase(dbName);
            this.bulkSize = bulkSize;
        }

        private static BsonValue idOf(String keyJson) {
            BsonDocument key = BsonDocument.parse(keyJson);
            return key.size() == 1 ? key.values().iterator().next() : key;
        }

        @Override
        public void handleBatch(List<ChangeEvent<String, String>> records,
                DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer) throws InterruptedException {
            // per collection, in the batch's order
            Map<String, List<WriteModel<BsonDocument>>> writes = new LinkedHashMap<>();
            int n = 0;
            for (ChangeEvent<String, String> r : records) {
                if (r.value() == null) {
                    continue;
                }
                BsonDocument event = BsonDocument.parse(r.value());
                String coll = event.getDocument("source").getString("table").getValue();
                BsonValue id = idOf(r.key());
                String op = event.getString("op").getValue();
                WriteModel<BsonDocument> w;
                switch (op) {
                    case "c", "r", "u" -> {
                        BsonDocument doc = new BsonDocument("_id", id);
                        doc.putAll(event.getDocument("after"));
                        w = new ReplaceOneModel<>(Filters.eq("_id", id), doc, UPSERT);
                    }
                    case "d" -> w = new DeleteOneModel<>(Filters.eq("_id", id));
                    default -> {
                        continue; // truncate, message: none in this workload
                    }
                }
                writes.computeIfAbsent(coll, k -> new ArrayList<>()).add(w);
                n++;
            }
            for (Map.Entry<String, List<WriteModel<BsonDocument>>> e : writes.entrySet()) {
                MongoCollection<BsonDocument> c = collections.computeIfAbsent(e.getKey(),
                        k -> db.getCollection(k, BsonDocument.class));
                List<WriteModel<BsonDocument>> all = e.getValue();
                for (int i = 0; i < all.size(); i += bulkSize) {
                    c.bulkWrite(all.subList(i, Math.min(all.size(), i + bulkSize)), ORDERED);
                }
            }
            // written: now their offsets may be committed
            for (ChangeEvent<String, String> r : records) {
                committer.markProcessed(r);
            }
            committer.markBatchFinished();
            progress.add(n);
        }
    }

    /*
     * mongo-server --port P: mongo-java-server with its in-memory backend on
     * 127.0.0.1:P until killed (the benchmark's second MongoDB-protocol
     * server, written by others, fast enough not to be the limit).
     */
    private static void mongoServer(String[] args) throws InterruptedException {
        int port = args.length == 3 && args[1].equals("--port") ? Integer.parseInt(args[2]) : -1;
        if (port <= 0) {
            usage("mongo-server --port P");
        }
        de.bwaldvogel.mongo.MongoServer server =
                new de.bwaldvogel.mongo.MongoServer(new de.bwaldvogel.mongo.backend.memory.MemoryBackend());
        server.bind("127.0.0.1", port);
        System.out.println("mongo-java-server listening on 127.0.0.1:" + port);
        System.out.flush();
        Thread.currentThread().join();
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("mongo-server")) {
            mongoServer(args);
            return;
        }
        Options o = parse(args);
        long jvmStart = ManagementFactory.getRuntimeMXBean().getStartTime();
        long nanoAtStart = System.nanoTime() - (System.currentTimeMillis() - jvmStart) * 1_000_000L;
        Files.deleteIfExists(o.offsets);
        Progress progress = new Progress(o.events);
        AtomicReference<String> failure = new AtomicReference<>();
        MongoClient mongo = o.mode.equals("mongo") ? MongoClients.create(o.mongoUri) : null;
        DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> consumer = mongo != null
                ? new MongoWriter(progress, mongo, o.mongoDb, o.bulkSize)
                : counter(progress);
        CountDownLatch ended = new CountDownLatch(1);
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(engineProperties(o))
                .notifying(consumer)
                .using((success, message, error) -> {
                    if (!success) {
                        failure.set(message + (error != null ? ": " + error : ""));
                        progress.done.countDown();
                    }
                    ended.countDown();
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        long engineStart = System.nanoTime();
        executor.execute(engine);
        boolean reached = progress.done.await(o.timeoutSeconds, TimeUnit.SECONDS);
        long count = progress.count;
        try {
            engine.close(); // commits the offsets: the slot confirmed up to the last event
        } catch (IOException e) {
            failure.compareAndSet(null, "close: " + e);
        }
        ended.await(120, TimeUnit.SECONDS);
        executor.shutdown();
        executor.awaitTermination(60, TimeUnit.SECONDS);
        long closed = System.nanoTime();
        if (mongo != null) {
            mongo.close();
        }
        if (failure.get() != null) {
            System.err.println("DebeziumBench: the engine failed: " + failure.get());
            System.exit(1);
        }
        if (!reached) {
            System.err.printf("DebeziumBench: %d of %d events after %d s%n", count, o.events, o.timeoutSeconds);
            System.exit(1);
        }
        double toFirst = (progress.firstNanos - nanoAtStart) / 1e9;
        double toLast = (progress.lastNanos - nanoAtStart) / 1e9;
        double engineToLast = (progress.lastNanos - engineStart) / 1e9;
        double toClosed = (closed - nanoAtStart) / 1e9;
        System.out.printf("debezium %s: %d events; first after %.2f s, last after %.2f s (engine start to last %.2f s, "
                + "first to last %.2f s: %.0f events/s); closed after %.2f s%n", o.mode, count, toFirst, toLast,
                engineToLast, toLast - toFirst, count / (toLast - toFirst), toClosed);
        System.out.printf("RESULT events=%d first_s=%.3f last_s=%.3f engine_s=%.3f closed_s=%.3f%n", count, toFirst,
                toLast, engineToLast, toClosed);
        System.exit(0);
    }
}
