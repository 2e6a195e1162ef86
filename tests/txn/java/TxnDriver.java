// The Java client (kafka-clients 3.9.1 from pyflink/lib, or 4.4.0 from build/peers) in the
// transactions scenario of tests/txn/clients/common.py: the same command line and JSON-lines output.
//   java TxnDriver CLIENT BOOTSTRAP --topic T --source S --group G --txn-id X [--count N]
//        [--partitions P] [--timeout-s S]
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnDriver {
    static final long OFFSET_A = 5;
    static final long OFFSET_C = 9;
    static final long SETTLE_MS = 500;

    static String client;
    static String bootstrap;
    static String topic;
    static String source;
    static String group;
    static String txnId;
    static int count = 10;
    static int partitions = 2;
    static long deadline;

    public static void main(String[] argv) throws Exception {
        client = argv[0];
        bootstrap = argv[1];
        double timeoutS = 60;
        for (int i = 2; i < argv.length; i++) {
            switch (argv[i]) {
                case "--topic": topic = argv[++i]; break;
                case "--source": source = argv[++i]; break;
                case "--group": group = argv[++i]; break;
                case "--txn-id": txnId = argv[++i]; break;
                case "--count": count = Integer.parseInt(argv[++i]); break;
                case "--partitions": partitions = Integer.parseInt(argv[++i]); break;
                case "--timeout-s": timeoutS = Double.parseDouble(argv[++i]); break;
                default: throw new IllegalArgumentException(argv[i]);
            }
        }
        deadline = System.currentTimeMillis() + (long) (timeoutS * 1000);
        try {
            scenario();
        } catch (Exception e) {
            System.out.println("{\"event\": \"error\", \"step\": \"scenario\", \"message\": " + quote(e.toString()) + "}");
            e.printStackTrace();
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.println("{\"event\": \"done\"}");
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    static void scenario() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kw-txn-" + client);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        List<String> committed = new ArrayList<>();
        List<String> aborted = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            String[] phases = {"A", "B", "C"};
            long[] offsets = {OFFSET_A, -1, OFFSET_C};
            for (int t = 0; t < 3; t++) {
                producer.beginTransaction();
                List<String> sent = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    String value = client + "-" + phases[t] + "-" + i;
                    producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, value));
                    sent.add("[" + (i % partitions) + ", " + quote(value) + "]");
                }
                if (offsets[t] >= 0) {
                    producer.sendOffsetsToTransaction(
                        Collections.singletonMap(new TopicPartition(source, 0), new OffsetAndMetadata(offsets[t])),
                        new ConsumerGroupMetadata(group));
                    producer.commitTransaction();
                    committed.addAll(sent);
                } else {
                    producer.flush();
                    producer.abortTransaction();
                    aborted.addAll(sent);
                }
            }
        }
        System.out.println("{\"event\": \"transacted\", \"committed\": " + committed + ", \"aborted\": " + aborted + "}");
        System.out.flush();
        consume("read_committed", committed.size());
        consume("read_uncommitted", 3 * count);
        Properties c = consumerProperties(group, "read_uncommitted");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition zero = new TopicPartition(source, 0);
            Map<TopicPartition, OffsetAndMetadata> found = consumer.committed(Collections.singleton(zero), Duration.ofMillis(remaining()));
            OffsetAndMetadata offset = found.get(zero);
            System.out.println("{\"event\": \"committed\", \"offset\": " + (offset == null ? -1 : offset.offset()) + "}");
        }
    }

    static void consume(String isolation, int expected) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProperties(group + "-" + isolation, isolation))) {
            consumer.subscribe(Collections.singletonList(topic));
            long settleAt = -1;
            while (System.currentTimeMillis() < deadline && (settleAt < 0 || System.currentTimeMillis() < settleAt)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    got.add("[" + r.partition() + ", " + r.offset() + ", " + quote(r.value()) + "]");
                }
                if (settleAt < 0 && got.size() >= expected) settleAt = System.currentTimeMillis() + SETTLE_MS;
            }
        }
        System.out.println("{\"event\": \"consumed\", \"isolation\": \"" + isolation + "\", \"records\": " + got + "}");
        System.out.flush();
    }

    static Properties consumerProperties(String groupId, String isolation) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", "kw-txn-" + client);
        c.put("group.id", groupId);
        c.put("isolation.level", isolation);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        return c;
    }

    static long remaining() {
        return Math.max(100, deadline - System.currentTimeMillis());
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
