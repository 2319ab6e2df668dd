package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * kaas.interop.TopicOffsets BOOTSTRAP TOPIC
 *
 * Prints the earliest and latest offset of every partition of TOPIC (ListOffsets through a
 * group-less consumer) and their difference summed over partitions:
 * {"topic":"t","partitions":3,"earliest":{"0":0,...},"latest":{"0":123,...},"total":456}
 */
public final class TopicOffsets {
    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: TopicOffsets BOOTSTRAP TOPIC");
            System.exit(2);
        }
        Properties p = Common.clientProps();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kaas-interop-offsets");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = c.partitionsFor(args[1], Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("topic " + args[1] + " has no partitions in metadata");
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : infos) {
                tps.add(new TopicPartition(pi.topic(), pi.partition()));
            }
            Map<TopicPartition, Long> begin = c.beginningOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            Map<Integer, Long> b = new TreeMap<>();
            Map<Integer, Long> e = new TreeMap<>();
            long total = 0;
            for (TopicPartition tp : tps) {
                b.put(tp.partition(), begin.get(tp));
                e.put(tp.partition(), end.get(tp));
                total += end.get(tp) - begin.get(tp);
            }
            System.out.println("{\"topic\":" + Common.q(args[1]) + ",\"partitions\":" + tps.size()
                    + ",\"earliest\":" + Common.intMap(b) + ",\"latest\":" + Common.intMap(e)
                    + ",\"total\":" + total + "}");
            System.exit(0);
        } catch (Throwable t) {
            System.err.println("TopicOffsets FAILED: " + Common.describe(t));
            System.exit(1);
        }
    }
}
