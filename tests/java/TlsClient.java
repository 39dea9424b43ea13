import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The Java client over SSL with PEM files: produce one record, read it back. Args: bootstrap, CA file,
 *  the client's PEM keystore (key and certificate) or "-" for none, topic, and optionally
 *  MECHANISM:USER:PASSWORD to authenticate with SASL over the TLS (SASL_SSL). Exits 1 on a failed check. */
public class TlsClient {
    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        common.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        common.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        common.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        common.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, args[1]);
        if (!args[2].equals("-")) {
            common.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
            common.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, args[2]);
        }
        String topic = args[3];
        if (args.length > 4) {
            String[] sasl = args[4].split(":", 3);
            String module = sasl[0].equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                                                    : "org.apache.kafka.common.security.scram.ScramLoginModule";
            common.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
            common.put(SaslConfigs.SASL_MECHANISM, sasl[0]);
            common.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + sasl[1] + "\" password=\""
                       + sasl[2] + "\";");
        }

        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.send(new ProducerRecord<>(topic, 0, "k", "over tls from java")).get();
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    String value = records.iterator().next().value();
                    if (!value.equals("over tls from java")) {
                        System.out.println("FAIL read back " + value);
                        System.exit(1);
                    }
                    System.out.println("tls: ok");
                    return;
                }
            }
        }
        System.out.println("FAIL nothing read back");
        System.exit(1);
    }
}
