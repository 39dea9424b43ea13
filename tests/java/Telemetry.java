import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A producer, a consumer and an admin with enable.metrics.push on (the default), as against a Kafka broker
 * without a metrics reporter for client telemetry (KIP-714): they work, the producer and the consumer get
 * no telemetry subscription, so no client instance id, and the admin's request for its id fails with
 * UnsupportedVersionException. Their log goes to log4j (the test's configuration), for the test to read.
 * Exits 1 on a failed check.
 */
public class Telemetry {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        TopicPartition partition = new TopicPartition("java-telemetry", 0);
        try (Admin admin = Admin.create(props); KafkaProducer<String, String> producer = new KafkaProducer<>(props);
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            admin.createTopics(List.of(new NewTopic(partition.topic(), 1, (short) 1))).all().get();
            producer.send(new ProducerRecord<>(partition.topic(), partition.partition(), "k", "v")).get();
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            check(!consumer.poll(Duration.ofSeconds(30)).isEmpty(), "consumed nothing");
            // Duration.ZERO: an id already held is returned, none is awaited.
            List<Uuid> ids = Arrays.asList(producer.clientInstanceId(Duration.ZERO),
                consumer.clientInstanceId(Duration.ZERO));
            check(ids.equals(Arrays.asList(null, null)), "client instance ids: " + ids);
            // The admin asks for its id itself, and fails as the broker does not advertise the API.
            try {
                admin.clientInstanceId(Duration.ofSeconds(30));
                check(false, "the admin got a client instance id");
            } catch (KafkaException refused) {  // around the ExecutionException of the request's future
                check(refused.getCause().getCause() instanceof UnsupportedVersionException,
                    "the admin's failure: " + refused.getCause());
            }
        }
        System.out.println("telemetry: ok");
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
