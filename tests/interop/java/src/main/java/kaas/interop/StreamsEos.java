package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * A Kafka Streams application with processing.guarantee=exactly_once_v2: a word count whose
 * groupBy goes through a repartition topic and whose counts live in a state store backed by a
 * changelog topic (both created by Streams with its own topic configs), written to an output
 * topic. With the record cache off, every input record emits exactly one count update, so a
 * read_committed reader of the output must see, for each word, the counts 1, 2, ..., n once
 * each and in order: a duplicate or a gap is an exactly-once violation.
 *
 * Modes:
 *   produce BOOTSTRAP TOPIC WORDS N [PAD]
 *                                        N records (value = one of WORDS words), idempotent; with
 *                                        PAD, each word is followed by "-" and PAD times "x"
 *   run BOOTSTRAP APP_ID IN OUT STATE_DIR SECONDS
 *                                        runs the application; prints "running" once it is
 *                                        RUNNING; stops after SECONDS (or is killed)
 *   verify BOOTSTRAP OUT WORDS N SECONDS [PAD]
 *                                        reads OUT read_committed until every count arrived
 *                                        (or SECONDS pass) and prints a JSON summary
 *   run-store BOOTSTRAP APP_ID IN OUT STATE_DIR SECONDS STOP_FILE [CONFIG=VALUE ...]
 *                                        as run, but the count's store is named "counts" (its
 *                                        changelog is APP_ID-counts-changelog), each CONFIG=VALUE
 *                                        is added to the Streams configs (e.g.
 *                                        topic.segment.bytes=1048576: a topic config of the
 *                                        internal topics Streams creates; producer.linger.ms=0),
 *                                        and the application also stops (closed cleanly) once
 *                                        STOP_FILE exists
 */
public final class StreamsEos {
    private StreamsEos() {
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                    pad(args, 5));
            case "run" -> run(args[1], args[2], args[3], args[4], args[5], Integer.parseInt(args[6]));
            case "run-store" -> runStore(args);
            case "verify" -> verify(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), pad(args, 6));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    /** The optional PAD argument at `at`: "" or "-" and that many "x". */
    static String pad(String[] args, int at) {
        return args.length > at && Integer.parseInt(args[at]) > 0 ? "-" + "x".repeat(Integer.parseInt(args[at])) : "";
    }

    static String word(int i, int words) {
        return "w" + (i % words);
    }

    static void produce(String bootstrap, String topic, int words, int n, String pad) throws Exception {
        Properties p = Common.clientProps();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, word(i, words) + pad));
            }
            producer.flush();
        }
        System.out.println("{\"produced\": " + n + "}");
    }

    static void run(String bootstrap, String appId, String in, String out, String stateDir, int seconds)
            throws Exception {
        Properties p = streamsProps(bootstrap, appId, stateDir);
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((k, v) -> v, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        runUntil(new KafkaStreams(b.build(), p), seconds, null);
    }

    static void runStore(String[] args) throws Exception {
        String bootstrap = args[1];
        Properties p = streamsProps(bootstrap, args[2], args[5]);
        for (int i = 8; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("not CONFIG=VALUE: " + args[i]);
            }
            p.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        StreamsBuilder b = new StreamsBuilder();
        b.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((k, v) -> v, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream()
                .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));
        runUntil(new KafkaStreams(b.build(), p), Integer.parseInt(args[6]), Path.of(args[7]));
    }

    static Properties streamsProps(String bootstrap, String appId, String stateDir) {
        Properties p = Common.clientProps();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A killed instance's member leaves the group after this (Kafka's minimum is 6 s).
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1500");
        return p;
    }

    /** Runs until SECONDS pass, the application fails, or `stop` (when not null) exists. */
    static void runUntil(KafkaStreams streams, int seconds, Path stop) throws Exception {
        List<Throwable> failures = new ArrayList<>();
        streams.setUncaughtExceptionHandler(e -> {
            synchronized (failures) {
                failures.add(e);
            }
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            System.out.println("state " + before + " -> " + now);
            System.out.flush();
        });
        streams.start();
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline && streams.state().isRunningOrRebalancing()
                && (stop == null || !Files.exists(stop))) {
            Thread.sleep(100);
        }
        KafkaStreams.State last = streams.state();
        boolean closed = streams.close(Duration.ofSeconds(30));
        synchronized (failures) {
            for (Throwable t : failures) {
                t.printStackTrace();
            }
            System.out.println("{\"final_state\": \"" + last + "\", \"failures\": " + failures.size()
                    + ", \"closed\": " + closed + "}");
            System.out.flush();
            if (!failures.isEmpty() || last == KafkaStreams.State.ERROR) {
                System.exit(1);
            }
        }
    }

    static void verify(String bootstrap, String out, int words, int n, int seconds, String pad) {
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        Map<String, Integer> expected = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            expected.merge(word(i, words) + pad, 1, Integer::sum);
        }
        Map<String, List<Long>> seen = new HashMap<>();
        int records = 0;
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            c.partitionsFor(out).forEach(pi -> parts.add(new TopicPartition(out, pi.partition())));
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + seconds * 1000L;
            while (System.currentTimeMillis() < deadline && !complete(seen, expected)) {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                    records++;
                }
            }
        }
        int duplicates = 0;
        int gaps = 0;
        int wrongFinal = 0;
        StringBuilder bad = new StringBuilder();
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<Long> counts = seen.getOrDefault(e.getKey(), List.of());
            for (int i = 0; i < counts.size(); i++) {
                if (counts.get(i) != i + 1) {
                    if (i > 0 && counts.get(i) <= counts.get(i - 1)) {
                        duplicates++;
                    } else {
                        gaps++;
                    }
                    if (bad.length() < 400) {
                        bad.append(e.getKey()).append(": ").append(counts).append("; ");
                    }
                    break;
                }
            }
            if (counts.isEmpty() || counts.get(counts.size() - 1) != e.getValue().longValue()) {
                wrongFinal++;
            }
        }
        System.out.println("{\"records\": " + records + ", \"words\": " + seen.size() + ", \"duplicates\": "
                + duplicates + ", \"gaps\": " + gaps + ", \"wrong_final\": " + wrongFinal
                + ", \"bad\": \"" + bad.toString().replace("\"", "'") + "\"}");
    }

    static boolean complete(Map<String, List<Long>> seen, Map<String, Integer> expected) {
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<Long> counts = seen.get(e.getKey());
            if (counts == null || counts.isEmpty() || counts.get(counts.size() - 1) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
