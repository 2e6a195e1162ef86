// The Java admin client (kafka-clients 4.4.0) sets and describes client quotas on one broker.
//
//   java -cp JARS QuotaAdmin BOOTSTRAP ENTITY_TYPE ENTITY_NAME KEY=VALUE...
//
// Sets each KEY to VALUE for the entity (alterClientQuotas), then prints the entity's quotas as
// described back (describeClientQuotas, exact match, until all of them are seen, at most 30 s),
// one `quota KEY VALUE` line each. Any failure
// is printed as `error ...` and exits 1.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public final class QuotaAdmin {
    public static void main(String[] argv) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, argv[0]);
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(argv[1], argv[2]));
        List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
        for (int i = 3; i < argv.length; i++) {
            String[] kv = argv[i].split("=", 2);
            ops.add(new ClientQuotaAlteration.Op(kv[0], Double.valueOf(kv[1])));
        }
        try (Admin admin = Admin.create(props)) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, ops))).all().get(60, TimeUnit.SECONDS);
            ClientQuotaFilter filter =
                ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(argv[1], argv[2])));
            // The broker answers from its metadata image, which follows the controller's commit.
            Map<ClientQuotaEntity, Map<String, Double>> described = Map.of();
            for (int i = 0; i < 300 && described.getOrDefault(entity, Map.of()).size() < ops.size(); i++) {
                if (i > 0) {
                    Thread.sleep(100);
                }
                described = admin.describeClientQuotas(filter).entities().get(60, TimeUnit.SECONDS);
            }
            for (Map.Entry<String, Double> e : new TreeMap<>(described.getOrDefault(entity, Map.of())).entrySet()) {
                System.out.println("quota " + e.getKey() + " " + e.getValue());
            }
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        }
    }
}
