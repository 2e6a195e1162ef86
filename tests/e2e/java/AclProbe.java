// The Java client (kafka-clients 4.4.0) against a broker with SASL_SSL (PLAIN) and the
// StandardAuthorizer: what a user sees before and after the super user grants it ACLs.
//
//   java -cp JARS AclProbe BOOTSTRAP CA_PEM
//
// After creating the ACLs it prints `acls-created` and waits for a line on stdin (the test's
// word that every broker has them).
//
// (CA_PEM: the authority the brokers' certificates are signed by, a PEM truststore.)
//
// As `admin` (a super user): creates the topics jorders, jpay-eu and jsecret. As `alice`: lists
// topics and produces, then `admin` creates ACLs with Admin.createAcls (READ and WRITE on jorders,
// READ on the group jg1, ALL on the PREFIXED jpay-, a DENY of WRITE on jpay-eu), and `alice` lists,
// produces and consumes again. Prints one `key value` line per observation (an exception by its
// simple class name); any unexpected failure is printed as `error ...` and exits 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class AclProbe {
    static Properties config(String bootstrap, String ca, String user, String password) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SASL_SSL");
        props.put("ssl.truststore.type", "PEM");
        props.put("ssl.truststore.location", ca);
        props.put("sasl.mechanism", "PLAIN");
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "20000");
        return props;
    }

    static String name(Throwable t) {
        Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
        return cause.getClass().getSimpleName();
    }

    static String produce(Properties alice, String topic) {
        Properties props = new Properties();
        props.putAll(alice);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("max.block.ms", "15000");
        props.put("delivery.timeout.ms", "30000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.send(new ProducerRecord<>(topic, "value".getBytes())).get(30, TimeUnit.SECONDS);
            return "ok";
        } catch (Exception e) {
            return name(e);
        }
    }

    static String consume(Properties alice, String topic, String group) {
        Properties props = new Properties();
        props.putAll(alice);
        props.put("group.id", group);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    consumer.commitSync();
                    return "got " + new String(records.iterator().next().value());
                }
            }
            return "timeout";
        } catch (Exception e) {
            return name(e);
        }
    }

    static String topics(Properties alice) throws Exception {
        try (Admin admin = Admin.create(alice)) {
            return new TreeSet<>(admin.listTopics().names().get(20, TimeUnit.SECONDS)).toString();
        }
    }

    static AclBinding acl(String name, PatternType pattern, AclOperation op, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(ResourceType.TOPIC, name, pattern),
                new AccessControlEntry("User:alice", "*", op, permission));
    }

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        Properties admin = config(bootstrap, argv[1], "admin", "admin-secret");
        Properties alice = config(bootstrap, argv[1], "alice", "alice-secret");
        try (Admin su = Admin.create(admin)) {
            su.createTopics(List.of(new NewTopic("jorders", 1, (short) 1), new NewTopic("jpay-eu", 1, (short) 1),
                    new NewTopic("jsecret", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            System.out.println("topics-before " + topics(alice));
            System.out.println("produce-before " + produce(alice, "jorders"));
            su.createAcls(List.of(
                    acl("jorders", PatternType.LITERAL, AclOperation.WRITE, AclPermissionType.ALLOW),
                    acl("jorders", PatternType.LITERAL, AclOperation.READ, AclPermissionType.ALLOW),
                    new AclBinding(new ResourcePattern(ResourceType.GROUP, "jg1", PatternType.LITERAL),
                            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)),
                    acl("jpay-", PatternType.PREFIXED, AclOperation.ALL, AclPermissionType.ALLOW),
                    acl("jpay-eu", PatternType.LITERAL, AclOperation.WRITE, AclPermissionType.DENY)))
                    .all().get(30, TimeUnit.SECONDS);
            // A broker loads committed ACLs into its authorizer after CreateAcls is answered, each
            // broker of a cluster on its own: the test waits until every broker describes them,
            // then writes a line.
            System.out.println("acls-created");
            System.out.flush();
            if (new BufferedReader(new InputStreamReader(System.in)).readLine() == null) {
                throw new IllegalStateException("the test did not say the ACLs are everywhere");
            }
            System.out.println("topics-after " + topics(alice));
            System.out.println("produce-jorders " + produce(alice, "jorders"));
            System.out.println("consume-jorders-jg1 " + consume(alice, "jorders", "jg1"));
            System.out.println("produce-jpay-eu " + produce(alice, "jpay-eu"));
            System.out.println("consume-jorders-jg2 " + consume(alice, "jorders", "jg2"));
            System.out.println("produce-jsecret " + produce(alice, "jsecret"));
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        }
        System.exit(0);
    }
}
