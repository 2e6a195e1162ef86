// The Java admin client (kafka-clients 3.9.1 or 4.4.0: one source for both) against one broker:
// the replication admin APIs.
//
//   java -cp JARS AdminProbe BOOTSTRAP TOPIC
//
// Creates TOPIC (2 partitions), writes 3 records to partition 0 with an idempotent producer, then
// prints one `key value...` line per fact: describeTopics (DescribeTopicPartitions since 3.9),
// describeLogDirs, describeProducers, describeMetadataQuorum, electLeaders and
// listPartitionReassignments. Any failure is printed as `error ...` and exits 1.
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class AdminProbe {
    static List<Integer> ids(List<org.apache.kafka.common.Node> nodes) {
        return nodes.stream().map(org.apache.kafka.common.Node::id).toList();
    }

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        String topic = argv[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20000);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(20, TimeUnit.SECONDS);

            Properties producerProps = new Properties();
            producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, ("record-" + i).getBytes())).get(20, TimeUnit.SECONDS);
                }
            }

            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            for (TopicPartitionInfo p : description.partitions()) {
                System.out.println("partition " + p.partition() + " leader " + p.leader().id()
                    + " replicas " + ids(p.replicas()) + " isr " + ids(p.isr()));
            }
            System.out.println("topic_id " + description.topicId());

            Map<Integer, Map<String, LogDirDescription>> dirs =
                admin.describeLogDirs(List.of(1)).allDescriptions().get();
            for (Map.Entry<String, LogDirDescription> dir : dirs.get(1).entrySet()) {
                for (Map.Entry<TopicPartition, ReplicaInfo> replica : dir.getValue().replicaInfos().entrySet()) {
                    if (replica.getKey().topic().equals(topic)) {
                        System.out.println("logdir " + dir.getKey() + " " + replica.getKey().partition()
                            + " " + replica.getValue().size() + " " + replica.getValue().offsetLag());
                    }
                }
            }

            TopicPartition p0 = new TopicPartition(topic, 0);
            List<ProducerState> producers = admin.describeProducers(List.of(p0)).partitionResult(p0).get().activeProducers();
            for (ProducerState state : producers) {
                System.out.println("producer " + state.producerId() + " " + state.producerEpoch() + " " + state.lastSequence()
                    + " " + state.coordinatorEpoch().isPresent() + " " + state.currentTransactionStartOffset().isPresent());
            }

            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            System.out.println("quorum leader " + quorum.leaderId() + " epoch " + quorum.leaderEpoch()
                + " voters " + quorum.voters().stream().map(QuorumInfo.ReplicaState::replicaId).toList()
                + " observers " + quorum.observers().size());

            Map<TopicPartition, Optional<Throwable>> elected =
                admin.electLeaders(ElectionType.PREFERRED, Set.of(p0)).partitions().get();
            System.out.println("elect " + elected.get(p0).map(t -> t.getClass().getSimpleName()).orElse("none"));

            Map<TopicPartition, PartitionReassignment> reassignments = admin.listPartitionReassignments().reassignments().get();
            System.out.println("reassignments " + reassignments.size());
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.out.println("error " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            e.printStackTrace();
            System.exit(1);
        }
    }
}
