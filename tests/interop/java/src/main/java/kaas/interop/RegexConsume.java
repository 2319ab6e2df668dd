package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A KIP-848 consumer (group.protocol=consumer) subscribed with a broker-side regular expression
 * (SubscriptionPattern: the broker resolves it, not the client). Polls until it has read
 * `expected` records or `seconds` passed, then prints one JSON line: the records read per topic
 * and the topics of its last assignment.
 *
 * <p>Usage: RegexConsume BOOTSTRAP PATTERN GROUP EXPECTED SECONDS
 */
public final class RegexConsume {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String pattern = args[1];
        String group = args[2];
        int expected = Integer.parseInt(args[3]);
        long seconds = Long.parseLong(args[4]);
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, Integer> read = new TreeMap<>();
        TreeSet<String> assigned = new TreeSet<>();
        int total = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(new SubscriptionPattern(pattern));
            long deadline = System.currentTimeMillis() + seconds * 1000;
            while (total < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    read.merge(r.topic(), 1, Integer::sum);
                    total++;
                }
            }
            // A little longer: a topic it should not get would show up here.
            long settle = System.currentTimeMillis() + 2000;
            while (System.currentTimeMillis() < settle) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    read.merge(r.topic(), 1, Integer::sum);
                }
            }
            for (TopicPartition tp : c.assignment()) {
                assigned.add(tp.topic());
            }
        }
        StringBuilder out = new StringBuilder("{\"read\": {");
        String sep = "";
        for (Map.Entry<String, Integer> e : read.entrySet()) {
            out.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue());
            sep = ", ";
        }
        out.append("}, \"assigned\": [");
        sep = "";
        for (String t : assigned) {
            out.append(sep).append('"').append(t).append('"');
            sep = ", ";
        }
        out.append("]}");
        System.out.println(out);
    }
}
