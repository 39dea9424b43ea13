import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A consume-transform-produce loop with the Java client's sendOffsetsToTransaction, as a member
 * of the group: each poll's records go to OUTPUT ("out:" + value, same partition) in one
 * transaction with the offsets after them; every third transaction is aborted and its records
 * read again from the group's committed offsets. Prints "committed N" and "aborted N" per
 * transaction, and exits 0 once TOTAL input records were committed.
 *
 * Usage: TxnOffsets BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID TOTAL
 */
public final class TxnOffsets {
    private static final Duration POLL = Duration.ofMillis(500);
    private static final long DEADLINE_MS = 120_000;
    // Small polls: TOTAL / MAX_POLL_RECORDS transactions at least, so some are aborted.
    private static final int MAX_POLL_RECORDS = 50;

    public static void main(String[] args) {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3], id = args[4];
        int total = Integer.parseInt(args[5]);
        Properties consumerSettings = new Properties();
        consumerSettings.put("bootstrap.servers", bootstrap);
        consumerSettings.put("group.id", group);
        consumerSettings.put("enable.auto.commit", "false");
        consumerSettings.put("auto.offset.reset", "earliest");
        consumerSettings.put("isolation.level", "read_committed");
        consumerSettings.put("max.poll.records", String.valueOf(MAX_POLL_RECORDS));
        Properties producerSettings = new Properties();
        producerSettings.put("bootstrap.servers", bootstrap);
        producerSettings.put("transactional.id", id);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                     consumerSettings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                     producerSettings, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            int committed = 0, transactions = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (committed < total && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
                if (records.isEmpty()) continue;
                transactions++;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    byte[] value = ("out:" + new String(record.value())).getBytes();
                    producer.send(new ProducerRecord<>(output, record.partition(), null, value));
                    next.put(new TopicPartition(record.topic(), record.partition()),
                             new OffsetAndMetadata(record.offset() + 1));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (transactions % 3 == 0) {
                    producer.abortTransaction();
                    rewind(consumer);
                    System.out.println("aborted " + records.count());
                    continue;
                }
                producer.commitTransaction();
                committed += records.count();
                System.out.println("committed " + records.count());
            }
            System.exit(committed == total ? 0 : 1);
        }
    }

    /** Back to the group's committed offsets, after an aborted transaction. */
    private static void rewind(KafkaConsumer<byte[], byte[]> consumer) {
        Map<TopicPartition, OffsetAndMetadata> offsets = consumer.committed(consumer.assignment());
        for (TopicPartition partition : consumer.assignment()) {
            OffsetAndMetadata offset = offsets.get(partition);
            consumer.seek(partition, offset == null ? 0 : offset.offset());
        }
    }
}
