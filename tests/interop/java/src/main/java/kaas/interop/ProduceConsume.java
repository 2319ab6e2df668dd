package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * kaas.interop.ProduceConsume BOOTSTRAP TOPIC COUNT [PARTITIONS=3]
 *
 * 1. AdminClient creates TOPIC (PARTITIONS partitions, replication factor 1; an existing topic
 *    is tolerated, its older records are recognised by offset and skipped).
 * 2. A KafkaProducer with the DEFAULT settings (idempotence on, acks=all) sends COUNT records,
 *    key "k<i>", value "v<i>", letting the default partitioner spread them over the partitions,
 *    and waits for every acknowledgement; any send exception fails the run.
 * 3. A group-less KafkaConsumer assign()s every partition, seeks to the beginning and reads
 *    until it has COUNT records or 60 s have passed (then 1 s more, to see trailing duplicates).
 *
 * Checks: every value seen exactly once; key matches value; each record is at the partition and
 * offset its acknowledgement reported; within a partition, the acknowledged offsets and the
 * consumed order follow the send order; with COUNT >= 1000 every partition got records.
 *
 * Prints one JSON line on stdout, exit code 0 when every check passed, 1 otherwise (the reasons
 * are in the JSON "errors" array and on stderr), 2 on bad usage.
 */
