package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Transactional KafkaProducer (TV1 against kaas, which finalizes transaction.version=1) checked
 * with group-less KafkaConsumers (assign + seekToBeginning).
 *
 * <pre>
 * kaas.interop.Transactions run    BOOTSTRAP TOPIC TXNS PARTITIONS PER_PARTITION
 *     TXNS transactions with one transactional.id; each sends PER_PARTITION records to every
 *     partition (key "t&lt;n&gt;", value "t&lt;nnn&gt;-p&lt;p&gt;-r&lt;j&gt;"); every 3rd transaction is flushed and then
 *     aborted, the others committed. Checks: read_committed shows exactly the committed records,
 *     each once, in send order per partition, at the offset its ack reported; read_uncommitted
 *     shows the aborted ones too; each partition holds one marker per transaction
 *     (high watermark = TXNS * (PER_PARTITION + 1)); LSO == high watermark at the end.
 * kaas.interop.Transactions zombie BOOTSTRAP TOPIC
 *     Two zombie scenarios on a 2-partition topic. (1) producer A sends and flushes in a
 *     transaction; B initTransactions() with the same transactional.id; A.commitTransaction()
 *     must throw ProducerFencedException / InvalidProducerEpochException. (2) same, but A first
 *     sends again to the partition already in its transaction (the send must fail) and to a new
 *     partition, then commits (must fail). Each B then commits a transaction; read_committed
 *     shows exactly B's records, read_uncommitted also A's flushed (aborted) first records.
 * kaas.interop.Transactions count  BOOTSTRAP TOPIC read_committed|read_uncommitted
 *     Reads TOPIC from the beginning to its high watermark and counts the records.
 * </pre>
 *
 * Prints one JSON line on stdout; exit code 0 when every check passed, 1 otherwise (reasons in
 * the JSON "errors" array and on stderr), 2 on bad usage.
 */
public final class Transactions {
    private static final long READ_TIMEOUT_MS = 120_000;

    public static void main(String[] args) {
        if (args.length < 3) {
            usage();
        }
        String mode = args[0];
        String bootstrap = args[1];
        String topic = args[2];
        List<String> errors = new ArrayList<>();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("mode", Common.q(mode));
        out.put("topic", Common.q(topic));
        try {
            switch (mode) {
                case "run":
                    if (args.length < 6) {
                        usage();
                    }
                    run(bootstrap, topic, Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                            Integer.parseInt(args[5]), out, errors);
                    break;
                case "zombie":
                    zombie(bootstrap, topic, out, errors);
                    break;
                case "count":
                    if (args.length < 4) {
                        usage();
                    }
                    count(bootstrap, topic, args[3], out, errors);
                    break;
                default:
                    usage();
            }
        } catch (Throwable t) {
            errors.add("unexpected exception: " + Common.describe(t));
        }
        finish(out, errors);
    }

    private static void usage() {
        System.err.println("usage: Transactions run BOOTSTRAP TOPIC TXNS PARTITIONS PER_PARTITION\n"
                + "       Transactions zombie BOOTSTRAP TOPIC\n"
                + "       Transactions count BOOTSTRAP TOPIC read_committed|read_uncommitted");
        System.exit(2);
    }

    private static void finish(Map<String, Object> out, List<String> errors) {
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
        for (String e : errors) {
            System.err.println("Transactions FAILED: " + e);
        }
        System.exit(errors.isEmpty() ? 0 : 1);
    }

    // ------------------------------------------------------------------------------ clients

