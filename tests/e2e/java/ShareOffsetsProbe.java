// The Java admin client 4.4's listShareGroupOffsets (DescribeShareGroupOffsets) for
// tests/e2e/test_share_offsets_cluster.py:
//
//   java -cp JARS ShareOffsetsProbe BOOTSTRAP GROUP [TOPIC:PARTITION ...]
//
// Without partitions it asks for every share-partition the group has state for (the request's
// null topics). Output: one JSON line per share-partition answered, sorted by topic and partition:
//   {"topic":T,"partition":P,"start":S,"epoch":E,"lag":L}   (E, L: -1 when absent)
// Any failure is printed as `error ...` and exits 1.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

public final class ShareOffsetsProbe {
    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        String group = argv[1];
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (argv.length > 2) {
            List<TopicPartition> asked = new ArrayList<>();
            for (int i = 2; i < argv.length; i++) {
                int colon = argv[i].lastIndexOf(':');
                asked.add(new TopicPartition(argv[i].substring(0, colon), Integer.parseInt(argv[i].substring(colon + 1))));
            }
            spec.topicPartitions(asked);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, SharePartitionOffsetInfo> got = admin.listShareGroupOffsets(Map.of(group, spec))
                .partitionsToOffsetInfo(group)
                .get(40, TimeUnit.SECONDS);
            Map<String, SharePartitionOffsetInfo> sorted = new TreeMap<>();
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : got.entrySet()) {
                sorted.put(String.format("%s\u0000%08d", e.getKey().topic(), e.getKey().partition()), e.getValue());
            }
            for (Map.Entry<String, SharePartitionOffsetInfo> e : sorted.entrySet()) {
                String[] parts = e.getKey().split("\u0000");
                SharePartitionOffsetInfo info = e.getValue();
                System.out.println(String.format(
                    "{\"topic\":\"%s\",\"partition\":%d,\"start\":%d,\"epoch\":%d,\"lag\":%d}",
                    parts[0],
                    Integer.parseInt(parts[1]),
                    info == null ? -1 : info.startOffset(),
                    info == null ? -1 : info.leaderEpoch().orElse(-1),
                    info == null ? -1 : info.lag().orElse(-1L)));
            }
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        }
    }
}
