// The Apache Kafka Java client for the cluster tests (tests/cluster); one source for kafka-clients
// 3.9.1 and 4.4.0:
//
//   java -cp JARS ClusterClient produce BOOTSTRAP TOPIC COUNT NAME
//       An idempotent acks=all producer of COUNT records, values "NAME-<n>" (n = 0..COUNT-1, no
//       key). It sends only as far as the credit it is given on stdin: a line "credit N" lets it
//       send records below N; stdin's end lets it send everything. Prints one line per record as
//       its delivery completes: "ack <n> <partition> <offset>" or "fail <n> <error>", then
//       "done <acked> <failed>" once every send has completed.
//   java -cp JARS ClusterClient describe BOOTSTRAP TOPIC
//       Admin.describeTopics: one JSON line per partition,
//       {"partition": p, "leader": id or -1, "isr": [...], "replicas": [...]}.
//   java -cp JARS ClusterClient consume-moved BOOTSTRAP TOPIC WARM PARTITION COUNT
//       A consumer (no group) assigned partition WARM from offset 0 prints "warm" once it read a
//       record there (its metadata now holds every partition of TOPIC). After a line "go" on
//       stdin it prints "leader <id>": PARTITION's leader in its metadata (partitionsFor answers
//       from the consumer's metadata when that knows the topic), then adds PARTITION from offset
//       0 to its assignment (the same topic: no metadata request) and prints
//       "record <offset> <value>" per record of PARTITION until COUNT were read, then "done".
//       The protocol of tests/cluster/confluent_consumer.py.
//
// Compiled once per session by tests/interop/harness.py (java_classes), like the e2e driver.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClusterClient {
    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("produce") && args.length == 5) {
            produce(args[1], args[2], Integer.parseInt(args[3]), args[4]);
        } else if (args.length == 3 && args[0].equals("describe")) {
            describe(args[1], args[2]);
        } else if (args.length == 6 && args[0].equals("consume-moved")) {
            consumeMoved(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Integer.parseInt(args[5]));
        } else {
            System.err.println("usage: ClusterClient produce BOOTSTRAP TOPIC COUNT NAME | describe BOOTSTRAP TOPIC"
                + " | consume-moved BOOTSTRAP TOPIC WARM PARTITION COUNT");
            System.exit(2);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);  // no waiting on client threads
    }

    static void produce(String bootstrap, String topic, int count, String name) throws Exception {
        AtomicLong credit = new AtomicLong(0);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("credit ")) {
                        credit.set(Long.parseLong(line.substring(7).trim()));
                    }
                }
            } catch (Exception e) {
                // stdin gone: send everything
            }
            credit.set(Long.MAX_VALUE);
        });
        reader.setDaemon(true);
        reader.start();

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "5000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        StringBuilder out = new StringBuilder();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int n = 0; n < count; n++) {
                while (n >= credit.get()) {
                    synchronized (out) {
                        flush(out);
                    }
                    Thread.sleep(10);
                }
                final int number = n;
                byte[] value = (name + "-" + n).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, null, value), (metadata, error) -> {
                    synchronized (out) {
                        if (error == null) {
                            acked.incrementAndGet();
                            out.append("ack ").append(number).append(' ').append(metadata.partition())
                                .append(' ').append(metadata.offset()).append('\n');
                        } else {
                            failed.incrementAndGet();
                            out.append("fail ").append(number).append(' ')
                                .append(error.getClass().getSimpleName()).append('\n');
                        }
                        if (out.length() > 1 << 16) {
                            flush(out);
                        }
                    }
                });
            }
            producer.flush();
        }
        synchronized (out) {
            out.append("done ").append(acked.get()).append(' ').append(failed.get()).append('\n');
            flush(out);
        }
    }

    static void flush(StringBuilder out) {
        if (out.length() > 0) {
            System.out.print(out);
            System.out.flush();
            out.setLength(0);
        }
    }

    static void describe(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(props)) {
            Map<String, TopicDescription> found =
                admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS);
            for (TopicPartitionInfo info : found.get(topic).partitions()) {
                Node leader = info.leader();
                System.out.println("{\"partition\": " + info.partition()
                    + ", \"leader\": " + (leader == null || leader.isEmpty() ? -1 : leader.id())
                    + ", \"isr\": " + ids(info.isr())
                    + ", \"replicas\": " + ids(info.replicas()) + "}");
            }
        }
    }

    static void consumeMoved(String bootstrap, String topic, int warm, int partition, int count) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        TopicPartition warmPartition = new TopicPartition(topic, warm);
        TopicPartition movedPartition = new TopicPartition(topic, partition);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(warmPartition));
            consumer.seek(warmPartition, 0);
            while (consumer.poll(Duration.ofMillis(200)).records(warmPartition).isEmpty()) {
                // until a record of WARM arrived
            }
            System.out.println("warm");
            System.out.flush();
            if (!"go".equals(in.readLine())) {
                System.exit(1);
            }
            int leader = -1;
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                if (info.partition() == partition && info.leader() != null) {
                    leader = info.leader().id();
                }
            }
            System.out.println("leader " + leader);
            System.out.flush();
            consumer.assign(List.of(warmPartition, movedPartition));
            consumer.seek(movedPartition, 0);
            int read = 0;
            while (read < count) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200)).records(movedPartition)) {
                    System.out.println("record " + record.offset() + " "
                        + new String(record.value(), StandardCharsets.UTF_8));
                    read++;
                }
                System.out.flush();
            }
            System.out.println("done");
        }
    }

    static String ids(List<Node> nodes) {
        StringJoiner joined = new StringJoiner(", ", "[", "]");
        for (Node node : nodes) {
            joined.add(Integer.toString(node.id()));
        }
        return joined.toString();
    }
}
