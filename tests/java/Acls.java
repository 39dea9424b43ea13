import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringSerializer;

/** The Java Admin's ACL calls (what kafka-acls.sh uses) and a producer refused by them. Exits 1 on a failed check. */
public class Acls {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        AclBinding aliceReads = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "java-", PatternType.PREFIXED),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding anonymousDenied = new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, "java-denied", PatternType.LITERAL),
            new AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.DENY));
        AclBinding everyoneDescribes = new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, "java-denied", PatternType.LITERAL),
            new AccessControlEntry("User:*", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW));
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic("java-denied", 1, (short) 1))).all().get();
            admin.createAcls(List.of(aliceReads, anonymousDenied, everyoneDescribes)).all().get();
            Collection<AclBinding> all = admin.describeAcls(AclBindingFilter.ANY).values().get();
            check(Set.copyOf(all).equals(Set.of(aliceReads, anonymousDenied, everyoneDescribes)), "describe all: " + all);
            AclBindingFilter match = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, "java-denied", PatternType.MATCH),
                AccessControlEntryFilter.ANY);
            check(admin.describeAcls(match).values().get().size() == 3, "match finds the prefixed ACL too");

            Properties producerProps = new Properties();
            producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
            producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
            try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer())) {
                producer.send(new ProducerRecord<>("java-denied", "x")).get();
                check(false, "a produce without WRITE is refused");
            } catch (ExecutionException refused) {
                check(refused.getCause() instanceof TopicAuthorizationException, "refused with: " + refused.getCause());
            }

            AclBindingFilter alice = new AclBindingFilter(ResourcePatternFilter.ANY,
                new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
            Collection<AclBinding> deleted = admin.deleteAcls(List.of(alice)).all().get();
            check(List.copyOf(deleted).equals(List.of(aliceReads)), "deleted: " + deleted);
            check(admin.describeAcls(alice).values().get().isEmpty(), "alice's ACL is gone");
        }
        System.out.println("acls: ok");
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
