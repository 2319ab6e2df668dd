package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * kaas.interop.Ctp BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID COUNT PARTITIONS
 *
 * Exactly-once consume-transform-produce with KafkaProducer.sendOffsetsToTransaction:
 *
 * 1. COUNT input records "k<i>"/"v<i>" are produced (non-transactional) to IN_TOPIC.
 * 2. Instance 1 (KafkaConsumer in GROUP, read_committed, no auto commit; KafkaProducer with
 *    TRANSACTIONAL_ID) loops: poll, beginTransaction, send "T:V<i>" to OUT_TOPIC,
 *    sendOffsetsToTransaction(positions, consumer.groupMetadata()), commitTransaction, until it
 *    has processed COUNT/2 records.
 * 3. Instance 1 opens one more transaction: records sent and flushed, offsets sent.
 * 4. Instance 2 (same TRANSACTIONAL_ID) calls initTransactions: instance 1 is fenced and its
 *    open transaction aborted. Instance 1's commitTransaction must throw ProducerFencedException;
 *    it then closes (its consumer leaves the group).
 * 5. Instance 2 subscribes, takes over the group, processes the rest the same way until the
 *    group's committed offsets equal the input end offsets.
 *
 * Checks: read_committed OUT_TOPIC holds every transformed input exactly once (nothing else);
 * read_uncommitted holds those plus instance 1's aborted batch; instance 2 processed exactly
 * the records instance 1 had not committed; the group's committed offsets (requireStable)
 * equal the input end offsets; the read_committed end offsets (LSO) reach the high watermarks.
 * Prints one JSON line; exit code 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
public final class Ctp {
    private static final long STEP_TIMEOUT_MS = 90_000;

    static String transform(String v) {
        return "T:" + v.toUpperCase();
    }

    static final class Instance implements AutoCloseable {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final KafkaProducer<String, String> producer;
        final String inTopic;
        final String outTopic;
        long processed;
        int committedTxns;

