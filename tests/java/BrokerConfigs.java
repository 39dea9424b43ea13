import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;

/**
 * Dynamic broker configs through the Java Admin, as kafka-configs.sh --entity-type brokers sends them: the
 * cluster default (--entity-default, resource "") and broker 0's own value reach a topic without an override,
 * with Kafka's sources and synonyms; a static config is refused with Kafka's message; a Kafka config inert here
 * (librdkafka's test 0081 sets it) is taken; a broker logger's level changes live (kafka-configs.sh --entity-type
 * broker-loggers); deleting both restores the default. Exits 1 on a failed check.
 */
public class BrokerConfigs {
    static final ConfigResource CLUSTER_DEFAULT = new ConfigResource(ConfigResource.Type.BROKER, "");
    static final ConfigResource BROKER_0 = new ConfigResource(ConfigResource.Type.BROKER, "0");
    static final ConfigResource TOPIC = new ConfigResource(ConfigResource.Type.TOPIC, "java-broker-configs");
    static final ConfigResource LOGGERS = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, "0");

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(TOPIC.name(), 1, (short) 1))).all().get();

            alter(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.SET, "86400000");
            ConfigEntry retention = entry(admin, TOPIC, "retention.ms");
            check(retention.value().equals("86400000") && retention.source() == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                "the cluster default reaches the topic: " + retention);
            ConfigEntry.ConfigSynonym first = retention.synonyms().get(0);
            check(first.name().equals("log.retention.ms") && first.source() == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                "its first synonym: " + retention.synonyms());
            ConfigEntry defaulted = entry(admin, CLUSTER_DEFAULT, "log.retention.ms");
            check(defaulted.value().equals("86400000") && !defaulted.isReadOnly(), "the default resource: " + defaulted);

            alter(admin, BROKER_0, AlterConfigOp.OpType.SET, "3600000");
            retention = entry(admin, TOPIC, "retention.ms");
            check(retention.value().equals("3600000") && retention.source() == ConfigSource.DYNAMIC_BROKER_CONFIG,
                "broker 0's own value wins: " + retention);
            List<ConfigSource> sources = retention.synonyms().stream().map(ConfigEntry.ConfigSynonym::source).toList();
            check(sources.subList(0, 2).equals(
                List.of(ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)),
                "synonyms most specific first: " + retention.synonyms());

            try {
                admin.incrementalAlterConfigs(Map.of(CLUSTER_DEFAULT, List.of(new AlterConfigOp(
                    new ConfigEntry("num.partitions", "7"), AlterConfigOp.OpType.SET)))).all().get();
                check(false, "num.partitions is not dynamic");
            } catch (ExecutionException refused) {
                check(refused.getCause() instanceof InvalidRequestException && refused.getCause().getMessage()
                    .equals("Cannot update these configs dynamically: Set(num.partitions)"), "refused: " + refused);
            }

            admin.incrementalAlterConfigs(Map.of(BROKER_0, List.of(new AlterConfigOp(
                new ConfigEntry("sasl.kerberos.min.time.before.relogin", "58000"), AlterConfigOp.OpType.SET))))
                .all().get();
            ConfigEntry inert = entry(admin, BROKER_0, "sasl.kerberos.min.time.before.relogin");
            check(inert.value().equals("58000") && inert.source() == ConfigSource.DYNAMIC_BROKER_CONFIG,
                "a dynamic config of Kafka's that is inert here is taken and described: " + inert);

            admin.incrementalAlterConfigs(Map.of(LOGGERS, List.of(new AlterConfigOp(
                new ConfigEntry("gateway.acls", "DEBUG"), AlterConfigOp.OpType.SET)))).all().get();
            ConfigEntry level = entry(admin, LOGGERS, "gateway.acls");
            check(level.value().equals("DEBUG") && level.source() == ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                "a logger's level set live: " + level);
            admin.incrementalAlterConfigs(Map.of(LOGGERS, List.of(new AlterConfigOp(
                new ConfigEntry("gateway.acls", null), AlterConfigOp.OpType.DELETE)))).all().get();
            level = entry(admin, LOGGERS, "gateway.acls");
            check(level.value().equals(entry(admin, LOGGERS, "root").value()), "deleted, the root's level: " + level);

            alter(admin, BROKER_0, AlterConfigOp.OpType.DELETE, null);
            alter(admin, CLUSTER_DEFAULT, AlterConfigOp.OpType.DELETE, null);
            retention = entry(admin, TOPIC, "retention.ms");
            check(retention.value().equals("604800000") && retention.source() == ConfigSource.DEFAULT_CONFIG,
                "deleted, the default again: " + retention);
        }
        System.out.println("broker configs: ok");
    }

    private static void alter(Admin admin, ConfigResource resource, AlterConfigOp.OpType op, String value)
            throws Exception {
        AlterConfigOp change = new AlterConfigOp(new ConfigEntry("log.retention.ms", value), op);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(change))).all().get();
    }

    private static ConfigEntry entry(Admin admin, ConfigResource resource, String name) throws Exception {
        Map<ConfigResource, Config> described = admin.describeConfigs(List.of(resource),
            new DescribeConfigsOptions().includeSynonyms(true)).all().get();
        Collection<ConfigEntry> entries = described.get(resource).entries();
        return entries.stream().filter(e -> e.name().equals(name)).findFirst().orElseThrow();
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
