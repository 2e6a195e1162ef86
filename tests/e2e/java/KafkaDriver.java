// The Apache Kafka Java client as a peer driver: the same command line and JSON-lines output as
// tests/interop/clients/driver_common.py, including the `group` step.
//
//   java -cp JARS KafkaDriver BOOTSTRAP STEPS [--topic T] [--count N] [--timeout-s S]
//        [--partitions P] [--compression none|gzip|snappy|lz4|zstd] [--headers] [--value-size B]
//        [--golden] [--group G] [--batch N] [--group-protocol classic|consumer] [--security JSON]
//
// --security (TLS and SASL, see driver_common.py) is a flat JSON object of strings; the Java client
// reads PEM files itself (ssl.truststore.type / ssl.keystore.type PEM, KIP-651).
//
// JARS are kafka-clients with lz4-java, snappy-java, zstd-jni and slf4j-api, of one of two releases:
// 3.9.1 from pyflink/lib (the shigawire-apache-flink-libraries wheel of the `test` extra), where the
// driver calls itself `java`, or 4.4.0 from `make peers` (build/peers/kafka-4.4/lib), where it calls
// itself `java4` (in its client id, values, headers and group id). The one source compiles against
// both (the APIs it uses exist in both). One file and no dependencies beyond those: Java 17 can run
// it as a single-file source, and the harness compiles it once per release and session
// (tests/interop/harness.py, java_command).
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaDriver {
    /** `java` for kafka-clients 3.x, `java4` for 4.x: the driver names itself after its release. */
    static final String CLIENT = clientVersion().startsWith("3.") ? "java" : "java4";
    static final List<String> STEPS = List.of("metadata", "create", "produce", "consume", "group");
    static final List<String> COMPRESSIONS = List.of("none", "gzip", "snappy", "lz4", "zstd");
    /** Never counted down: main ends the JVM with Runtime.halt, which a waiting hook does not delay. */
    static final CountDownLatch EXITED = new CountDownLatch(1);
    /** The first record's timestamp in the golden workload (--golden; see driver_common.py). */
    static final long GOLDEN_TIMESTAMP = 1_700_000_000_000L;

    /** The version kafka-clients reports (its kafka/kafka-version.properties, in both releases). */
    static String clientVersion() {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            props.load(in);
        } catch (java.io.IOException | NullPointerException e) {
            throw new IllegalStateException("kafka-clients without kafka/kafka-version.properties", e);
        }
        return props.getProperty("version", "unknown");
    }

    // -- command line ---------------------------------------------------------------------------

    static final class Args {
        String bootstrap;
        List<String> steps;
        String topic = "interop";
        int count = 3;
        double timeoutS = 10.0;
        int partitions = 1;
        String compression = "none";
        boolean headers = false;
        int valueSize = 0;
        boolean golden = false;
        String group = null;
        int batch = 50;
        String groupProtocol = "classic";
        Map<String, String> security = Map.of();
        long deadlineNs;

        long remainingMs() {
            return Math.max(100, (deadlineNs - System.nanoTime()) / 1_000_000);
        }

        boolean pastDeadline() {
            return System.nanoTime() > deadlineNs;
        }

        String groupId() {
            return group != null ? group : "kw-interop-" + CLIENT + "-" + topic;
        }
    }

    static Args parseArgs(String[] argv) {
        Args args = new Args();
        List<String> positional = new ArrayList<>();
        for (int i = 0; i < argv.length; i++) {
            switch (argv[i]) {
                case "--topic" -> args.topic = argv[++i];
                case "--count" -> args.count = Integer.parseInt(argv[++i]);
                case "--timeout-s" -> args.timeoutS = Double.parseDouble(argv[++i]);
                case "--partitions" -> args.partitions = Integer.parseInt(argv[++i]);
                case "--compression" -> args.compression = argv[++i];
                case "--headers" -> args.headers = true;
                case "--value-size" -> args.valueSize = Integer.parseInt(argv[++i]);
                case "--golden" -> args.golden = true;
                case "--group" -> args.group = argv[++i];
                case "--batch" -> args.batch = Integer.parseInt(argv[++i]);
                case "--group-protocol" -> args.groupProtocol = argv[++i];
                case "--security" -> args.security = flatJson(argv[++i]);
                default -> positional.add(argv[i]);
            }
        }
        if (positional.size() != 2) {
            throw new IllegalArgumentException("usage: BOOTSTRAP STEPS [OPTIONS]");
        }
        if (!COMPRESSIONS.contains(args.compression)) {
            throw new IllegalArgumentException("unknown compression " + args.compression);
        }
        args.bootstrap = positional.get(0);
        args.steps = Arrays.asList(positional.get(1).split(","));
        for (String step : args.steps) {
            if (!STEPS.contains(step)) {
                throw new IllegalArgumentException("unknown step " + step);
            }
        }
        args.deadlineNs = System.nanoTime() + (long) (args.timeoutS * 1e9);
        return args;
    }

    static String pad(String value, int size) {
        if (value.length() >= size) {
            return value;
        }
        String filler = "-abcdefghijklmnopqrstuvwxyz0123456789".repeat(size / 37 + 1);
        return value + filler.substring(0, size - value.length());
    }

    // -- output ---------------------------------------------------------------------------------

    static synchronized void emit(String event, Object... fields) {
        Map<String, Object> object = new java.util.LinkedHashMap<>();
        object.put("event", event);
        for (int i = 0; i < fields.length; i += 2) {
            object.put((String) fields[i], fields[i + 1]);
        }
        StringBuilder out = new StringBuilder();
        json(out, object);
        System.out.println(out);
        System.out.flush();
    }

    static void json(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            out.append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            out.append('"');
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    out.append(", ");
                }
                first = false;
                json(out, String.valueOf(e.getKey()));
                out.append(": ");
                json(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Collection<?> list) {
            out.append('[');
            boolean first = true;
            for (Object item : list) {
                if (!first) {
                    out.append(", ");
                }
                first = false;
                json(out, item);
            }
            out.append(']');
        } else {
            json(out, value.toString());
        }
    }

    static String text(byte[] data) {
        return data == null ? null : new String(data, java.nio.charset.StandardCharsets.UTF_8);
    }

    static double now() {
        // CLOCK_MONOTONIC on Linux, the clock Python's time.monotonic() reads: comparable across processes.
        return System.nanoTime() / 1e9;
    }

    // -- clients --------------------------------------------------------------------------------

    static Properties config(Args args) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kw-interop-" + CLIENT);
        Map<String, String> security = args.security;
        if (security.containsKey("protocol")) {
            String protocol = security.get("protocol");
            props.put("security.protocol", protocol);
            if (protocol.endsWith("SSL")) {
                props.put("ssl.truststore.type", "PEM");
                props.put("ssl.truststore.location", security.get("ca"));
                if (security.containsKey("keystore")) {
                    props.put("ssl.keystore.type", "PEM");
                    props.put("ssl.keystore.location", security.get("keystore"));
                }
            }
            if (protocol.startsWith("SASL_")) {
                String mechanism = security.get("mechanism");
                String module = mechanism.equals("PLAIN")
                    ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                    : "org.apache.kafka.common.security.scram.ScramLoginModule";
                props.put("sasl.mechanism", mechanism);
                props.put("sasl.jaas.config", module + " required username=\"" + security.get("username")
                    + "\" password=\"" + security.get("password") + "\";");
            }
        }
        return props;
    }

    /** A flat JSON object of strings (--security): paths, names and passwords without escapes. */
    static Map<String, String> flatJson(String text) {
        Map<String, String> out = new HashMap<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"([^\"]+)\"\\s*:\\s*\"([^\"\\\\]*)\"").matcher(text);
        while (m.find()) {
            out.put(m.group(1), m.group(2));
        }
        return out;
    }

    static Properties consumerConfig(Args args) {
        Properties props = config(args);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args.groupId());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (args.groupProtocol.equals("consumer")) {
            // KIP-848: the coordinator owns the session timeout and heartbeat interval.
            props.put("group.protocol", "consumer");
        } else {
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(args.batch));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return props;
    }

    static void metadata(Args args) throws Exception {
        try (Admin admin = Admin.create(config(args))) {
            DescribeClusterResult cluster = admin.describeCluster();
            List<List<Object>> brokers = new ArrayList<>();
            for (Node node : cluster.nodes().get(args.remainingMs(), TimeUnit.MILLISECONDS)) {
                brokers.add(List.of(node.id(), node.host(), node.port()));
            }
            brokers.sort((a, b) -> Integer.compare((Integer) a.get(0), (Integer) b.get(0)));
            Set<String> topics = new TreeSet<>(admin.listTopics().names().get(args.remainingMs(), TimeUnit.MILLISECONDS));
            emit("metadata", "brokers", brokers, "topics", topics);
        }
    }

    static void create(Args args) throws Exception {
        try (Admin admin = Admin.create(config(args))) {
            admin.createTopics(List.of(new NewTopic(args.topic, args.partitions, (short) 1)))
                .all().get(args.remainingMs(), TimeUnit.MILLISECONDS);
        }
        emit("created", "topic", args.topic);
    }

    static void produce(Args args) throws Exception {
        Properties props = config(args);
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args.compression);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        // Golden: a fixed request timeout, so that re-recorded Produce frames are the same bytes.
        long deliveryMs = args.golden ? 30_000 : Math.max(args.remainingMs(), 2000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(deliveryMs));
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(args.golden ? 10_000 : deliveryMs - 1000));
        // The golden workload's three records must leave in one batch.
        props.put(ProducerConfig.LINGER_MS_CONFIG, args.golden ? "200" : "5");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(args.remainingMs()));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < args.count; i++) {
                Integer partition = args.partitions > 1 ? i % args.partitions : null;
                List<Header> headers = new ArrayList<>();
                if (args.golden) {
                    headers.add(new RecordHeader("h", ("x" + i).getBytes()));
                    futures.add(producer.send(new ProducerRecord<>(args.topic, partition, GOLDEN_TIMESTAMP + i,
                        ("k" + i).getBytes(), ("value-" + i + "-").repeat(20).getBytes(), headers)));
                    continue;
                }
                if (args.headers) {
                    headers.add(new RecordHeader("i", String.valueOf(i).getBytes()));
                    headers.add(new RecordHeader("client", CLIENT.getBytes()));
                }
                futures.add(producer.send(new ProducerRecord<>(args.topic, partition, ("k" + i).getBytes(),
                    pad(CLIENT + "-" + i, args.valueSize).getBytes(), headers)));
            }
            producer.flush();
            List<List<Object>> records = new ArrayList<>();
            Set<Integer> partitions = new TreeSet<>();
            List<Long> offsets = new ArrayList<>();
            for (Future<RecordMetadata> future : futures) {
                RecordMetadata meta = future.get(args.remainingMs(), TimeUnit.MILLISECONDS);
                records.add(List.of(meta.partition(), meta.offset()));
                partitions.add(meta.partition());
                offsets.add(meta.offset());
            }
            emit("produced", "topic", args.topic, "partition", partitions, "offsets", offsets, "records", records);
        }
    }

    static List<List<String>> headers(ConsumerRecord<byte[], byte[]> record) {
        List<List<String>> out = new ArrayList<>();
        for (Header h : record.headers()) {
            out.add(Arrays.asList(h.key(), text(h.value())));
        }
        return out;
    }

    static void consume(Args args) {
        List<List<Object>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(args))) {
            consumer.subscribe(List.of(args.topic));
            while (records.size() < args.count && !args.pastDeadline()) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(Math.min(500, args.remainingMs())))) {
                    records.add(Arrays.asList(r.partition(), r.offset(), text(r.key()), text(r.value()), headers(r)));
                }
            }
        }
        List<Object> values = new ArrayList<>();
        for (List<Object> r : records) {
            values.add(r.get(3));
        }
        emit("consumed", "topic", args.topic, "values", values, "records", records);
    }

    static void group(Args args) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean(false);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(args));
        // SIGTERM runs the shutdown hooks: ask the loop to stop, and hold the JVM (it exits with
        // status 143 once the hooks return) until main has closed the consumer, printed the rest
        // and halted with its own status.
        Thread hook = new Thread(() -> {
            stop.set(true);
            consumer.wakeup();
            try {
                EXITED.await(15, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            consumer.subscribe(List.of(args.topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    // What is kept (KIP-848 and cooperative protocols revoke only what moves).
                    List<Integer> numbers = new ArrayList<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        if (!partitions.contains(tp)) {
                            numbers.add(tp.partition());
                        }
                    }
                    numbers.sort(null);
                    emit("assigned", "partitions", numbers, "t", now());
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    // The whole assignment (with a cooperative assignor `partitions` is only what was added).
                    List<Integer> numbers = new ArrayList<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        numbers.add(tp.partition());
                    }
                    numbers.sort(null);
                    emit("assigned", "partitions", numbers, "t", now());
                }
            });
            while (!stop.get() && !args.pastDeadline()) {
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                }
                double t = now();
                if (batch.isEmpty()) {
                    continue;
                }
                List<List<Object>> processed = new ArrayList<>();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                TreeMap<Integer, Long> nextByPartition = new TreeMap<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    processed.add(Arrays.asList(r.partition(), r.offset(), text(r.value())));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    nextByPartition.put(r.partition(), r.offset() + 1);
                }
                emit("processed", "records", processed, "t", t);
                List<List<Object>> offsets = new ArrayList<>();
                nextByPartition.forEach((p, o) -> offsets.add(List.of(p, o)));
                try {
                    consumer.commitSync(next);
                } catch (CommitFailedException | WakeupException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
                    emit("commit_failed", "offsets", offsets, "message", e.toString(), "t", now());
                    if (e instanceof WakeupException) {
                        break;
                    }
                    continue;
                }
                emit("committed", "offsets", offsets, "t", now());
            }
        } finally {
            // Leaves the group. close(Duration) is deprecated in 4.x for close(CloseOptions), which
            // 3.9.1 lacks; it still works in 4.4 and keeps one source for both releases.
            consumer.close(Duration.ofSeconds(5));
            emit("closed", "t", now());
        }
    }

    // -- main -----------------------------------------------------------------------------------

    public static void main(String[] argv) {
        Args args = parseArgs(argv);
        // A client stuck past its own timeouts must not hold the test up.
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep((long) (args.timeoutS * 1000) + 1000);
            } catch (InterruptedException e) {
                return;
            }
            emit("error", "step", "watchdog", "message", "gave up after " + args.timeoutS + " s");
            Runtime.getRuntime().halt(1);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        for (String step : args.steps) {
            try {
                switch (step) {
                    case "metadata" -> metadata(args);
                    case "create" -> create(args);
                    case "produce" -> produce(args);
                    case "consume" -> consume(args);
                    case "group" -> group(args);
                    default -> throw new IllegalArgumentException("unknown step " + step);
                }
            } catch (Exception e) {
                Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
                emit("error", "step", step, "message", cause.getClass().getSimpleName() + ": " + cause.getMessage());
                e.printStackTrace();
                System.err.flush();
                Runtime.getRuntime().halt(1);
            }
        }
        emit("done");
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
