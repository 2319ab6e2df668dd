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
                    ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : records) {
                        VALUES.add(r.value());
                        read.incrementAndGet();
                        TOTAL.incrementAndGet();
                    }
                    Map<TopicPartition, OffsetAndMetadata> commit = GroupSupport.nextOffsets(records);
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
        return GroupSupport.memberProps(bootstrap, clientId, group, protocol, 5);
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
        try {
            return GroupSupport.groupType(bootstrap, group);
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
        GroupSupport.Summary s = new GroupSupport.Summary();
        ERRORS.forEach(s::error);
        s.put("read", values.size());
        s.put("classic_a", a.read.get());
        s.put("classic_b", b.read.get());
        s.put("consumer_c", c.read.get());
        s.put("phase1", phase1);
        s.put("phase2", phase2);
        new GroupSupport.ReadOnce(values, count).report(s, count);
        s.putString("classic_type", classicType);
        s.putString("mixed_type", mixedType);
        s.putString("final_type", finalType);
        s.finish("MixedGroup");
    }
}