    static Properties txnProducerProps(String bootstrap, String txnId) {
        Properties p = Common.clientProps();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kaas-interop-txn-" + txnId);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    static Properties consumerProps(String bootstrap, String isolation) {
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kaas-interop-txn-reader-" + isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    static List<TopicPartition> partitionsOf(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, "read_uncommitted"))) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("metadata shows no partitions for " + topic);
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : infos) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            return tps;
        }
    }

    /** ListOffsets(LATEST) with the given isolation: high watermark or LSO. */
    static Map<Integer, Long> endOffsets(String bootstrap, List<TopicPartition> tps, String isolation) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            Map<Integer, Long> m = new TreeMap<>();
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(tps, Duration.ofSeconds(30)).entrySet()) {
                m.put(e.getKey().partition(), e.getValue());
            }
            return m;
        }
    }

    /**
     * Reads every partition from the beginning until the consumer's position reaches
     * {@code targets} (positions move past control records, which are never returned).
     * Returns the records per partition in read order; adds an error if the targets are not
     * reached within READ_TIMEOUT_MS.
     */
    static Map<Integer, List<ConsumerRecord<String, String>>> readAll(
            String bootstrap, List<TopicPartition> tps, String isolation, Map<Integer, Long> targets,
            List<String> errors) {
        Common.ReadBack r = Common.readToTargets(consumerProps(bootstrap, isolation), tps, targets, READ_TIMEOUT_MS);
        if (r.error != null) {
            errors.add(isolation + " " + r.error);
        }
        return r.records;
    }

    static boolean isFencing(Throwable t) {
        for (Throwable cur = t; cur != null; cur = cur.getCause() == cur ? null : cur.getCause()) {
            if (cur instanceof ProducerFencedException || cur instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    static String value(int txn, int partition, int j) {
        return String.format("t%03d-p%d-r%d", txn, partition, j);
    }

    // ------------------------------------------------------------------------------- run

    private static void run(String bootstrap, String topic, int txns, int partitions, int perPartition,
                            Map<String, Object> out, List<String> errors) throws Exception {
        boolean created = Common.ensureTopic(bootstrap, topic, partitions, (short) 1);
        if (!created) {
            errors.add("topic " + topic + " already existed; run needs a fresh topic");
            return;
        }
        List<TopicPartition> tps = partitionsOf(bootstrap, topic);
        if (tps.size() != partitions) {
            errors.add("created " + partitions + " partitions but metadata shows " + tps.size());
            return;
        }
        Map<String, long[]> acked = new HashMap<>();     // value -> {partition, offset}
        List<Integer> committed = new ArrayList<>();
        List<Integer> aborted = new ArrayList<>();
        String txnId = "kaas-java-txn-" + topic;
        long t0 = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(txnProducerProps(bootstrap, txnId))) {
            producer.initTransactions();
            for (int t = 0; t < txns; t++) {
                boolean commit = t % 3 != 2;
                producer.beginTransaction();
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (int p = 0; p < partitions; p++) {
                    for (int j = 0; j < perPartition; j++) {
                        String v = value(t, p, j);
                        values.add(v);
                        futures.add(producer.send(new ProducerRecord<>(topic, p, "t" + t, v)));
                    }
                }
                if (commit) {
                    producer.commitTransaction();      // flushes first; throws if a send failed
                    committed.add(t);
                } else {
                    producer.flush();                  // the aborted records really reach the log
                    producer.abortTransaction();
                    aborted.add(t);
                }
                for (int i = 0; i < futures.size(); i++) {
                    try {
                        RecordMetadata md = futures.get(i).get(30, TimeUnit.SECONDS);
                        acked.put(values.get(i), new long[] {md.partition(), md.offset()});
                    } catch (ExecutionException e) {
                        errors.add("txn " + t + ": send of " + values.get(i) + " failed: " + Common.describe(e.getCause()));
                    }
                }
            }
        }
        out.put("produce_ms", (System.nanoTime() - t0) / 1_000_000);
        out.put("committed", committed.size());
        out.put("aborted", aborted.size());
        if (!errors.isEmpty()) {
            return;
        }

        // The coordinator writes the last transaction's markers after answering EndTxn (as
        // Kafka's does): poll until every partition ends at its last marker and the LSO equals
        // the high watermark, instead of comparing two reads that race the markers.
        long expectedEnd = (long) txns * (perPartition + 1);
        List<Map<Integer, Long>> settled = settledEnds(bootstrap, tps, expectedEnd);
        Map<Integer, Long> hw = settled.get(0);
        Map<Integer, Long> lso = settled.get(1);
        out.put("high_watermarks", Common.intMap(hw));
        out.put("lso", Common.intMap(lso));
        if (!hw.equals(lso)) {
            errors.add("LSO " + lso + " != high watermark " + hw + " with no open transaction");
        }
        for (Map.Entry<Integer, Long> e : hw.entrySet()) {
            if (e.getValue() != expectedEnd) {
                errors.add("partition " + e.getKey() + " high watermark " + e.getValue() + ", expected "
                        + expectedEnd + " (" + txns + " x (" + perPartition + " records + 1 marker))");
            }
        }

        // ---- read_committed: exactly the committed records, in order, once each
        Map<Integer, List<ConsumerRecord<String, String>>> rc = readAll(bootstrap, tps, "read_committed", hw, errors);
        Map<Integer, List<ConsumerRecord<String, String>>> ru = readAll(bootstrap, tps, "read_uncommitted", hw, errors);
        long[] rcStats = checkView("read_committed", rc, committed, txns, partitions, perPartition, acked, errors);
        long[] ruStats = checkView("read_uncommitted", ru, allTxns(txns), txns, partitions, perPartition, acked, errors);
        out.put("read_committed_records", rcStats[0]);
        out.put("read_uncommitted_records", ruStats[0]);
        out.put("expected_committed_records", (long) committed.size() * partitions * perPartition);
    }

    /**
     * [high watermarks, LSOs], polled for up to 30 s until a high-watermark read, an LSO read and
     * a second high-watermark read agree (and, when expectedEnd >= 0, every partition ends
     * there); the last reads otherwise, for the caller's checks to report.
     */
    private static List<Map<Integer, Long>> settledEnds(String bootstrap, List<TopicPartition> tps,
                                                        long expectedEnd) {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            Map<Integer, Long> hw = endOffsets(bootstrap, tps, "read_uncommitted");
            Map<Integer, Long> lso = endOffsets(bootstrap, tps, "read_committed");
            Map<Integer, Long> hw2 = endOffsets(bootstrap, tps, "read_uncommitted");
            boolean atEnd = expectedEnd < 0 || hw2.values().stream().allMatch(v -> v == expectedEnd);
            if ((hw.equals(lso) && lso.equals(hw2) && atEnd) || System.currentTimeMillis() > deadline) {
                return List.of(hw2, lso);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return List.of(hw2, lso);
            }
        }
    }

    private static List<Integer> allTxns(int txns) {
        List<Integer> l = new ArrayList<>();
        for (int t = 0; t < txns; t++) {
            l.add(t);
        }
        return l;
    }

    /**
     * The view must hold exactly the records of {@code visibleTxns}: each once, at its acked
     * offset, in send order per partition, nothing else. Returns {records read}.
     */
    private static long[] checkView(String label, Map<Integer, List<ConsumerRecord<String, String>>> view,
                                    List<Integer> visibleTxns, int txns, int partitions, int perPartition,
                                    Map<String, long[]> acked, List<String> errors) {
        long read = 0;
        int reported = 0;
        for (Map.Entry<Integer, List<ConsumerRecord<String, String>>> e : view.entrySet()) {
            int p = e.getKey();
            List<String> expected = new ArrayList<>();
            for (int t : visibleTxns) {
                for (int j = 0; j < perPartition; j++) {
                    expected.add(value(t, p, j));
                }
            }
            List<String> got = new ArrayList<>();
            for (ConsumerRecord<String, String> r : e.getValue()) {
                read++;
                got.add(r.value());
                long[] a = acked.get(r.value());
                if (a == null) {
                    if (reported++ < 5) {
                        errors.add(label + ": unexpected record " + r.value() + " at " + p + "@" + r.offset());
                    }
                } else if (a[0] != p || a[1] != r.offset()) {
                    if (reported++ < 5) {
                        errors.add(label + ": " + r.value() + " read at " + p + "@" + r.offset()
                                + " but acknowledged at " + a[0] + "@" + a[1]);
                    }
                }
            }
            if (!got.equals(expected)) {
                int i = 0;
                while (i < got.size() && i < expected.size() && got.get(i).equals(expected.get(i))) {
                    i++;
                }
                errors.add(label + ": partition " + p + " holds " + got.size() + " records, expected "
                        + expected.size() + "; first difference at index " + i + ": got "
                        + (i < got.size() ? got.get(i) : "<end>") + ", expected "
                        + (i < expected.size() ? expected.get(i) : "<end>"));
            }
        }
        return new long[] {read};
    }

    // ---------------------------------------------------------------------------- zombie

    private static void zombie(String bootstrap, String topic, Map<String, Object> out, List<String> errors)
            throws Exception {
        Common.ensureTopic(bootstrap, topic, 2, (short) 1);
        List<TopicPartition> tps = partitionsOf(bootstrap, topic);
        List<String> expectCommitted = new ArrayList<>();
        List<String> expectAbortedInLog = new ArrayList<>();

        // ---- scenario 1: the zombie's next call is commitTransaction()
        String id1 = "kaas-java-zombie1-" + topic;
        try (KafkaProducer<String, String> a = new KafkaProducer<>(txnProducerProps(bootstrap, id1))) {
            a.initTransactions();
            a.beginTransaction();
            a.send(new ProducerRecord<>(topic, 0, "a", "z1-a-0")).get(30, TimeUnit.SECONDS);
            expectAbortedInLog.add("z1-a-0");
            try (KafkaProducer<String, String> b = new KafkaProducer<>(txnProducerProps(bootstrap, id1))) {
                b.initTransactions();    // fences A and aborts its open transaction
                String res;
                try {
                    a.commitTransaction();
                    res = "none";
                    errors.add("zombie 1: commitTransaction() of the fenced producer succeeded");
                } catch (Exception e) {
                    res = Common.describe(e);
                    if (!isFencing(e)) {
                        errors.add("zombie 1: commitTransaction() threw " + res
                                + ", expected ProducerFencedException or InvalidProducerEpochException");
                    }
                }
                out.put("zombie1_commit_error", Common.q(res));
                b.beginTransaction();
                for (int i = 0; i < 6; i++) {
                    String v = "z1-b-" + i;
                    b.send(new ProducerRecord<>(topic, i % 2, "b", v));
                    expectCommitted.add(v);
                }
                b.commitTransaction();
            }
            a.close(Duration.ZERO);
        }

        // ---- scenario 2: the zombie sends again (old and new partition), then commits
        String id2 = "kaas-java-zombie2-" + topic;
        try (KafkaProducer<String, String> a = new KafkaProducer<>(txnProducerProps(bootstrap, id2))) {
            a.initTransactions();
            a.beginTransaction();
            a.send(new ProducerRecord<>(topic, 0, "a", "z2-a-0")).get(30, TimeUnit.SECONDS);
            expectAbortedInLog.add("z2-a-0");
            try (KafkaProducer<String, String> b = new KafkaProducer<>(txnProducerProps(bootstrap, id2))) {
                b.initTransactions();
                String sendRes;
                try {
                    RecordMetadata md = a.send(new ProducerRecord<>(topic, 0, "a", "z2-a-1")).get(30, TimeUnit.SECONDS);
                    sendRes = "acknowledged at " + md.partition() + "@" + md.offset();
                    errors.add("zombie 2: the fenced producer's send to a partition in its transaction was " + sendRes);
                } catch (Exception e) {
                    sendRes = Common.describe(e);
                    if (!isFencing(e)) {
                        errors.add("zombie 2: send() failed with " + sendRes
                                + ", expected InvalidProducerEpochException or ProducerFencedException");
                    }
                }
                out.put("zombie2_send_error", Common.q(sendRes));
                String send2Res;
                try {
                    RecordMetadata md = a.send(new ProducerRecord<>(topic, 1, "a", "z2-a-2")).get(30, TimeUnit.SECONDS);
                    send2Res = "acknowledged at " + md.partition() + "@" + md.offset();
                    errors.add("zombie 2: the fenced producer's send to a new partition was " + send2Res);
                } catch (Exception e) {
                    send2Res = Common.describe(e);   // any failure: the producer is in an error state
                }
                out.put("zombie2_send_new_partition_error", Common.q(send2Res));
                String res;
                try {
                    a.commitTransaction();
                    res = "none";
                    errors.add("zombie 2: commitTransaction() of the fenced producer succeeded");
                } catch (Exception e) {
                    res = Common.describe(e);
                    if (!isFencing(e)) {
                        errors.add("zombie 2: commitTransaction() threw " + res
                                + ", expected ProducerFencedException or InvalidProducerEpochException");
                    }
                }
                out.put("zombie2_commit_error", Common.q(res));
                b.beginTransaction();
                for (int i = 0; i < 6; i++) {
                    String v = "z2-b-" + i;
                    b.send(new ProducerRecord<>(topic, i % 2, "b", v));
                    expectCommitted.add(v);
                }
                b.commitTransaction();
            }
            a.close(Duration.ZERO);
        }

        Map<Integer, Long> hw = endOffsets(bootstrap, tps, "read_uncommitted");
        Map<Integer, List<ConsumerRecord<String, String>>> rc = readAll(bootstrap, tps, "read_committed", hw, errors);
        Map<Integer, List<ConsumerRecord<String, String>>> ru = readAll(bootstrap, tps, "read_uncommitted", hw, errors);
        List<String> rcVals = sortedValues(rc);
        List<String> ruVals = sortedValues(ru);
        List<String> wantRc = new ArrayList<>(expectCommitted);
        wantRc.sort(null);
        List<String> wantRu = new ArrayList<>(expectCommitted);
        wantRu.addAll(expectAbortedInLog);
        wantRu.sort(null);
        out.put("read_committed", quoteList(rcVals));
        out.put("read_uncommitted", quoteList(ruVals));
        if (!rcVals.equals(wantRc)) {
            errors.add("read_committed shows " + rcVals + ", expected exactly " + wantRc);
        }
        if (!ruVals.equals(wantRu)) {
            errors.add("read_uncommitted shows " + ruVals + ", expected " + wantRu);
        }
    }

    private static List<String> sortedValues(Map<Integer, List<ConsumerRecord<String, String>>> view) {
        List<String> l = new ArrayList<>();
        for (List<ConsumerRecord<String, String>> recs : view.values()) {
            for (ConsumerRecord<String, String> r : recs) {
                l.add(r.value());
            }
        }
        l.sort(null);
        return l;
    }

    private static String quoteList(List<String> l) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < l.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(Common.q(l.get(i)));
        }
        return b.append(']').toString();
    }

    // ----------------------------------------------------------------------------- count

    private static void count(String bootstrap, String topic, String isolation, Map<String, Object> out,
                              List<String> errors) {
        List<TopicPartition> tps = partitionsOf(bootstrap, topic);
        List<Map<Integer, Long>> settled = settledEnds(bootstrap, tps, -1);
        Map<Integer, Long> hw = settled.get(0);
        Map<Integer, Long> lso = settled.get(1);
        Map<Integer, List<ConsumerRecord<String, String>>> view = readAll(bootstrap, tps, isolation, hw, errors);
        Map<Integer, Long> per = new TreeMap<>();
        long total = 0;
        for (Map.Entry<Integer, List<ConsumerRecord<String, String>>> e : view.entrySet()) {
            per.put(e.getKey(), (long) e.getValue().size());
            total += e.getValue().size();
        }
        out.put("isolation", Common.q(isolation));
        out.put("high_watermarks", Common.intMap(hw));
        out.put("lso", Common.intMap(lso));
        out.put("per_partition", Common.intMap(per));
        out.put("records", total);
    }
}
