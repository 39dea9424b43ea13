import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The Java Admin's describeFeatures and updateFeatures (what kafka-features.sh calls) and a consumer of the
 * KIP-848 protocol, refused while group.version is 0 and served once it is 1 again. Exits 1 on a failed check.
 */
public class Features {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
            check(features.supportedFeatures().equals(Map.of(
                "metadata.version", new SupportedVersionRange((short) 25, (short) 25),
                "group.version", new SupportedVersionRange((short) 0, (short) 1))), "supported: " + features);
            check(features.finalizedFeatures().equals(Map.of(
                "metadata.version", new FinalizedVersionRange((short) 25, (short) 25),
                "group.version", new FinalizedVersionRange((short) 1, (short) 1))), "finalized: " + features);
            long epoch = features.finalizedFeaturesEpoch().orElseThrow();

            try {
                admin.updateFeatures(Map.of("transaction.version",
                    new FeatureUpdate((short) 2, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions())
                    .all().get();
                check(false, "transaction.version 2 (KIP-890's epoch bump) is refused");
            } catch (ExecutionException refused) {
                check(refused.getCause() instanceof InvalidUpdateVersionException
                        && refused.getCause().getMessage().endsWith(
                        "Invalid update version 2 for feature transaction.version. "
                        + "Local controller 0 does not support this feature."), "refused with: " + refused.getCause());
            }

            admin.updateFeatures(Map.of("group.version",
                new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all().get();
            check(admin.describeFeatures().featureMetadata().get().finalizedFeaturesEpoch().orElseThrow() == epoch,
                "validateOnly changes nothing");
            admin.updateFeatures(Map.of("group.version",
                new FeatureUpdate((short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE)), new UpdateFeaturesOptions())
                .all().get();
            FeatureMetadata downgraded = admin.describeFeatures().featureMetadata().get();
            check(!downgraded.finalizedFeatures().containsKey("group.version"), "group.version 0: " + downgraded);
            check(downgraded.finalizedFeaturesEpoch().orElseThrow() > epoch, "the epoch grows: " + downgraded);

            admin.createTopics(List.of(new NewTopic("java-features", 1, (short) 1))).all().get();
            try (KafkaConsumer<String, String> consumer = consumer(bootstrap)) {
                consumer.subscribe(List.of("java-features"));
                consumer.poll(Duration.ofSeconds(20));
                check(false, "the consumer protocol is refused at group.version 0");
            } catch (UnsupportedVersionException refused) {
                System.out.println("consumer refused: " + refused.getMessage());
            }

            admin.updateFeatures(Map.of("group.version",
                new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions())
                .all().get();
            try (KafkaConsumer<String, String> consumer = consumer(bootstrap)) {
                consumer.subscribe(List.of("java-features"));
                long deadline = System.currentTimeMillis() + 30_000;
                while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(200));
                }
                check(consumer.assignment().size() == 1, "assigned at group.version 1: " + consumer.assignment());
            }
        }
        System.out.println("features: ok");
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "java-features");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
