// The Java client (kafka-clients 4.4.0) with SASL against one broker's SASL_PLAINTEXT listener.
//
//   java -cp JARS ScramProbe BOOTSTRAP ADMIN_USER ADMIN_PASSWORD USER PASSWORD TOPIC
//
// Logged in with PLAIN as the admin, creates USER's SCRAM-SHA-512 credential (8192 iterations)
// with Admin.alterUserScramCredentials and prints `described MECHANISM ITERATIONS` for it
// (describeUserScramCredentials); then produces one record to TOPIC logged in with SCRAM-SHA-512
// as USER (`produced OFFSET`), with PLAIN as the admin (`plain OFFSET`), and tries SCRAM-SHA-512
// with a wrong password (`refused EXCEPTION_CLASS`). Any other failure is printed as `error ...`
// and exits 1.
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ScramProbe {
    static Properties sasl(String bootstrap, String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN")
            ? "org.apache.kafka.common.security.plain.PlainLoginModule"
            : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
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

    public static void main(String[] argv) {
        String bootstrap = argv[0], admin = argv[1], adminPassword = argv[2], user = argv[3], password = argv[4];
        String topic = argv[5];
        try {
            try (Admin client = Admin.create(sasl(bootstrap, "PLAIN", admin, adminPassword))) {
                client.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password)))
                    .all().get(30, TimeUnit.SECONDS);
                Map<String, UserScramCredentialsDescription> described =
                    client.describeUserScramCredentials(List.of(user)).all().get(30, TimeUnit.SECONDS);
                for (ScramCredentialInfo info : described.get(user).credentialInfos()) {
                    System.out.println("described " + info.mechanism().mechanismName() + " " + info.iterations());
                }
            }
            System.out.println("produced " + produce(sasl(bootstrap, "SCRAM-SHA-512", user, password), topic));
            System.out.println("plain " + produce(sasl(bootstrap, "PLAIN", admin, adminPassword), topic));
            try {
                produce(sasl(bootstrap, "SCRAM-SHA-512", user, "wrong-" + password), topic);
                System.out.println("error a wrong password was accepted");
                System.out.flush();
                Runtime.getRuntime().halt(1);
            } catch (ExecutionException e) {
                System.out.println("refused " + e.getCause().getClass().getSimpleName());
            } catch (org.apache.kafka.common.KafkaException e) {
                System.out.println("refused " + e.getClass().getSimpleName());
            }
        } catch (Exception e) {
            System.out.println("error " + e);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
