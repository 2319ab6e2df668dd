package kaas.interop;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * kaas.interop.MigrateGroup BOOTSTRAP TOPIC GROUP COUNT
 *
 * A group moves from the classic protocol to the consumer protocol (KIP-848) with its offsets.
 * TOPIC holds COUNT records (values v0..v(COUNT-1)), written beforehand.
 *
 * 1. A classic KafkaConsumer (group.protocol=classic, manual commitSync after every poll)
 *    consumes until it has read at least COUNT/2 records, commits, and stays in the group.
 * 2. (A consumer-protocol member joining while the classic one is in the group upgrades the group
 *    online: kaas.interop.MixedGroup.)
 * 3. The classic consumer closes (LeaveGroup: the group is Empty).
 * 4. A KafkaConsumer with group.protocol=consumer joins the group (it becomes a consumer group)
 *    and consumes the rest, committing after every poll; its first offset on each partition
 *    must be the classic consumer's commit (no re-read), and together they read every record
 *    exactly once. Admin.describeConsumerGroups reports the group's type.
 *
 * Prints one JSON line; exit code 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
public final class MigrateGroup {
    private static final long STEP_TIMEOUT_MS = 60_000;

    private static Properties consumerProps(String bootstrap, String group, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
              "org.apache.kafka.common.serialization.StringDeserializer");
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
              "org.apache.kafka.common.serialization.StringDeserializer");
        return p;
    }

    /** Polls until `target` records in all were read (or the timeout); commits after each poll. */
    private static void consume(KafkaConsumer<String, String> c, int target, List<String> values,
                                Map<Integer, Long> firstOffsets, Map<Integer, Long> committed) {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (values.size() < target && System.currentTimeMillis() < deadline) {
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                values.add(r.value());
                firstOffsets.putIfAbsent(r.partition(), r.offset());
                commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            if (!commit.isEmpty()) {
                c.commitSync(commit);
                commit.forEach((tp, om) -> committed.put(tp.partition(), om.offset()));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: MigrateGroup BOOTSTRAP TOPIC GROUP COUNT");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);
        List<String> errors = new ArrayList<>();
        List<String> classicValues = new ArrayList<>();
        List<String> consumerValues = new ArrayList<>();
        Map<Integer, Long> classicFirst = new TreeMap<>(), classicCommitted = new TreeMap<>();
        Map<Integer, Long> consumerFirst = new TreeMap<>(), consumerCommitted = new TreeMap<>();
        String describedType = "";

        try (KafkaConsumer<String, String> classic =
                 new KafkaConsumer<>(consumerProps(bootstrap, group, "classic"))) {
            classic.subscribe(Collections.singletonList(topic));
            consume(classic, count / 2, classicValues, classicFirst, classicCommitted);
        }

        try (KafkaConsumer<String, String> modern =
                 new KafkaConsumer<>(consumerProps(bootstrap, group, "consumer"))) {
            modern.subscribe(Collections.singletonList(topic));
            consume(modern, count - classicValues.size(), consumerValues, consumerFirst, consumerCommitted);
            try (Admin admin = Admin.create(Common.adminProps(bootstrap))) {
                describedType = admin.describeConsumerGroups(Collections.singletonList(group))
                    .all().get().get(group).type().toString();
            }
        } catch (Exception e) {
            errors.add("consumer protocol: " + Common.describe(e));
        }

        // Checks: no re-read, nothing skipped, nothing twice.
        for (Map.Entry<Integer, Long> e : consumerFirst.entrySet()) {
            long resumedAt = classicCommitted.getOrDefault(e.getKey(), 0L);
            if (e.getValue() != resumedAt) {
                errors.add("partition " + e.getKey() + ": the consumer protocol started at " + e.getValue()
                           + ", the classic consumer committed " + resumedAt);
            }
        }
        Set<String> all = new TreeSet<>(classicValues);
        all.addAll(consumerValues);
        int duplicates = classicValues.size() + consumerValues.size() - all.size();
        int missing = 0;
        for (int i = 0; i < count; i++) {
            if (!all.contains("v" + i)) {
                missing++;
            }
        }
        if (duplicates != 0 || missing != 0 || all.size() != count) {
            errors.add("read " + all.size() + " distinct of " + count + ", " + duplicates + " twice");
        }
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"ok\":").append(errors.isEmpty());
        sb.append(",\"classic_records\":").append(classicValues.size());
        sb.append(",\"consumer_records\":").append(consumerValues.size());
        sb.append(",\"duplicates\":").append(duplicates);
        sb.append(",\"missing\":").append(missing);
        sb.append(",\"classic_committed\":").append(Common.intMap(classicCommitted));
        sb.append(",\"consumer_first\":").append(Common.intMap(consumerFirst));
        sb.append(",\"consumer_committed\":").append(Common.intMap(consumerCommitted));
        sb.append(",\"described_type\":").append(Common.q(describedType));
        sb.append(",\"errors\":[");
        for (int i = 0; i < errors.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(Common.q(errors.get(i)));
        }
        sb.append("]}");
        System.out.println(sb);
        System.exit(errors.isEmpty() ? 0 : 1);
    }
}
