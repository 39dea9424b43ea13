import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client over SASL_PLAINTEXT with SCRAM-SHA-512: the Admin creates the user on the PLAINTEXT listener
 * (args[0]), a producer authenticates on the SASL one (args[1]) and produces until it has re-authenticated once
 * (KIP-368, the gateway runs with a short connections.max.reauth.ms), a consumer reads the records back.
 */
public class Scram {
    private static final String TOPIC = "java-scram";

    public static void main(String[] args) throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin client = Admin.create(admin)) {
            client.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                "jay", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "jay-secret"))).all().get();
            int iterations = client.describeUserScramCredentials(List.of("jay")).description("jay").get()
                .credentialInfos().get(0).iterations();
            check(iterations == 8192, "described iterations: " + iterations);
        }
        Properties sasl = new Properties();
        sasl.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        sasl.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        sasl.put(SaslConfigs.SASL_MECHANISM, "SCRAM-SHA-512");
        sasl.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required "
                 + "username=\"jay\" password=\"jay-secret\";");
        int sent = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(sasl, new StringSerializer(),
                                                                          new StringSerializer())) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (reauthentications(producer.metrics()) < 1) {
                check(System.currentTimeMillis() < deadline, "the producer re-authenticated within 60 s");
                producer.send(new ProducerRecord<>(TOPIC, 0, "k", "record-" + sent)).get();
                sent++;
                Thread.sleep(50);
            }
        }
        Properties consumerProps = new Properties();
        consumerProps.putAll(sasl);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps, new StringDeserializer(),
                                                                          new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            int read = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (read < sent && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                read += records.count();
            }
            check(read == sent, "read " + read + " of " + sent);
        }
        System.out.println("scram: ok, " + sent + " records");
    }

    private static double reauthentications(Map<MetricName, ? extends Metric> metrics) {
        return metrics.entrySet().stream()
            .filter(e -> e.getKey().name().equals("successful-reauthentication-total"))
            .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
