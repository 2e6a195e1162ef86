// One KIP-932 share consumer of the Java client 4.4 (KafkaShareConsumer) as a test peer, for
// tests/e2e/test_share_groups.py: it joins share group G on topic T and acknowledges every record
// explicitly, choosing the type from the record's value:
//
//   "poison"            RELEASE every time (archived by the broker at the delivery limit)
//   "reject-..."        REJECT (never delivered again)
//   "release-..."       RELEASE at its first delivery, ACCEPT later
//   anything else       ACCEPT
//
//   java -cp JARS ShareDriver BOOTSTRAP GROUP TOPIC NAME [--earliest] [--config-only]
//        [--read-committed] [--work-ms-per-record MS] [--lock-ms MS] [--hold] [--timeout-s S]
//
// With --earliest it first sets the group config share.auto.offset.reset=earliest (Admin's
// incrementalAlterConfigs on the GROUP resource); with --config-only it then exits. It polls until
// its standard input closes (or the timeout), then closes the consumer; --work-ms-per-record
// stands for the time processing a record takes (so that several members share the work): the
// records a poll returned are reported delivered at once, then worked on, then acknowledged.
// --lock-ms sets the group config share.record.lock.duration.ms, --read-committed
// share.isolation.level=read_committed (both with --earliest's admin call).
// --hold: a member that stops working: it polls until it gets records, reports them delivered, and
// then neither acknowledges nor polls again until it is killed or its stdin closes (then it halts
// without closing the consumer). Output: JSON lines on stdout, one per event:
//   {"event":"delivered","member":NAME,"partition":P,"offset":O,"value":V,"count":C,"t":MS}
//   {"event":"acknowledging","member":NAME,"partition":P,"offset":O,"type":"ACCEPT","t":MS}
//   {"event":"committed","member":NAME,"errors":N,"t":MS}   (after each commitSync)
//   {"event":"closed","member":NAME,"t":MS}  /  {"event":"error","member":NAME,"message":M}
// "acknowledging" is written before commitSync sends the acknowledgements, so a record's holding
// interval is [delivered, acknowledging]: another member may get it only after that.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ShareDriver {
    static String member;

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    static long now() {
        return System.currentTimeMillis();
    }

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        String group = argv[1];
        String topic = argv[2];
        member = argv[3];
        boolean earliest = false;
        boolean readCommitted = false;
        boolean configOnly = false;
        long workMs = 0;
        String lockMs = null;
        boolean hold = false;
        double timeoutS = 120.0;
        for (int i = 4; i < argv.length; i++) {
            switch (argv[i]) {
                case "--earliest" -> earliest = true;
                case "--read-committed" -> readCommitted = true;
                case "--config-only" -> configOnly = true;
                case "--work-ms-per-record" -> workMs = Long.parseLong(argv[++i]);
                case "--lock-ms" -> lockMs = argv[++i];
                case "--hold" -> hold = true;
                case "--timeout-s" -> timeoutS = Double.parseDouble(argv[++i]);
                default -> throw new IllegalArgumentException("unknown option " + argv[i]);
            }
        }
        long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
        if (earliest) {
            Properties admin = new Properties();
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin client = Admin.create(admin)) {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
                AlterConfigOp op = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
                List<AlterConfigOp> ops = new java.util.ArrayList<>(List.of(op));
                if (readCommitted) {
                    ops.add(new AlterConfigOp(
                        new ConfigEntry("share.isolation.level", "read_committed"), AlterConfigOp.OpType.SET));
                }
                if (lockMs != null) {
                    ops.add(new AlterConfigOp(
                        new ConfigEntry("share.record.lock.duration.ms", lockMs), AlterConfigOp.OpType.SET));
                }
                client.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
            }
            emit("{\"event\":\"configured\",\"member\":" + quote(member) + ",\"t\":" + now() + "}");
        }
        if (configOnly) {
            System.exit(0);
        }
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // the test closes our stdin to stop us
                }
            } catch (java.io.IOException e) {
                // closed
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-" + member);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put("share.acknowledgement.mode", "explicit");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (!stop.get() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = new String(r.value(), StandardCharsets.UTF_8);
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    emit("{\"event\":\"delivered\",\"member\":" + quote(member) + ",\"partition\":" + r.partition()
                        + ",\"offset\":" + r.offset() + ",\"value\":" + quote(value) + ",\"count\":" + count
                        + ",\"t\":" + now() + "}");
                }
                if (hold) {
                    while (!stop.get()) Thread.sleep(50);
                    Runtime.getRuntime().halt(0);
                }
                if (workMs > 0) Thread.sleep(workMs * records.count());
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = new String(r.value(), StandardCharsets.UTF_8);
                    int count = r.deliveryCount().map(Short::intValue).orElse(-1);
                    AcknowledgeType type;
                    if (value.equals("poison")) type = AcknowledgeType.RELEASE;
                    else if (value.startsWith("reject-")) type = AcknowledgeType.REJECT;
                    else if (value.startsWith("release-") && count == 1) type = AcknowledgeType.RELEASE;
                    else type = AcknowledgeType.ACCEPT;
                    emit("{\"event\":\"acknowledging\",\"member\":" + quote(member) + ",\"partition\":"
                        + r.partition() + ",\"offset\":" + r.offset() + ",\"type\":" + quote(type.name())
                        + ",\"t\":" + now() + "}");
                    consumer.acknowledge(r, type);
                }
                int errors = 0;
                for (var result : consumer.commitSync(Duration.ofSeconds(30)).values()) {
                    if (result.isPresent()) errors++;
                }
                emit("{\"event\":\"committed\",\"member\":" + quote(member) + ",\"errors\":" + errors
                    + ",\"t\":" + now() + "}");
            }
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"member\":" + quote(member) + ",\"message\":" + quote(e.toString()) + "}");
            System.exit(1);
        }
        emit("{\"event\":\"closed\",\"member\":" + quote(member) + ",\"t\":" + now() + "}");
        System.exit(0);
    }
}
