// The Java client (kafka-clients 4.4.0) over SASL/OAUTHBEARER against one broker's SASL_PLAINTEXT listener.
//
//   java -cp JARS OAuthProbe BOOTSTRAP TOPIC MODE CREDENTIAL SECONDS
//
// MODE `unsecured`: the client's default login callback handler makes an unsecured token whose
// `sub` is CREDENTIAL (the JAAS option unsecuredLoginStringClaim_sub). MODE `signed`: the login
// callback handler is FileToken (below), which hands over the signed JWT in the file CREDENTIAL.
// Creates TOPIC (one partition; an existing one is fine), produces one record every 200 ms for
// SECONDS seconds (at least one), each acknowledged before the next, prints `produced N`; reads
// them back from the start and prints `consumed N`. An authentication refused prints
// `refused EXCEPTION_CLASS: MESSAGE` and exits 0; any other failure prints `error ...` and exits 1.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class OAuthProbe {
    static final String MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    /** A login callback handler that hands over the JWT in the JAAS option tokenFile, unverified. */
    public static final class FileToken implements AuthenticateCallbackHandler {
        private Path file;

        @Override
        public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
            file = Path.of((String) entries.get(0).getOptions().get("tokenFile"));
        }

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            for (Callback callback : callbacks) {
                if (!(callback instanceof OAuthBearerTokenCallback)) {
                    throw new UnsupportedCallbackException(callback);
                }
                try {
                    ((OAuthBearerTokenCallback) callback).token(token(Files.readString(file).trim()));
                } catch (java.io.IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        }

        @Override
        public void close() {
        }
    }

    static long claim(String payload, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*([0-9]+)").matcher(payload);
        return m.find() ? Long.parseLong(m.group(1)) : 0L;
    }

    static OAuthBearerToken token(String jwt) {
        String payload = new String(Base64.getUrlDecoder().decode(jwt.split("\\.")[1]), StandardCharsets.UTF_8);
        Matcher sub = Pattern.compile("\"sub\"\\s*:\\s*\"([^\"]*)\"").matcher(payload);
        String principal = sub.find() ? sub.group(1) : "";
        long exp = claim(payload, "exp") * 1000;
        long iat = claim(payload, "iat") * 1000;
        return new OAuthBearerToken() {
            public String value() { return jwt; }
            public Set<String> scope() { return Set.of(); }
            public long lifetimeMs() { return exp; }
            public String principalName() { return principal; }
            public Long startTimeMs() { return iat; }
        };
    }

    static Properties config(String bootstrap, String mode, String credential) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", "OAUTHBEARER");
        if (mode.equals("unsecured")) {
            props.put("sasl.jaas.config", MODULE + " required unsecuredLoginStringClaim_sub=\"" + credential + "\";");
        } else {
            props.put("sasl.login.callback.handler.class", FileToken.class.getName());
            props.put("sasl.jaas.config", MODULE + " required tokenFile=\"" + credential + "\";");
        }
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "20000");
        return props;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], mode = args[2], credential = args[3];
        double seconds = Double.parseDouble(args[4]);
        Properties props = config(bootstrap, mode, credential);
        try {
            try (Admin admin = Admin.create(props)) {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            Properties producerProps = config(bootstrap, mode, credential);
            producerProps.put("key.serializer", ByteArraySerializer.class.getName());
            producerProps.put("value.serializer", ByteArraySerializer.class.getName());
            producerProps.put("max.block.ms", "20000");
            producerProps.put("delivery.timeout.ms", "20000");
            int produced = 0;
            long end = System.nanoTime() + (long) (seconds * 1e9);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
                do {
                    producer.send(new ProducerRecord<>(topic, ("v" + produced).getBytes())).get(30, TimeUnit.SECONDS);
                    produced++;
                    Thread.sleep(200);
                } while (System.nanoTime() < end);
            }
            System.out.println("produced " + produced);
            Properties consumerProps = config(bootstrap, mode, credential);
            consumerProps.put("key.deserializer", ByteArrayDeserializer.class.getName());
            consumerProps.put("value.deserializer", ByteArrayDeserializer.class.getName());
            int consumed = 0;
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps)) {
                TopicPartition partition = new TopicPartition(topic, 0);
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (consumed < produced && System.nanoTime() < deadline) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                    consumed += records.count();
                }
            }
            System.out.println("consumed " + consumed);
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && !(cause instanceof SaslAuthenticationException)) {
                cause = cause.getCause();
            }
            if (cause instanceof SaslAuthenticationException) {
                System.out.println("refused " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
                return;
            }
            System.out.println("error " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }
}
