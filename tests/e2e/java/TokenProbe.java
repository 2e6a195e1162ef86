// Delegation tokens with the Java client (kafka-clients 4.4.0) against one broker's SASL_PLAINTEXT
// listener.
//
//   java -cp JARS TokenProbe BOOTSTRAP ADMIN_USER ADMIN_PASSWORD RENEWER TOPIC
//
// Logged in with PLAIN as the admin: Admin.createDelegationToken (RENEWER a renewer) prints
// `created OWNER REQUESTER RENEWERS`, describeDelegationToken `described true` once it lists the
// token with its HMAC (a broker describes its metadata image, which may trail the controller's
// answer), and renewDelegationToken `renewed LATER` (whether the new expiry is after the
// creation). Then, logged
// in with SCRAM-SHA-512 and the token (ScramLoginModule, tokenauth="true", username the token id,
// password the HMAC in base64): a producer (`produced OFFSET`), a consumer reading it back
// (`consumed COUNT`), and an Admin asking for a token (`refused EXCEPTION_CLASS`: a token's
// connection may not). The admin expires the token at once (`expired`, once no longer described),
// and a producer with the token fails (`rejected EXCEPTION_CLASS`). Any other failure prints
// `error ...` and exits 1.
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class TokenProbe {
    static Properties plain(String bootstrap, String user, String password) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", "PLAIN");
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"" + user + "\" password=\"" + password + "\";");
        return props;
    }

    static Properties token(String bootstrap, DelegationToken token) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", "SCRAM-SHA-512");
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
            + " username=\"" + token.tokenInfo().tokenId() + "\" password=\"" + token.hmacAsBase64String()
            + "\" tokenauth=\"true\";");
        return props;
    }

    static long produce(Properties props, String topic) throws Exception {
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            return producer.send(new ProducerRecord<>(topic, "v".getBytes())).get(30, TimeUnit.SECONDS).offset();
        }
    }

    static int consume(Properties props, String topic) {
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    return records.count();
                }
            }
            return 0;
        }
    }

    // Whether the broker describes `token` (with its HMAC), once it does (`listed`) or no longer does.
    static boolean described(Admin client, DelegationToken token, boolean listed) throws Exception {
        long deadline = System.currentTimeMillis() + 20_000;
        while (true) {
            boolean found = false;
            for (DelegationToken t : client.describeDelegationToken().delegationTokens().get(30, TimeUnit.SECONDS)) {
                found |= t.hmacAsBase64String().equals(token.hmacAsBase64String());
            }
            if (found == listed || System.currentTimeMillis() > deadline) {
                return found;
            }
            Thread.sleep(100);
        }
    }

    static void fail(String message) {
        System.out.println("error " + message);
        System.out.flush();
        Runtime.getRuntime().halt(1);
    }

    public static void main(String[] argv) {
        String bootstrap = argv[0], admin = argv[1], adminPassword = argv[2], renewer = argv[3], topic = argv[4];
        try {
            DelegationToken made;
            try (Admin client = Admin.create(plain(bootstrap, admin, adminPassword))) {
                KafkaPrincipal renewing = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, renewer);
                made = client.createDelegationToken(new CreateDelegationTokenOptions().renewers(List.of(renewing)))
                    .delegationToken().get(30, TimeUnit.SECONDS);
                System.out.println("created " + made.tokenInfo().owner() + " " + made.tokenInfo().tokenRequester()
                    + " " + made.tokenInfo().renewers());
                System.out.println("described " + described(client, made, true));
                long expiry = client.renewDelegationToken(made.hmac()).expiryTimestamp().get(30, TimeUnit.SECONDS);
                System.out.println("renewed " + (expiry >= made.tokenInfo().issueTimestamp()));
            }
            System.out.println("produced " + produce(token(bootstrap, made), topic));
            Properties reading = token(bootstrap, made);
            System.out.println("consumed " + consume(reading, topic));
            try (Admin client = Admin.create(token(bootstrap, made))) {
                client.createDelegationToken().delegationToken().get(30, TimeUnit.SECONDS);
                fail("a token's connection got a token");
            } catch (ExecutionException e) {
                System.out.println("refused " + e.getCause().getClass().getSimpleName());
            }
            try (Admin client = Admin.create(plain(bootstrap, admin, adminPassword))) {
                client.expireDelegationToken(made.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                    .expiryTimestamp().get(30, TimeUnit.SECONDS);
                if (!described(client, made, false)) {
                    System.out.println("expired");
                }
            }
            try {
                produce(token(bootstrap, made), topic);
                fail("an expired token was accepted");
            } catch (ExecutionException e) {
                System.out.println("rejected " + e.getCause().getClass().getSimpleName());
            } catch (org.apache.kafka.common.KafkaException e) {
                System.out.println("rejected " + e.getClass().getSimpleName());
            }
        } catch (Exception e) {
            fail(e.toString());
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
