package kaas.interop;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * kaas.interop.GroupConsume BOOTSTRAP TOPIC GROUP COUNT PARTITIONS [PROTOCOL]
 *
 * PROTOCOL is the consumers' group.protocol: "classic" (the default, as below) or "consumer"
 * (KIP-848: the broker assigns with its default server assignor "uniform"; the client may not
 * set an assignor, session timeout or heartbeat interval). The steps and checks are the same:
 * both protocols are incremental.
 *
 * Two KafkaConsumers of one group (classic protocol, partition.assignment.strategy =
 * CooperativeStickyAssignor, manual commitSync after every poll), each in its own thread:
 *
 * 1. Member A joins alone and gets every partition.
 * 2. Member B joins: an incremental (cooperative) rebalance moves some partitions to B. A's
 *    onPartitionsRevoked must name only the partitions that moved to B (the eager protocol
 *    would revoke all of them), the two assignments are disjoint and complete.
 *    Admin.describeConsumerGroups: Stable, 2 members, assignor "cooperative-sticky".
 * 3. COUNT/2 records are produced and consumed by both members (each must get some).
 * 4. B leaves (close; it commits in onPartitionsRevoked): A's onPartitionsAssigned names
 *    exactly B's partitions (incremental add) and A then owns everything.
 * 5. The other COUNT - COUNT/2 records are produced; A consumes them, resuming B's partitions
 *    at B's commits, and closes.
 *
 * Checks: every record (partition, offset below the end offset) was consumed at least once and
 * every value v0..v(COUNT-1) was seen; no record was delivered twice (every handover here is
 * clean: commitSync after each poll and in onPartitionsRevoked); the group's committed offsets
 * equal the end offsets.
 * Prints one JSON line; exit code 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
public final class GroupConsume {
    private static final long STEP_TIMEOUT_MS = 60_000;
    /** group.protocol of both members. */
    static volatile String protocol = "classic";

    /** One consumer thread. Its KafkaConsumer is only touched from that thread. */
    static final class Member implements Runnable {
        final String name;
        final String bootstrap;
        final String topic;
        final String group;
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final List<List<Integer>> revokedSets = Collections.synchronizedList(new ArrayList<>());
        final List<List<Integer>> assignedSets = Collections.synchronizedList(new ArrayList<>());
        final Map<Long, String> consumed; // key: partition << 40 | offset
        final java.util.concurrent.atomic.AtomicLong duplicates = new java.util.concurrent.atomic.AtomicLong();
        volatile Set<Integer> owned = Collections.emptySet();
        volatile boolean stop;
        volatile String error;
        volatile long records;
        final Thread thread;

        Member(String name, String bootstrap, String topic, String group, Map<Long, String> consumed) {
            this.name = name;
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.group = group;
            this.consumed = consumed;
            this.thread = new Thread(this, "member-" + name);
        }

        private static List<Integer> parts(Collection<TopicPartition> tps) {
            List<Integer> l = new ArrayList<>();
            for (TopicPartition tp : tps) {
                l.add(tp.partition());
            }
            Collections.sort(l);
            return l;
        }

        @Override
        public void run() {
            Properties p = GroupSupport.consumerProps(bootstrap, "group-consume-" + name, group);
            if ("consumer".equals(protocol)) {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            } else {
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            }
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        events.add(name + " revoked " + parts(partitions));
                        if (!partitions.isEmpty()) {
                            revokedSets.add(parts(partitions));
                            c.commitSync(Duration.ofSeconds(30)); // what we processed so far
                        }
                        owned = new TreeSet<>(parts(c.assignment()));
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        events.add(name + " assigned " + parts(partitions));
                        if (!partitions.isEmpty()) {
                            assignedSets.add(parts(partitions));
                        }
                        owned = new TreeSet<>(parts(c.assignment()));
                    }

