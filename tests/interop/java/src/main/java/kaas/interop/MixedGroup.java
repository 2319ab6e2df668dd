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
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * kaas.interop.MixedGroup BOOTSTRAP TOPIC GROUP COUNT
 *
 * KIP-848 online migration of a group in use (mixed mode). TOPIC holds COUNT records (values
 * v0..v(COUNT-1)), written beforehand. Every member polls at most 5 records, pauses 50 ms and
 * commits what it read with commitSync after every poll, each in its own thread.
 *
 * 1. Two classic members A and B (group.protocol=classic) consume until each read something
 *    and a third of the records was read.
 * 2. B is restarted with group.protocol=consumer (closed, then C joins with the consumer
 *    protocol): the group is upgraded online, A stays a classic member inside the consumer group.
 *    Both consume until C read something and two thirds were read; the group's type is Consumer.
 * 3. C closes: only the classic member is left, the group is downgraded to a classic group and A
 *    reads the rest; the group's type is Classic.
 *
 * Every record must be read exactly once (commits after every poll: nothing is re-read when
 * partitions move). Prints one JSON line; exit code 0 when every check passed, 1 otherwise, 2 on
 * bad usage.
 */
public final class MixedGroup {
    private static final long STEP_TIMEOUT_MS = 90_000;

    private static final ConcurrentLinkedQueue<String> VALUES = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger TOTAL = new AtomicInteger();
    private static final List<String> ERRORS = Collections.synchronizedList(new ArrayList<>());

    private static final class Member implements Runnable {
        final String name;
        final Properties props;
        final String topic;
        final AtomicInteger read = new AtomicInteger();
        volatile boolean stop;
        final Thread thread;

        Member(String name, Properties props, String topic) {
            this.name = name;
            this.props = props;
            this.topic = topic;
            this.thread = new Thread(this, name);
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
                c.subscribe(Collections.singletonList(topic));
                while (!stop) {
                    Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        VALUES.add(r.value());
                        read.incrementAndGet();
                        TOTAL.incrementAndGet();
                        commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (!commit.isEmpty()) {
                        try {
                            c.commitSync(commit);
                        } catch (Exception e) {
                            ERRORS.add(name + ": commit failed: " + Common.describe(e));
                        }
                    }
                    Thread.sleep(50);
                }
            } catch (Exception e) {
                ERRORS.add(name + ": " + Common.describe(e));
            }
        }

        void close() throws InterruptedException {
            stop = true;
            thread.join(60_000);
        }
    }

    private static Properties props(String bootstrap, String group, String protocol, String clientId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
              "org.apache.kafka.common.serialization.StringDeserializer");
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
              "org.apache.kafka.common.serialization.StringDeserializer");
        return p;
    }

    private static boolean await(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                ERRORS.add("timed out waiting for " + what + " (read " + TOTAL.get() + ")");
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    private static String groupType(String bootstrap, String group) {
        try (Admin admin = Admin.create(Common.adminProps(bootstrap))) {
            return admin.describeConsumerGroups(Collections.singletonList(group)).all().get().get(group).type()
                .toString();
        } catch (Exception e) {
            return "error: " + Common.describe(e);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: MixedGroup BOOTSTRAP TOPIC GROUP COUNT");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);

        Member a = new Member("classic-a", props(bootstrap, group, "classic", "classic-a"), topic);
        Member b = new Member("classic-b", props(bootstrap, group, "classic", "classic-b"), topic);
        await("two classic members reading a third",
              () -> a.read.get() > 0 && b.read.get() > 0 && TOTAL.get() >= count / 3);
        String classicType = groupType(bootstrap, group);
        int phase1 = TOTAL.get();

        // B restarted with group.protocol=consumer: the online upgrade.
        b.close();
        int aBefore = a.read.get();
        Member c = new Member("consumer-c", props(bootstrap, group, "consumer", "consumer-c"), topic);
        await("the consumer-protocol member reading beside the classic member",
              () -> c.read.get() > 0 && a.read.get() > aBefore && TOTAL.get() >= 2 * count / 3);
        String mixedType = groupType(bootstrap, group);
        int phase2 = TOTAL.get();

        // The consumer-protocol member leaves: the online downgrade.
        c.close();
        await("the classic member reading the rest", () -> TOTAL.get() >= count);
        String finalType = groupType(bootstrap, group);
        Thread.sleep(500); // nothing more may come
        a.close();

        List<String> values = new ArrayList<>(VALUES);
        Set<String> all = new TreeSet<>(values);
        int duplicates = values.size() - all.size();
        int missing = 0;
        for (int i = 0; i < count; i++) {
            if (!all.contains("v" + i)) {
                missing++;
            }
        }
        List<String> errors = new ArrayList<>(ERRORS);
        if (duplicates != 0 || missing != 0 || all.size() != count) {
            errors.add("read " + all.size() + " distinct of " + count + ", " + duplicates + " twice");
        }
        StringBuilder sb = new StringBuilder("{");
        sb.append("\"ok\":").append(errors.isEmpty());
        sb.append(",\"read\":").append(values.size());
        sb.append(",\"classic_a\":").append(a.read.get());
        sb.append(",\"classic_b\":").append(b.read.get());
        sb.append(",\"consumer_c\":").append(c.read.get());
        sb.append(",\"phase1\":").append(phase1);
        sb.append(",\"phase2\":").append(phase2);
        sb.append(",\"duplicates\":").append(duplicates);
        sb.append(",\"missing\":").append(missing);
        sb.append(",\"classic_type\":").append(Common.q(classicType));
        sb.append(",\"mixed_type\":").append(Common.q(mixedType));
        sb.append(",\"final_type\":").append(Common.q(finalType));
        sb.append(",\"errors\":[");
        for (int i = 0; i < errors.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(Common.q(errors.get(i)));
        }
        sb.append("]}");
        System.out.println(sb);
        System.exit(errors.isEmpty() ? 0 : 1);
    }
}
