package kaas.interop;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Helpers shared by the interop programs. */
final class Common {
    private Common() {
    }

    /**
     * Properties every client of the interop programs starts from: empty, or, when the
     * environment variable KAAS_INTEROP_CLIENT_CONFIG names a properties file, its entries (the
     * security settings of a secured listener: security.protocol, sasl.*, ssl.*).
     */
    static Properties clientProps() {
        Properties p = new Properties();
        String file = System.getenv("KAAS_INTEROP_CLIENT_CONFIG");
        if (file != null && !file.isEmpty()) {
            try (java.io.FileInputStream in = new java.io.FileInputStream(file)) {
                p.load(in);
            } catch (java.io.IOException e) {
                throw new IllegalStateException("KAAS_INTEROP_CLIENT_CONFIG " + file + ": " + e, e);
            }
        }
        return p;
    }

    static Properties adminProps(String bootstrap) {
        Properties p = Common.clientProps();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "kaas-interop-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        return p;
    }

    /**
     * Creates the topic (tolerating TopicExistsException) and waits until DescribeTopics
     * reports it. Returns true when this call created it, false when it already existed.
     */
    static boolean ensureTopic(String bootstrap, String topic, int partitions, short replicationFactor)
            throws Exception {
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            boolean created;
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, replicationFactor)))
                        .all().get(60, TimeUnit.SECONDS);
                created = true;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    created = false;
                } else {
                    throw new IllegalStateException("CreateTopics(" + topic + ") failed: " + e.getCause(), e.getCause());
                }
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    Map<String, TopicDescription> d = admin.describeTopics(List.of(topic))
                            .allTopicNames().get(30, TimeUnit.SECONDS);
                    TopicDescription td = d.get(topic);
                    if (td != null && !td.partitions().isEmpty()) {
                        return created;
                    }
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                        throw new IllegalStateException("DescribeTopics(" + topic + ") failed: " + e.getCause(), e.getCause());
                    }
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("topic " + topic + " not visible in DescribeTopics 30 s after creation");
                }
                Thread.sleep(100);
            }
        }
    }

    /** What {@link #readToTargets} read, and why it stopped early (null when every target was reached). */
    static final class ReadBack {
        final Map<Integer, List<ConsumerRecord<String, String>>> records = new TreeMap<>();
        String error;
    }

    /**
     * The one read-back loop of the interop programs: assigns {@code tps}, reads each from the
     * beginning and polls until the consumer's position reaches {@code targets} (positions move
     * past control records, which are never returned), or {@code timeoutMs} passes.
     */
    static ReadBack readToTargets(Properties consumerProps, List<TopicPartition> tps, Map<Integer, Long> targets,
                                  long timeoutMs) {
        ReadBack out = new ReadBack();
        for (TopicPartition tp : tps) {
            out.records.put(tp.partition(), new ArrayList<>());
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (true) {
                boolean done = true;
                Map<Integer, Long> positions = new TreeMap<>();
                for (TopicPartition tp : tps) {
                    long pos = c.position(tp, Duration.ofSeconds(30));
                    positions.put(tp.partition(), pos);
                    if (pos < targets.get(tp.partition())) {
                        done = false;
                    }
                }
                if (done) {
                    return out;
                }
                if (System.currentTimeMillis() > deadline) {
                    out.error = "reader did not reach " + targets + " within " + timeoutMs / 1000
                            + " s; positions " + positions;
                    return out;
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.records.get(r.partition()).add(r);
                }
            }
        }
    }

    /** Minimal JSON string escaping for the one-line summaries. */
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /** {"0":12,"1":7} from a partition -> number map (keys sorted by the caller's map order). */
    static String intMap(Map<Integer, Long> m) {
        StringBuilder b = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<Integer, Long> e : m.entrySet()) {
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return b.append('}').toString();
    }

    static String describe(Throwable t) {
        StringBuilder b = new StringBuilder();
        Throwable cur = t;
        int depth = 0;
        while (cur != null && depth < 5) {
            if (depth > 0) {
                b.append(" <- caused by ");
            }
            b.append(cur.getClass().getName()).append(": ").append(cur.getMessage());
            cur = cur.getCause() == cur ? null : cur.getCause();
            depth++;
        }
        return b.toString();
    }
}