        Instance(String name, String bootstrap, String inTopic, String outTopic, String group, String txnId) {
            this.name = name;
            this.inTopic = inTopic;
            this.outTopic = outTopic;
            Properties cp = GroupSupport.consumerProps(bootstrap, name + "-consumer", group);
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "100");
            cp.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "2048"); // polls mix partitions
            if ("consumer".equals(protocol)) {
                cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"); // KIP-848
            } else {
                cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
                cp.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            }
            consumer = new KafkaConsumer<>(cp);
            Properties pp = Common.clientProps();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.CLIENT_ID_CONFIG, name + "-producer");
            pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            producer = new KafkaProducer<>(pp);
        }

        List<ConsumerRecord<String, String>> poll() {
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(500));
            for (ConsumerRecord<String, String> r : recs) {
                out.add(r);
            }
            return out;
        }

        void beginAndSend(List<ConsumerRecord<String, String>> recs) {
            producer.beginTransaction();
            for (ConsumerRecord<String, String> r : recs) {
                producer.send(new ProducerRecord<>(outTopic, r.key(), transform(r.value())));
            }
        }

        void sendOffsets() {
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : consumer.assignment()) {
                offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
            }
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        }

        void commit() {
            producer.commitTransaction();
            committedTxns++;
        }

        /** One transaction over one poll's records; returns how many. */
        int step() {
            List<ConsumerRecord<String, String>> recs = poll();
            if (recs.isEmpty()) {
                return 0;
            }
            beginAndSend(recs);
            sendOffsets();
            commit();
            processed += recs.size();
            return recs.size();
        }

        @Override
        public void close() {
            try {
                consumer.close(Duration.ofSeconds(10));
            } catch (Exception ignored) {
                // already closed
            }
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (Exception ignored) {
                // fenced producers may complain
            }
        }
    }

    /** group.protocol of the instances' consumers. */
    static volatile String protocol = "classic";

    public static void main(String[] args) {
        if (args.length < 7) {
            System.err.println("usage: Ctp BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID COUNT PARTITIONS [PROTOCOL]");
            System.exit(2);
        }
        if (args.length > 7) {
            protocol = args[7]; // the consumers' group.protocol: classic (default) or consumer
        }
        GroupSupport.Summary s = new GroupSupport.Summary();
        try {
            run(args[0], args[1], args[2], args[3], args[4], Integer.parseInt(args[5]), Integer.parseInt(args[6]), s);
        } catch (Throwable t) {
            s.error("unexpected exception: " + Common.describe(t));
        }
        s.finish("Ctp");
    }

    private static void run(String bootstrap, String inTopic, String outTopic, String group, String txnId,
                            int count, int partitions, GroupSupport.Summary s) throws Exception {
        Common.ensureTopic(bootstrap, inTopic, partitions, (short) 1);
        Common.ensureTopic(bootstrap, outTopic, partitions, (short) 1);
        GroupSupport.produce(bootstrap, inTopic, 0, count);
        Map<Integer, Long> inEnds = GroupSupport.endOffsets(bootstrap, inTopic, partitions, IsolationLevel.READ_UNCOMMITTED);
        s.put("input_end_offsets", Common.intMap(inEnds));

        List<ConsumerRecord<String, String>> pending = new ArrayList<>();
        try (Instance one = new Instance("ctp-1", bootstrap, inTopic, outTopic, group, txnId)) {
            one.producer.initTransactions();
            one.consumer.subscribe(List.of(inTopic));
            long deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
            while (one.processed < count / 2) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("instance 1 processed only " + one.processed);
                }
                one.step();
            }
            s.put("instance1_txns", one.committedTxns);
            s.put("instance1_records", one.processed);

            // Instance 1's last transaction stays open: records flushed, offsets sent.
            deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
            while (pending.isEmpty()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("instance 1 got no more input");
                }
                pending = one.poll();
            }
            one.beginAndSend(pending);
            one.producer.flush();
            one.sendOffsets();
            Set<Integer> pendingParts = new TreeSet<>();
            for (ConsumerRecord<String, String> r : pending) {
                pendingParts.add(r.partition());
            }
            s.put("open_txn_records", pending.size());
            s.put("open_txn_partitions", GroupSupport.jsonInts(pendingParts));

            try (Instance two = new Instance("ctp-2", bootstrap, inTopic, outTopic, group, txnId)) {
                two.producer.initTransactions(); // fences instance 1, aborts its open transaction

                String fence;
                try {
                    one.commit();
                    fence = "none";
                    s.error("instance 1's commitTransaction succeeded after instance 2's initTransactions");
                } catch (ProducerFencedException e) {
                    fence = e.getClass().getSimpleName();
                } catch (Exception e) {
                    fence = Common.describe(e);
                    s.error("instance 1's commitTransaction after being fenced threw " + fence
                            + ", expected ProducerFencedException");
                }
                s.putString("instance1_commit_error", fence);
                one.close(); // leaves the group

                two.consumer.subscribe(List.of(inTopic));
                deadline = System.currentTimeMillis() + STEP_TIMEOUT_MS;
                while (true) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("instance 2 did not finish; processed " + two.processed
                                + ", committed " + GroupSupport.committed(bootstrap, group, inTopic, partitions, true));
                    }
                    if (two.step() == 0 && two.consumer.assignment().size() == partitions) {
                        Map<Integer, Long> com = GroupSupport.committed(bootstrap, group, inTopic, partitions, true);
                        if (com.equals(inEnds)) {
                            break;
                        }
                    }
                }
                s.put("instance2_txns", two.committedTxns);
                s.put("instance2_records", two.processed);
                if (two.processed != count - one.processed) {
                    s.error("instance 2 processed " + two.processed + " records, expected exactly the "
                            + (count - one.processed) + " instance 1 had not committed");
                }
            }
        }

        // Verify the output.
        Map<Integer, Long> lso = GroupSupport.endOffsets(bootstrap, outTopic, partitions, IsolationLevel.READ_COMMITTED);
        Map<Integer, Long> hw = GroupSupport.endOffsets(bootstrap, outTopic, partitions, IsolationLevel.READ_UNCOMMITTED);
        s.put("output_lso", Common.intMap(lso));
        s.put("output_hw", Common.intMap(hw));
        if (!lso.equals(hw)) {
            s.error("output LSO " + lso + " behind the high watermark " + hw);
        }
        Map<String, Integer> committedOut = readAll(bootstrap, outTopic, partitions, "read_committed", hw);
        Map<String, Integer> uncommittedOut = readAll(bootstrap, outTopic, partitions, "read_uncommitted", hw);
        int dups = 0;
        int missing = 0;
        for (int i = 0; i < count; i++) {
            int n = committedOut.getOrDefault(transform("v" + i), 0);
            if (n == 0) {
                missing++;
            } else if (n > 1) {
                dups++;
            }
        }
        long committedTotal = committedOut.values().stream().mapToLong(Integer::longValue).sum();
        long uncommittedTotal = uncommittedOut.values().stream().mapToLong(Integer::longValue).sum();
        s.put("output_read_committed", committedTotal);
        s.put("output_read_uncommitted", uncommittedTotal);
        s.put("output_missing", missing);
        s.put("output_duplicated", dups);
        if (missing > 0 || dups > 0 || committedTotal != count) {
            s.error("read_committed output: " + committedTotal + " records for " + count + " inputs, "
                    + missing + " missing, " + dups + " more than once");
        }
        if (uncommittedTotal != count + pending.size()) {
            s.error("read_uncommitted output: " + uncommittedTotal + " records, expected " + count
                    + " + the " + pending.size() + " of the aborted transaction");
        }
        for (ConsumerRecord<String, String> r : pending) {
            if (uncommittedOut.getOrDefault(transform(r.value()), 0) != 2) {
                s.error("aborted record " + transform(r.value()) + " should appear twice read_uncommitted "
                        + "(aborted + committed), saw " + uncommittedOut.getOrDefault(transform(r.value()), 0));
                break;
            }
        }
        Map<Integer, Long> com = GroupSupport.committed(bootstrap, group, inTopic, partitions, true);
        s.put("group_committed", Common.intMap(com));
        if (!com.equals(new TreeMap<>(inEnds))) {
            s.error("group committed offsets " + com + " != input end offsets " + inEnds);
        }
    }

    /** value -> occurrences, reading every partition from 0 to the given end offsets. */
    private static Map<String, Integer> readAll(String bootstrap, String topic, int partitions, String isolation,
                                                Map<Integer, Long> ends) {
        Properties p = GroupSupport.consumerProps(bootstrap, "ctp-verify-" + isolation, null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        Common.ReadBack r = Common.readToTargets(p, GroupSupport.partitions(topic, partitions), ends, 60_000);
        if (r.error != null) {
            throw new IllegalStateException(isolation + " reader of " + topic + ": " + r.error);
        }
        Map<String, Integer> out = new HashMap<>();
        for (List<ConsumerRecord<String, String>> recs : r.records.values()) {
            for (ConsumerRecord<String, String> rec : recs) {
                out.merge(rec.value(), 1, Integer::sum);
            }
        }
        return out;
    }
}
