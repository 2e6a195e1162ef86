// The Java admin client (kafka-clients 4.4.0) under a controller mutation quota (KIP-599).
//
//   java -cp JARS MutationQuota BOOTSTRAP CLIENT_ID PREFIX
//
// As client CLIENT_ID, without retrying on a quota violation: creates PREFIX-a (14 partitions),
// then PREFIX-b (1 partition), then adds 3 partitions to PREFIX-a, then deletes it. Prints one
// line per call: `create PREFIX-a ok`, or the exception's class and whether its throttle time is
// above zero (`create PREFIX-b ThrottlingQuotaExceededException throttled`).
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DeleteTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;

public final class MutationQuota {
    private static void report(String what, KafkaFuture<?> future) throws Exception {
        try {
            future.get(60, TimeUnit.SECONDS);
            System.out.println(what + " ok");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            String line = what + " " + cause.getClass().getSimpleName();
            if (cause instanceof ThrottlingQuotaExceededException) {
                int ms = ((ThrottlingQuotaExceededException) cause).throttleTimeMs();
                line += ms > 0 ? " throttled" : " not-throttled";
            }
            System.out.println(line);
        }
    }

    public static void main(String[] argv) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, argv[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, argv[1]);
        String a = argv[2] + "-a";
        String b = argv[2] + "-b";
        try (Admin admin = Admin.create(props)) {
            CreateTopicsOptions create = new CreateTopicsOptions().retryOnQuotaViolation(false);
            report("create " + a, admin.createTopics(List.of(new NewTopic(a, 14, (short) 1)), create).all());
            report("create " + b, admin.createTopics(List.of(new NewTopic(b, 1, (short) 1)), create).all());
            report("partitions " + a, admin.createPartitions(
                Map.of(a, NewPartitions.increaseTo(17)), new CreatePartitionsOptions().retryOnQuotaViolation(false)).all());
            report("delete " + a, admin.deleteTopics(
                List.of(a), new DeleteTopicsOptions().retryOnQuotaViolation(false)).all());
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        }
    }
}
