package kaas.interop;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** Helpers for the consumer-group interop programs (GroupConsume, Ctp, MigrateGroup, MixedGroup). */
final class GroupSupport {
    private GroupSupport() {
    }

    /** One-line JSON summary; values are already JSON (numbers, booleans, quoted strings, objects). */
    static final class Summary {
        final Map<String, Object> fields = new LinkedHashMap<>();
        final List<String> errors = new ArrayList<>();

        void put(String k, Object v) {
            fields.put(k, v);
        }

        void putString(String k, String v) {
            fields.put(k, Common.q(v));
        }

        void error(String e) {
            errors.add(e);
        }

        /** Prints the JSON line and exits: 0 when no error was recorded, 1 otherwise. */
        void finish(String program) {
            StringBuilder errJson = new StringBuilder("[");
            for (int i = 0; i < errors.size(); i++) {
                if (i > 0) {
                    errJson.append(',');
                }
                errJson.append(Common.q(errors.get(i)));
            }
            errJson.append(']');
            fields.put("ok", errors.isEmpty());
            fields.put("errors", errJson.toString());
            StringBuilder line = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<String, Object> e : fields.entrySet()) {
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
                System.err.println(program + " FAILED: " + e);
            }
            System.exit(errors.isEmpty() ? 0 : 1);
        }
    }

    static String jsonStrings(Collection<String> items) {
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (String s : items) {
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append(Common.q(s));
        }
        return b.append(']').toString();
    }

    static String jsonInts(Collection<Integer> items) {
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (Integer i : items) {
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append(i);
        }
        return b.append(']').toString();
    }

    /** A consumer with manual commits from the earliest offset; no client.id when clientId is null. */
    static Properties consumerProps(String bootstrap, String clientId, String group) {
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (clientId != null) {
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        }
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    /**
     * A member of `group` speaking `protocol` (group.protocol: classic or consumer, KIP-848),
     * polling at most maxPollRecords records.
     */
    static Properties memberProps(String bootstrap, String clientId, String group, String protocol,
                                  int maxPollRecords) {
        Properties p = consumerProps(bootstrap, clientId, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(maxPollRecords));
        return p;
    }

    /** The offsets after the last record read of each partition: what commitSync commits. */
    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(Iterable<ConsumerRecord<String, String>> records) {
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        return commit;
    }

    /** The group's type (Classic or Consumer) as Admin.describeConsumerGroups reports it. */
    static String groupType(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Common.adminProps(bootstrap))) {
            return admin.describeConsumerGroups(Collections.singletonList(group)).all().get().get(group).type()
                .toString();
        }
    }

    /** Whether the values v0..v(count-1) written beforehand were each read exactly once. */
    static final class ReadOnce {
        final int duplicates;
        final int missing;
        final int distinct;

        ReadOnce(Collection<String> values, int count) {
            Set<String> all = new TreeSet<>(values);
            int notRead = 0;
            for (int i = 0; i < count; i++) {
                if (!all.contains("v" + i)) {
                    notRead++;
                }
            }
            duplicates = values.size() - all.size();
            missing = notRead;
            distinct = all.size();
        }

        /** Records the check (an error unless every value was read once) and its counts in `s`. */
        void report(Summary s, int count) {
            s.put("duplicates", duplicates);
            s.put("missing", missing);
            if (duplicates != 0 || missing != 0 || distinct != count) {
                s.error("read " + distinct + " distinct of " + count + ", " + duplicates + " twice");
            }
        }
    }

    /** Sends "k<i>" / "v<i>" for i in [from, from+count) with a default (idempotent) producer. */
    static void produce(String bootstrap, String topic, int from, int count) throws Exception {
        Properties pp = Common.clientProps();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.CLIENT_ID_CONFIG, "kaas-interop-group-input");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, "1024"); // small batches: partitions interleave in fetches
        AtomicLong failed = new AtomicLong();
        StringBuilder first = new StringBuilder();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = from; i < from + count; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i), (md, ex) -> {
                    if (ex != null && failed.incrementAndGet() == 1) {
                        synchronized (first) {
                            first.append(Common.describe(ex));
                        }
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " input records failed, first: " + first);
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }

    static Map<Integer, Long> endOffsets(String bootstrap, String topic, int n, IsolationLevel isolation) {
        Properties p = consumerProps(bootstrap, "kaas-interop-end-offsets", null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            Map<Integer, Long> out = new TreeMap<>();
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(partitions(topic, n), Duration.ofSeconds(30)).entrySet()) {
                out.put(e.getKey().partition(), e.getValue());
            }
            return out;
        }
    }

    /** The group's committed offsets for the topic via Admin.listConsumerGroupOffsets (-1 when none). */
    static Map<Integer, Long> committed(String bootstrap, String group, String topic, int n, boolean requireStable)
            throws Exception {
        try (Admin admin = Admin.create(Common.adminProps(bootstrap))) {
            Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(group,
                            new ListConsumerGroupOffsetsOptions().requireStable(requireStable))
                    .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            Map<Integer, Long> out = new TreeMap<>();
            for (TopicPartition tp : partitions(topic, n)) {
                OffsetAndMetadata om = m.get(tp);
                out.put(tp.partition(), om == null ? -1L : om.offset());
            }
            return out;
        }
    }
}