public final class ProduceConsume {
    private static final long CONSUME_TIMEOUT_MS = 60_000;

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: ProduceConsume BOOTSTRAP TOPIC COUNT [PARTITIONS]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        int partitions = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        List<String> errors = new ArrayList<>();
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("topic", Common.q(topic));
        out.put("sent", 0);
        out.put("received", 0);
        out.put("duplicates", 0);
        try {
            run(bootstrap, topic, count, partitions, out, errors);
        } catch (Throwable t) {
            errors.add("unexpected exception: " + Common.describe(t));
        }
        StringBuilder errJson = new StringBuilder("[");
        for (int i = 0; i < errors.size(); i++) {
            if (i > 0) {
                errJson.append(',');
            }
            errJson.append(Common.q(errors.get(i)));
        }
        errJson.append(']');
        out.put("ok", errors.isEmpty());
        out.put("errors", errJson.toString());
        StringBuilder line = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : out.entrySet()) {
            if (!first) {
                line.append(',');
            }
            first = false;
            line.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        line.append('}');
        System.out.println(line);
        System.out.flush();
        if (!errors.isEmpty()) {
            for (String e : errors) {
                System.err.println("ProduceConsume FAILED: " + e);
            }
            System.exit(1);
        }
        System.exit(0);
    }

    private static Properties consumerProps(String bootstrap, String clientId) {
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    private static void run(String bootstrap, String topic, int count, int partitions,
                            Map<String, Object> out, List<String> errors) throws Exception {
        boolean created = Common.ensureTopic(bootstrap, topic, partitions, (short) 1);
        out.put("created", created);

        // Partitions and their end offsets before we produce: older records are not ours.
        List<TopicPartition> tps = new ArrayList<>();
        Map<Integer, Long> baseline = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, "kaas-interop-baseline"))) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                errors.add("metadata shows no partitions for " + topic);
                return;
            }
            for (PartitionInfo pi : infos) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(tps, Duration.ofSeconds(30)).entrySet()) {
                baseline.put(e.getKey().partition(), e.getValue());
            }
        }
        out.put("partitions", tps.size());
        if (created && tps.size() != partitions) {
            errors.add("created " + partitions + " partitions but metadata shows " + tps.size());
        }

        // ---- produce ----
        int[] ackPartition = new int[count];
        long[] ackOffset = new long[count];
        Arrays.fill(ackPartition, -1);
        Arrays.fill(ackOffset, -1);
        AtomicLong acked = new AtomicLong();
        AtomicLong sendErrors = new AtomicLong();
        ConcurrentLinkedQueue<String> firstSendErrors = new ConcurrentLinkedQueue<>();

        Properties pp = Common.clientProps();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.CLIENT_ID_CONFIG, "kaas-interop-producer");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // everything else stays at the client's defaults: enable.idempotence=true, acks=all.
        long t0 = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < count; i++) {
                final int idx = i;
                try {
                    producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i), (md, ex) -> {
                        if (ex != null) {
                            if (sendErrors.incrementAndGet() <= 5) {
                                firstSendErrors.add("record " + idx + ": " + Common.describe(ex));
                            }
                        } else {
                            ackPartition[idx] = md.partition();
                            ackOffset[idx] = md.offset();
                            acked.incrementAndGet();
                        }
                    });
                } catch (Exception ex) {
                    if (sendErrors.incrementAndGet() <= 5) {
                        firstSendErrors.add("send() of record " + idx + " threw " + Common.describe(ex));
                    }
                }
            }
            producer.flush();
        }
        long produceMs = (System.nanoTime() - t0) / 1_000_000;
        out.put("sent", count);
        out.put("acked", acked.get());
        out.put("send_errors", sendErrors.get());
        out.put("produce_ms", produceMs);
        if (sendErrors.get() > 0) {
            errors.add(sendErrors.get() + " send errors, first: " + String.join(" | ", firstSendErrors));
        }
        if (acked.get() != count) {
            errors.add("acknowledged " + acked.get() + " of " + count + " records");
        }

        // Acknowledged offsets must follow send order within each partition and be new.
        Map<Integer, Long> lastAckOffset = new HashMap<>();
        long ackOrderViolations = 0;
        for (int i = 0; i < count; i++) {
            int p = ackPartition[i];
            if (p < 0) {
                continue;
            }
            long off = ackOffset[i];
            Long prev = lastAckOffset.get(p);
            if ((prev != null && off <= prev) || off < baseline.getOrDefault(p, 0L)) {
                if (ackOrderViolations++ < 3) {
                    errors.add("ack of record " + i + " at " + topic + "-" + p + "@" + off
                            + " does not follow the previous ack (" + prev + ") / baseline " + baseline.get(p));
                }
            }
            lastAckOffset.put(p, off);
        }
        out.put("ack_order_violations", ackOrderViolations);

        // ---- consume ----
        boolean[] seen = new boolean[count];
        long unique = 0;
        long readTotal = 0;
        long duplicates = 0;
        long preexisting = 0;
        long foreign = 0;
        long keyMismatch = 0;
        long ackMismatch = 0;
        long outOfOrder = 0;
        Map<Integer, Long> perPartition = new TreeMap<>();
        Map<Integer, Integer> lastIndex = new HashMap<>();
        long t1 = System.nanoTime();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, "kaas-interop-consumer"))) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + CONSUME_TIMEOUT_MS;
            long extraUntil = Long.MAX_VALUE;
            while (true) {
                long now = System.currentTimeMillis();
                if (now >= deadline || now >= extraUntil) {
                    break;
                }
                ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : recs) {
                    if (r.offset() < baseline.getOrDefault(r.partition(), 0L)) {
                        preexisting++;
                        continue;
                    }
                    readTotal++;
                    String v = r.value();
                    int idx = -1;
                    if (v != null && v.startsWith("v")) {
                        try {
                            idx = Integer.parseInt(v.substring(1));
                        } catch (NumberFormatException ignored) {
                            idx = -1;
                        }
                    }
                    if (idx < 0 || idx >= count) {
                        if (foreign++ < 3) {
                            errors.add("unexpected record at " + r.topic() + "-" + r.partition() + "@" + r.offset()
                                    + ": key=" + r.key() + " value=" + abbreviate(v));
                        }
                        continue;
                    }
                    if (seen[idx]) {
                        if (duplicates++ < 3) {
                            errors.add("duplicate " + v + " at " + r.topic() + "-" + r.partition() + "@" + r.offset());
                        }
                    } else {
                        seen[idx] = true;
                        unique++;
                    }
                    perPartition.merge(r.partition(), 1L, Long::sum);
                    if (!("k" + idx).equals(r.key())) {
                        if (keyMismatch++ < 3) {
                            errors.add("record " + v + " has key " + r.key());
                        }
                    }
                    if (ackPartition[idx] >= 0
                            && (ackPartition[idx] != r.partition() || ackOffset[idx] != r.offset())) {
                        if (ackMismatch++ < 3) {
                            errors.add("record " + v + " read at " + r.partition() + "@" + r.offset()
                                    + " but acknowledged at " + ackPartition[idx] + "@" + ackOffset[idx]);
                        }
                    }
                    Integer prev = lastIndex.get(r.partition());
                    if (prev != null && idx <= prev) {
                        if (outOfOrder++ < 3) {
                            errors.add("partition " + r.partition() + ": " + v + " read after v" + prev);
                        }
                    }
                    lastIndex.put(r.partition(), idx);
                }
                if (unique >= count && extraUntil == Long.MAX_VALUE) {
                    // got everything; keep polling briefly so trailing duplicates are seen
                    extraUntil = System.currentTimeMillis() + 1000;
                }
            }
        }
        long consumeMs = (System.nanoTime() - t1) / 1_000_000;
        long missing = count - unique;
        out.put("received", unique);
        out.put("records_read", readTotal);
        out.put("duplicates", duplicates);
        out.put("missing", missing);
        out.put("out_of_order", outOfOrder);
        out.put("key_mismatch", keyMismatch);
        out.put("ack_mismatch", ackMismatch);
        out.put("foreign", foreign);
        out.put("preexisting", preexisting);
        out.put("per_partition", Common.intMap(perPartition));
        out.put("consume_ms", consumeMs);
        if (missing > 0) {
            StringBuilder ex = new StringBuilder();
            int shown = 0;
            for (int i = 0; i < count && shown < 5; i++) {
                if (!seen[i]) {
                    ex.append(shown++ == 0 ? "" : ", ").append("v").append(i)
                            .append(" (acked at ").append(ackPartition[i]).append('@').append(ackOffset[i]).append(')');
                }
            }
            errors.add(missing + " of " + count + " records not read back within "
                    + CONSUME_TIMEOUT_MS / 1000 + " s, e.g. " + ex);
        }
        if (count >= 1000 && perPartition.size() < tps.size()) {
            errors.add("records landed in only " + perPartition.size() + " of " + tps.size() + " partitions: " + perPartition);
        }
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }
}
