package kaas.interop;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.text.SimpleDateFormat;
import java.time.Duration;
import java.util.Collection;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * kaas.interop.GroupCopier BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID GROUP_PROTOCOL [INSTANCE_ID]
 *
 * Apache Kafka's TransactionalMessageCopier in group mode (--group-mode --use-group-metadata),
 * for a consumer group of either protocol (GROUP_PROTOCOL classic or consumer, KIP-848), which
 * the tool cannot choose: a read_committed consumer subscribed to IN_TOPIC, and a transactional
 * producer that copies each poll (at most 5 records) to OUT_TOPIC in one transaction with the
 * consumer's positions sent through sendOffsetsToTransaction(groupMetadata). It stops once its
 * partitions are assigned and it has copied everything up to their end offsets.
 *
 * Prints the tool's JSON status lines on stdout ("RebalanceComplete" on each assignment,
 * "ProcessLoop" after each committed transaction, "ShutdownComplete" at the end, with
 * totalProcessed / consumed / remaining). A transaction that fails prints one line
 * "transaction failed: TIME CLASS: MESSAGE" on stderr, is aborted, and the consumer goes back to
 * its committed positions (as the tool does). Exit code 0 at the end, 1 when fenced.
 */
public final class GroupCopier {
    private static final SimpleDateFormat TIME = new SimpleDateFormat("yyyy/MM/dd HH:mm:ss:SSS");

    private final String txnId;
    private long totalProcessed;
    private long consumed;

    private GroupCopier(String txnId) {
        this.txnId = txnId;
    }

    private synchronized void status(String stage, long remaining) {
        System.out.printf("{\"transactionalId\":\"%s\",\"stage\":\"%s\",\"time\":\"%s\",\"totalProcessed\":%d,"
                + "\"consumed\":%d,\"remaining\":%d}%n", txnId, stage, TIME.format(new Date()), totalProcessed,
                consumed, remaining);
        System.out.flush();
    }

    /** consumer.poll, once more when the KIP-848 consumer throws its IllegalStateException
     *  "Cannot set a new position without a valid current position": a race between its two
     *  threads at a new leader epoch (docs/compatibility.md, "A race in the Java consumer at a
     *  leader change"). The position did not move, so polling again reads those records again. */
    private static ConsumerRecords<String, String> poll(KafkaConsumer<String, String> consumer) {
        try {
            return consumer.poll(Duration.ofMillis(200));
        } catch (IllegalStateException e) {
            if (!"Cannot set a new position without a valid current position".equals(e.getMessage())) {
                throw e;
            }
            System.err.println("poll raced a leader change (client race, polled again): " + TIME.format(new Date()));
            return ConsumerRecords.empty();
        }
    }

    private static void failed(Exception e) {
        System.err.println("transaction failed: " + TIME.format(new Date()) + " " + e.getClass().getName() + ": "
                + e.getMessage());
    }

    /** End offsets of the assigned partitions, read once when they are assigned (as the tool
     *  does): reading them after every transaction would queue a ListOffsets behind the
     *  consumer's long-polling Fetch of a copied-out partition on the same connection (a broker
     *  answers a connection's requests in order, Apache Kafka by muting it), 500 ms a loop. */
    private final Map<TopicPartition, Long> ends = new HashMap<>();

    /** Records left up to the end offsets of the assigned partitions; -1 when none is assigned or
     *  an end offset is not known (read when the partitions came). */
    private synchronized long remaining(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) {
            return -1;
        }
        long left = 0;
        try {
            for (TopicPartition tp : assigned) {
                Long end = ends.get(tp);
                if (end == null) {
                    return -1;
                }
                left += Math.max(0, end - consumer.position(tp));
            }
        } catch (KafkaException e) {
            return -1;
        }
        return left;
    }

    private synchronized void assigned(KafkaConsumer<String, String> consumer, Collection<TopicPartition> partitions) {
        while (true) {
            try {
                ends.putAll(consumer.endOffsets(partitions));
                return;
            } catch (KafkaException e) {
                // A broker restarting: the end offsets are read again.
                System.err.println("end offsets: " + e);
            }
        }
    }

    private synchronized void revoked(Collection<TopicPartition> partitions) {
        partitions.forEach(ends::remove);
    }

    private static void rewind(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata c = committed.get(tp);
            if (c != null) {
                consumer.seek(tp, c.offset());
            } else {
                consumer.seekToBeginning(List.of(tp));
            }
        }
    }

    public static void main(String[] args) {
        if (args.length < 6) {
            System.err.println("usage: GroupCopier BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP TRANSACTIONAL_ID GROUP_PROTOCOL [INSTANCE_ID]");
            System.exit(2);
        }
        String bootstrap = args[0], in = args[1], out = args[2], group = args[3], txnId = args[4], protocol = args[5];
        GroupCopier copier = new GroupCopier(txnId);

        Properties cp = Common.clientProps();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (args.length > 6) {
            cp.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, args[6]);
        }
        Properties pp = Common.clientProps();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        int code = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
             KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    copier.revoked(partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    if (!partitions.isEmpty()) {
                        copier.assigned(consumer, partitions);
                        copier.consumed = 0;
                        copier.status("RebalanceComplete", -1);
                    }
                }
            });
            while (true) {
                ConsumerRecords<String, String> records = poll(consumer);
                if (records.isEmpty()) {
                    if (copier.remaining(consumer) == 0) {
                        break;
                    }
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                try {
                    producer.beginTransaction();
                    for (ConsumerRecord<String, String> r : records) {
                        producer.send(new ProducerRecord<>(out, r.key(), r.value()));
                        positions.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                    producer.commitTransaction();
                } catch (ProducerFencedException e) {
                    failed(e);
                    code = 1;
                    break;
                } catch (KafkaException e) {
                    // As the tool: abort, and go back to the committed positions.
                    failed(e);
                    producer.abortTransaction();
                    rewind(consumer);
                    continue;
                }
                copier.totalProcessed += records.count();
                copier.consumed += records.count();
                copier.status("ProcessLoop", copier.remaining(consumer));
            }
            copier.status("ShutdownComplete", code == 0 ? 0 : -1);
        }
        System.exit(code);
    }
}
