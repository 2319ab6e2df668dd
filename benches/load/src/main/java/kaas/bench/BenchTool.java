package kaas.bench;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The benchmark matrix's own loads (benches/load/matrix.py), for what Apache Kafka's tools
 * do not do. Each mode prints one line of key=value pairs on stdout.
 *
 * <pre>
 * create BOOTSTRAP TOPIC PARTITIONS TIMEOUT_MS
 *     creates TOPIC (replication factor 1; an existing topic is fine), then waits until every
 *     partition answers ListOffsets (its leader has the log: Apache Kafka creates the logs of a
 *     new topic asynchronously, and producing into a 256-partition topic at once made its
 *     idempotent producer fail with OutOfOrderSequenceException). prints: partitions=N elapsed_ms=N
 * aborts BOOTSTRAP TOPIC NUM_TXNS RECORDS_PER_TXN ABORT_EVERY RECORD_SIZE
 *     NUM_TXNS transactions of RECORDS_PER_TXN records (round robin over the partitions);
 *     every ABORT_EVERY-th transaction (the 3rd, 6th, ...) is aborted, the others committed.
 *     Each transaction's records are flushed (written) before it is ended: an aborted one
 *     leaves its records and abort markers in the log for read_committed to skip, and the Java
 *     producer's EndTxn race cannot hit (docs/compatibility.md, "A race in the Java producer's
 *     transactions").
 *     prints: committed=N aborted=N txns=N elapsed_ms=N
 * fill BOOTSTRAP TOPIC PARTITIONS RECORD_SIZE
 *     one record to each partition 0..PARTITIONS-1 (idempotent, acks=all), waits for every ack.
 *     prints: sent=N elapsed_ms=N
 * probe BOOTSTRAP TOPIC PARTITION TIMEOUT_MS
 *     sends one record to TOPIC/PARTITION, retrying (broker not up yet, topic not known yet)
 *     until it is acknowledged or TIMEOUT_MS passed. prints: acked=1 elapsed_ms=N
 * </pre>
 *
 * With -Dkaas.bench.client.config=FILE every client it makes (admin, producers) starts from
 * that properties file (the matrix's TLS brokers: security.protocol=SSL and the truststore).
 */
public final class BenchTool {
    /** The client properties of -Dkaas.bench.client.config (none without it) and the bootstrap. */
    private static Properties clientProps(String bootstrap) {
        Properties p = new Properties();
        String file = System.getProperty("kaas.bench.client.config");
        if (file != null && !file.isEmpty()) {
            try (InputStream in = new FileInputStream(file)) {
                p.load(in);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read the client config " + file, e);
            }
        }
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return p;
    }

    private static Properties producerProps(String bootstrap) {
        Properties p = clientProps(bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    private static byte[] payload(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) b[i] = (byte) ('a' + i % 26);
        return b;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) usage();
        switch (args[0]) {
            case "create" -> create(args);
            case "aborts" -> aborts(args);
            case "fill" -> fill(args);
            case "probe" -> probe(args);
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: BenchTool aborts|fill|probe ... (see the class comment)");
        System.exit(2);
    }

    private static void create(String[] a) throws Exception {
        if (a.length != 5) usage();
        String bootstrap = a[1], topic = a[2];
        int partitions = Integer.parseInt(a[3]);
        long timeoutMs = Long.parseLong(a[4]);
        Properties p = clientProps(bootstrap);
        long t0 = System.nanoTime();
        long deadline = t0 + timeoutMs * 1_000_000L;
        try (Admin admin = Admin.create(p)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
            Map<TopicPartition, OffsetSpec> all = new HashMap<>();
            for (int i = 0; i < partitions; i++) all.put(new TopicPartition(topic, i), OffsetSpec.latest());
            Exception last = null;
            while (true) {
                try {
                    admin.listOffsets(all).all().get();
                    break;
                } catch (ExecutionException e) {
                    last = e;
                }
                if (System.nanoTime() > deadline) {
                    System.err.println("create: partitions not ready within " + timeoutMs + " ms: " + last);
                    System.exit(1);
                }
                Thread.sleep(100);
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("partitions=%d elapsed_ms=%d%n", partitions, ms);
    }

    private static void aborts(String[] a) throws Exception {
        if (a.length != 7) usage();
        String bootstrap = a[1], topic = a[2];
        int txns = Integer.parseInt(a[3]), perTxn = Integer.parseInt(a[4]);
        int abortEvery = Integer.parseInt(a[5]), size = Integer.parseInt(a[6]);
        Properties p = producerProps(bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-aborts-" + System.nanoTime());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        byte[] value = payload(size);
        long committed = 0, aborted = 0;
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            int partitions = producer.partitionsFor(topic).size();
            int next = 0;
            for (int t = 1; t <= txns; t++) {
                producer.beginTransaction();
                for (int i = 0; i < perTxn; i++) {
                    producer.send(new ProducerRecord<>(topic, next, null, value));
                    next = (next + 1) % partitions;
                }
                producer.flush();
                if (abortEvery > 0 && t % abortEvery == 0) {
                    producer.abortTransaction();
                    aborted += perTxn;
                } else {
                    producer.commitTransaction();
                    committed += perTxn;
                }
            }
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("committed=%d aborted=%d txns=%d elapsed_ms=%d%n", committed, aborted, txns, ms);
    }

    private static void fill(String[] a) throws Exception {
        if (a.length != 5) usage();
        String bootstrap = a[1], topic = a[2];
        int partitions = Integer.parseInt(a[3]), size = Integer.parseInt(a[4]);
        Properties p = producerProps(bootstrap);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        byte[] value = payload(size);
        long t0 = System.nanoTime();
        List<Future<RecordMetadata>> acks = new ArrayList<>(partitions);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < partitions; i++) {
                acks.add(producer.send(new ProducerRecord<>(topic, i, null, value)));
            }
            for (Future<RecordMetadata> f : acks) f.get();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("sent=%d elapsed_ms=%d%n", partitions, ms);
    }

    private static void probe(String[] a) throws Exception {
        if (a.length != 5) usage();
        String bootstrap = a[1], topic = a[2];
        int partition = Integer.parseInt(a[3]);
        long timeoutMs = Long.parseLong(a[4]);
        long t0 = System.nanoTime();
        long deadline = t0 + timeoutMs * 1_000_000L;
        Exception last = null;
        while (System.nanoTime() < deadline) {
            Properties p = producerProps(bootstrap);
            p.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "20");
            p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "100");
            p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "20");
            p.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "100");
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeoutMs));
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeoutMs, 30_000)));
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
                producer.send(new ProducerRecord<>(topic, partition, null, payload(16))).get();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                System.out.printf("acked=1 elapsed_ms=%d%n", ms);
                return;
            } catch (Exception e) {
                last = e;
                Thread.sleep(50);
            }
        }
        System.err.println("probe: no acknowledgement within " + timeoutMs + " ms: " + last);
        System.exit(1);
    }
}
