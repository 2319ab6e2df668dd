package kaas.bench;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileReader;
import java.io.FileWriter;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The cluster benchmark's own steps (benches/load/cluster.py). Each mode prints one line of
 * key=value pairs on stdout.
 *
 * <pre>
 * create BOOTSTRAP TOPIC PARTITIONS REPLICATION_FACTOR BROKERS TIMEOUT_MS
 *     waits until the cluster lists BROKERS brokers (so that leaders spread over all of them),
 *     creates TOPIC (an existing topic is fine), then waits until every partition has a leader,
 *     all its replicas in sync and answers ListOffsets.
 *     prints: partitions=N rf=N brokers=N elapsed_ms=N leaders=ID:COUNT,...
 * leader BOOTSTRAP TOPIC PARTITION
 *     the leader of TOPIC/PARTITION, the active controller (DescribeMetadataQuorum; -1 when the
 *     broker does not answer it) and how many partitions of TOPIC each broker leads.
 *     prints: leader=ID controller=ID leaders=ID:COUNT,...
 * failover BOOTSTRAP TOPIC PARTITIONS RATE SECONDS RECORD_SIZE OUT_FILE
 *     one idempotent producer (acks=all, otherwise the client's defaults) sends RATE records/s
 *     for SECONDS seconds, record i to partition i % PARTITIONS, its value starting with i (8
 *     bytes, big-endian). Prints started_ms=EPOCH_MS as soon as it starts sending. When every
 *     record is answered it writes OUT_FILE, one line per record:
 *     seq,partition,offset,send_ms,ack_ms,error (epoch milliseconds; offset -1 and the
 *     exception's class name on an error, else "-").
 *     prints: sent=N acked=N failed=N elapsed_ms=N
 * verify BOOTSTRAP TOPIC PARTITIONS ACK_FILE TIMEOUT_MS
 *     reads every partition of TOPIC from its start to its high watermark and checks each
 *     record ACK_FILE says was acknowledged: found at the partition and offset it was
 *     acknowledged at (else lost, or misplaced when its sequence number is elsewhere).
 *     prints: records=N acked=N found=N lost=N misplaced=N duplicates=N unacked_present=N
 * </pre>
 */
public final class ClusterTool {
    private static Properties clientProps(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) usage();
        switch (args[0]) {
            case "create" -> create(args);
            case "leader" -> leader(args);
            case "failover" -> failover(args);
            case "verify" -> verify(args);
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: ClusterTool create|leader|failover|verify ... (see the class comment)");
        System.exit(2);
    }

    /** "1:6,2:5,3:5": how many partitions of the topic each broker leads. */
    private static String leaderCounts(TopicDescription d) {
        Map<Integer, Integer> n = new TreeMap<>();
        for (TopicPartitionInfo p : d.partitions()) {
            if (p.leader() != null) n.merge(p.leader().id(), 1, Integer::sum);
        }
        StringBuilder b = new StringBuilder();
        for (Map.Entry<Integer, Integer> e : n.entrySet()) {
            if (b.length() > 0) b.append(',');
            b.append(e.getKey()).append(':').append(e.getValue());
        }
        return b.length() == 0 ? "none" : b.toString();
    }

    private static TopicDescription describe(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    }

    private static void create(String[] a) throws Exception {
        if (a.length != 7) usage();
        String bootstrap = a[1], topic = a[2];
        int partitions = Integer.parseInt(a[3]);
        short rf = Short.parseShort(a[4]);
        int brokers = Integer.parseInt(a[5]);
        long timeoutMs = Long.parseLong(a[6]);
        long t0 = System.nanoTime();
        long deadline = t0 + timeoutMs * 1_000_000L;
        try (Admin admin = Admin.create(clientProps(bootstrap))) {
            Object last = null;
            while (true) {
                try {
                    int n = admin.describeCluster().nodes().get().size();
                    if (n >= brokers) break;
                    last = n + " brokers";
                } catch (ExecutionException e) {
                    last = e;
                }
                if (System.nanoTime() > deadline) fail("create: the cluster did not list " + brokers + " brokers: " + last);
                Thread.sleep(100);
            }
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, rf))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
            Map<TopicPartition, OffsetSpec> all = new HashMap<>();
            for (int i = 0; i < partitions; i++) all.put(new TopicPartition(topic, i), OffsetSpec.latest());
            TopicDescription d = null;
            while (true) {
                try {
                    d = describe(admin, topic);
                    boolean ready = d.partitions().size() == partitions;
                    for (TopicPartitionInfo p : d.partitions()) {
                        ready &= p.leader() != null && p.isr().size() >= p.replicas().size();
                    }
                    if (ready) {
                        admin.listOffsets(all).all().get();
                        break;
                    }
                    last = "partitions not all led with every replica in sync";
                } catch (ExecutionException e) {
                    last = e;
                }
                if (System.nanoTime() > deadline) fail("create: partitions not ready within " + timeoutMs + " ms: " + last);
                Thread.sleep(100);
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("partitions=%d rf=%d brokers=%d elapsed_ms=%d leaders=%s%n", partitions,
                    d.partitions().get(0).replicas().size(), admin.describeCluster().nodes().get().size(), ms,
                    leaderCounts(d));
        }
    }

    private static void leader(String[] a) throws Exception {
        if (a.length != 4) usage();
        String bootstrap = a[1], topic = a[2];
        int partition = Integer.parseInt(a[3]);
        try (Admin admin = Admin.create(clientProps(bootstrap))) {
            TopicDescription d = describe(admin, topic);
            Node leader = d.partitions().get(partition).leader();
            int controller = -1;
            try {
                controller = admin.describeMetadataQuorum().quorumInfo().get().leaderId();
            } catch (ExecutionException e) {
                // a broker without a metadata quorum of its own
            }
            System.out.printf("leader=%d controller=%d leaders=%s%n", leader == null ? -1 : leader.id(), controller,
                    leaderCounts(d));
        }
    }

    private static void fail(String msg) {
        System.err.println(msg);
        System.exit(1);
    }

    private static void failover(String[] a) throws Exception {
        if (a.length != 8) usage();
        String bootstrap = a[1], topic = a[2], outFile = a[7];
        int partitions = Integer.parseInt(a[3]), rate = Integer.parseInt(a[4]);
        int seconds = Integer.parseInt(a[5]), size = Math.max(8, Integer.parseInt(a[6]));
        int n = rate * seconds;
        Properties p = clientProps(bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        long[] sendMs = new long[n], ackMs = new long[n], offset = new long[n];
        String[] error = new String[n];
        AtomicLong acked = new AtomicLong(), failed = new AtomicLong();
        long intervalNs = 1_000_000_000L / rate;
        long t0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.partitionsFor(topic); // metadata before the clock starts
            t0 = System.nanoTime();
            System.out.printf("started_ms=%d%n", System.currentTimeMillis());
            System.out.flush();
            for (int i = 0; i < n; i++) {
                long due = t0 + i * intervalNs;
                long now;
                while ((now = System.nanoTime()) < due) {
                    long left = due - now;
                    if (left > 200_000) Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
                    else Thread.onSpinWait();
                }
                byte[] value = new byte[size];
                ByteBuffer.wrap(value).putLong(i);
                for (int j = 8; j < size; j++) value[j] = (byte) ('a' + j % 26);
                final int seq = i;
                sendMs[i] = System.currentTimeMillis();
                producer.send(new ProducerRecord<>(topic, i % partitions, null, value), (md, e) -> {
                    ackMs[seq] = System.currentTimeMillis();
                    if (e == null) {
                        offset[seq] = md.offset();
                        acked.incrementAndGet();
                    } else {
                        offset[seq] = -1;
                        error[seq] = e.getClass().getSimpleName();
                        failed.incrementAndGet();
                    }
                });
            }
            producer.flush();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        try (BufferedWriter w = new BufferedWriter(new FileWriter(outFile))) {
            for (int i = 0; i < n; i++) {
                w.write(i + "," + (i % partitions) + "," + offset[i] + "," + sendMs[i] + "," + ackMs[i] + ","
                        + (error[i] == null ? "-" : error[i]) + "\n");
            }
        }
        System.out.printf("sent=%d acked=%d failed=%d elapsed_ms=%d%n", n, acked.get(), failed.get(), ms);
    }

    private static void verify(String[] a) throws Exception {
        if (a.length != 6) usage();
        String bootstrap = a[1], topic = a[2], ackFile = a[4];
        int partitions = Integer.parseInt(a[3]);
        long timeoutMs = Long.parseLong(a[5]);
        // what was acknowledged: seq -> partition, offset
        Map<Long, long[]> ackedAt = new HashMap<>();
        try (BufferedReader r = new BufferedReader(new FileReader(ackFile))) {
            String line;
            while ((line = r.readLine()) != null) {
                String[] f = line.split(",");
                if (f.length >= 3 && !f[2].equals("-1")) {
                    ackedAt.put(Long.parseLong(f[0]), new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
                }
            }
        }
        Properties p = clientProps(bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // seq -> every place it was found (partition << 40 | offset)
        Map<Long, List<Long>> foundAt = new HashMap<>();
        long records = 0, duplicates = 0;
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofMillis(timeoutMs));
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) done &= consumer.position(tp) >= end.get(tp);
                if (done) break;
                if (System.nanoTime() > deadline) fail("verify: not read to the end within " + timeoutMs + " ms");
                ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> rec : rs) {
                    records++;
                    if (rec.value() == null || rec.value().length < 8) continue;
                    long seq = ByteBuffer.wrap(rec.value()).getLong();
                    List<Long> at = foundAt.computeIfAbsent(seq, k -> new ArrayList<>(1));
                    if (!at.isEmpty()) duplicates++;
                    at.add(((long) rec.partition() << 40) | rec.offset());
                }
            }
        }
        long found = 0, lost = 0, misplaced = 0, unackedPresent = 0;
        for (Map.Entry<Long, long[]> e : ackedAt.entrySet()) {
            List<Long> at = foundAt.get(e.getKey());
            if (at == null) lost++;
            else if (at.contains((e.getValue()[0] << 40) | e.getValue()[1])) found++;
            else misplaced++;
        }
        for (Long seq : foundAt.keySet()) if (!ackedAt.containsKey(seq)) unackedPresent++;
        System.out.printf("records=%d acked=%d found=%d lost=%d misplaced=%d duplicates=%d unacked_present=%d%n",
                records, ackedAt.size(), found, lost, misplaced, duplicates, unackedPresent);
    }
}