                    @Override
                    public void onPartitionsLost(Collection<TopicPartition> partitions) {
                        events.add(name + " LOST " + parts(partitions));
                        owned = new TreeSet<>(parts(c.assignment()));
                    }
                });
                while (!stop) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : recs) {
                        if (consumed.put(((long) r.partition() << 40) | r.offset(), r.value()) != null) {
                            duplicates.incrementAndGet();
                        }
                        records++;
                    }
                    if (!recs.isEmpty()) {
                        c.commitSync(Duration.ofSeconds(30));
                    }
                    owned = new TreeSet<>(parts(c.assignment()));
                }
                events.add(name + " closing");
            } catch (Throwable t) {
                error = Common.describe(t);
            }
            owned = Collections.emptySet();
        }
    }

    public static void main(String[] args) {
        if (args.length < 5) {
            System.err.println("usage: GroupConsume BOOTSTRAP TOPIC GROUP COUNT PARTITIONS");
            System.exit(2);
        }
        GroupSupport.Summary s = new GroupSupport.Summary();
        if (args.length > 5) {
            protocol = args[5];
        }
        try {
            run(args[0], args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]), s);
        } catch (Throwable t) {
            s.error("unexpected exception: " + Common.describe(t));
        }
        s.finish("GroupConsume");
    }

    private static void await(String what, BooleanSupplier cond, Member... members) throws InterruptedException {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (!cond.getAsBoolean()) {
            for (Member m : members) {
                if (m.error != null) {
                    throw new IllegalStateException("member " + m.name + " failed: " + m.error);
                }
            }
            if (System.currentTimeMillis() > deadline) {
                StringBuilder b = new StringBuilder();
                for (Member m : members) {
                    b.append(' ').append(m.name).append(" owns ").append(m.owned).append(" events ").append(m.events);
                }
                throw new IllegalStateException("timed out waiting for " + what + ";" + b);
            }
            Thread.sleep(20);
        }
    }

    private static boolean covered(Map<Long, String> consumed, Map<Integer, Long> ends) {
        for (Map.Entry<Integer, Long> e : ends.entrySet()) {
            for (long o = 0; o < e.getValue(); o++) {
                if (!consumed.containsKey(((long) e.getKey() << 40) | o)) {
                    return false;
                }
            }
        }
        return true;
    }

    private static void run(String bootstrap, String topic, String group, int count, int partitions,
                            GroupSupport.Summary s) throws Exception {
        Common.ensureTopic(bootstrap, topic, partitions, (short) 1);
        Set<Integer> all = new TreeSet<>();
        for (int p = 0; p < partitions; p++) {
            all.add(p);
        }
        int half = count / 2;

        Map<Long, String> consumed = new ConcurrentHashMap<>();
        Member a = new Member("A", bootstrap, topic, group, consumed);
        Member b = new Member("B", bootstrap, topic, group, consumed);
        try {
            // 1. A alone owns everything.
            a.thread.start();
            await("A to own all partitions", () -> a.owned.equals(all), a);
            int aRevokesBefore = a.revokedSets.size();

            // 2. B joins: cooperative, incremental rebalance.
            b.thread.start();
            await("A and B to split the partitions", () -> {
                Set<Integer> sa = a.owned;
                Set<Integer> sb = b.owned;
                if (sa.isEmpty() || sb.isEmpty()) {
                    return false;
                }
                Set<Integer> u = new TreeSet<>(sa);
                u.addAll(sb);
                return u.equals(all) && sa.size() + sb.size() == all.size();
            }, a, b);
            Set<Integer> aShare = new TreeSet<>(a.owned);
            Set<Integer> bShare = new TreeSet<>(b.owned);
            s.put("split_a", GroupSupport.jsonInts(aShare));
            s.put("split_b", GroupSupport.jsonInts(bShare));
            if (Math.abs(aShare.size() - bShare.size()) > 1) {
                s.error("unbalanced split: A " + aShare + ", B " + bShare);
            }
            Set<Integer> revokedFromA = new TreeSet<>();
            for (List<Integer> r : a.revokedSets.subList(aRevokesBefore, a.revokedSets.size())) {
                revokedFromA.addAll(r);
            }
            s.put("revoked_from_a_when_b_joined", GroupSupport.jsonInts(revokedFromA));
            if (!revokedFromA.equals(bShare)) {
                s.error("cooperative rebalance: A should have revoked exactly B's partitions " + bShare
                        + " but revoked " + revokedFromA + " (eager would revoke all)");
            }

            // While both are members: DescribeGroups.
            try (Admin admin = Admin.create(Common.adminProps(bootstrap))) {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                        .describedGroups().get(group).get(30, TimeUnit.SECONDS);
                s.putString("described_state", String.valueOf(d.groupState()));
                s.putString("described_assignor", d.partitionAssignor());
                s.put("described_members", d.members().size());
                if (d.groupState() != GroupState.STABLE) {
                    s.error("DescribeGroups state " + d.groupState() + " with two settled members, expected STABLE");
                }
                String expected = "consumer".equals(protocol) ? "uniform" : "cooperative-sticky";
                s.putString("described_type", String.valueOf(d.type()));
                if (!expected.equals(d.partitionAssignor())) {
                    s.error("DescribeGroups protocol " + d.partitionAssignor() + ", expected " + expected);
                }
                if (d.members().size() != 2) {
                    s.error("DescribeGroups shows " + d.members().size() + " members, expected 2");
                }
                Set<Integer> described = new HashSet<>();
                for (MemberDescription m : d.members()) {
                    for (TopicPartition tp : m.assignment().topicPartitions()) {
                        if (!described.add(tp.partition())) {
                            s.error("partition " + tp.partition() + " assigned to two members in DescribeGroups");
                        }
                    }
                }
                if (!described.equals(all)) {
                    s.error("DescribeGroups assignments cover " + described + ", expected " + all);
                }
            }

            // 3. First half consumed by the two.
            GroupSupport.produce(bootstrap, topic, 0, half);
            Map<Integer, Long> ends1 = GroupSupport.endOffsets(bootstrap, topic, partitions, IsolationLevel.READ_UNCOMMITTED);
            s.put("ends_first_half", Common.intMap(ends1));
            await("the first half to be consumed", () -> covered(consumed, ends1), a, b);
            s.put("first_half_records_a", a.records);
            s.put("first_half_records_b", b.records);
            if (a.records == 0 || b.records == 0) {
                s.error("both members should have consumed part of the first half: A " + a.records
                        + ", B " + b.records);
            }

            // 4. B leaves, A takes over its partitions.
            int aAssignsBefore = a.assignedSets.size();
            b.stop = true;
            b.thread.join(STEP_TIMEOUT_MS);
            if (b.error != null) {
                s.error("member B failed: " + b.error);
            }
            await("A to own all partitions after B left", () -> a.owned.equals(all), a);
            Set<Integer> addedToA = new TreeSet<>();
            for (List<Integer> r : a.assignedSets.subList(aAssignsBefore, a.assignedSets.size())) {
                addedToA.addAll(r);
            }
            s.put("added_to_a_when_b_left", GroupSupport.jsonInts(addedToA));
            if (!addedToA.equals(bShare)) {
                s.error("cooperative rebalance: A should have been given exactly B's partitions " + bShare
                        + " but onPartitionsAssigned named " + addedToA);
            }

            // 5. Second half, consumed by A alone.
            GroupSupport.produce(bootstrap, topic, half, count - half);
            Map<Integer, Long> ends2 = GroupSupport.endOffsets(bootstrap, topic, partitions, IsolationLevel.READ_UNCOMMITTED);
            s.put("end_offsets", Common.intMap(ends2));
            await("all records to be consumed", () -> covered(consumed, ends2), a);
            long consumedByA = a.records;
            Thread.sleep(500); // a few more polls (and their commits)
            a.stop = true;
            a.thread.join(STEP_TIMEOUT_MS);
            if (a.error != null) {
                s.error("member A failed: " + a.error);
            }
            s.put("records_a", consumedByA);
            s.put("records_b", b.records);
            List<String> events = new ArrayList<>(a.events);
            events.addAll(b.events);
            s.put("events", GroupSupport.jsonStrings(events));

            long total = 0;
            for (long v : ends2.values()) {
                total += v;
            }
            if (total != count) {
                s.error("topic holds " + total + " records, produced " + count);
            }
            Set<String> values = new HashSet<>(consumed.values());
            int missing = 0;
            for (int i = 0; i < count; i++) {
                if (!values.contains("v" + i)) {
                    missing++;
                }
            }
            s.put("distinct_consumed", consumed.size());
            long dups = a.duplicates.get() + b.duplicates.get();
            s.put("duplicates", dups);
            if (dups > 0) {
                s.error(dups + " records were delivered more than once (A " + a.duplicates.get()
                        + ", B " + b.duplicates.get() + ") although every handover committed first");
            }
            s.put("missing_values", missing);
            if (missing > 0) {
                s.error(missing + " of " + count + " values never consumed");
            }
            Map<Integer, Long> committed = GroupSupport.committed(bootstrap, group, topic, partitions, false);
            s.put("committed", Common.intMap(committed));
            if (!committed.equals(new TreeMap<>(ends2))) {
                s.error("committed offsets " + committed + " != end offsets " + ends2);
            }
        } finally {
            a.stop = true;
            b.stop = true;
            a.thread.join(STEP_TIMEOUT_MS);
            b.thread.join(STEP_TIMEOUT_MS);
        }
    }
}
