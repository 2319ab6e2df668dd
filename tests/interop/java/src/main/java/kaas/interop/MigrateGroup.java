package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

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
        return GroupSupport.memberProps(bootstrap, null, group, protocol, 50);
    }

    /** Polls until `target` records in all were read (or the timeout); commits after each poll. */
    private static void consume(KafkaConsumer<String, String> c, int target, List<String> values,
                                Map<Integer, Long> firstOffsets, Map<Integer, Long> committed) {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (values.size() < target && System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<String, String> r : records) {
                values.add(r.value());
                firstOffsets.putIfAbsent(r.partition(), r.offset());
            }
            Map<TopicPartition, OffsetAndMetadata> commit = GroupSupport.nextOffsets(records);
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
        GroupSupport.Summary s = new GroupSupport.Summary();
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
            describedType = GroupSupport.groupType(bootstrap, group);
        } catch (Exception e) {
            s.error("consumer protocol: " + Common.describe(e));
        }

        // Checks: no re-read, nothing skipped, nothing twice.
        for (Map.Entry<Integer, Long> e : consumerFirst.entrySet()) {
            long resumedAt = classicCommitted.getOrDefault(e.getKey(), 0L);
            if (e.getValue() != resumedAt) {
                s.error("partition " + e.getKey() + ": the consumer protocol started at " + e.getValue()
                        + ", the classic consumer committed " + resumedAt);
            }
        }
        List<String> all = new ArrayList<>(classicValues);
        all.addAll(consumerValues);
        s.put("classic_records", classicValues.size());
        s.put("consumer_records", consumerValues.size());
        new GroupSupport.ReadOnce(all, count).report(s, count);
        s.put("classic_committed", Common.intMap(classicCommitted));
        s.put("consumer_first", Common.intMap(consumerFirst));
        s.put("consumer_committed", Common.intMap(consumerCommitted));
        s.putString("described_type", describedType);
        s.finish("MigrateGroup");
    }
}
