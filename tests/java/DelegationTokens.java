import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.DelegationTokenDisabledException;
import org.apache.kafka.common.errors.DelegationTokenNotFoundException;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.InvalidPrincipalTypeException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Delegation tokens with the Java client's Admin API, and producers and consumers authenticating with one
 * (SCRAM with tokenauth="true"). Modes:
 * <ul>
 * <li>disabled SASL: without delegation.token.secret.key every token API answers DELEGATION_TOKEN_AUTH_DISABLED;
 * <li>lifecycle PLAINTEXT SASL: create, describe, renew, expire, who may, where and when; prints the token left
 * alive as "token ID HMAC";
 * <li>restarted SASL ID HMAC: after a restart the token still authenticates; expired, it no longer does.
 * </ul>
 * The gateway's PLAIN users alice, admin and quinn authenticate the Admin clients on the SASL listener.
 */
public class DelegationTokens {
    private static final KafkaPrincipal QUINN = new KafkaPrincipal("User", "quinn");

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "disabled" -> disabled(args[1]);
            case "lifecycle" -> lifecycle(args[1], args[2]);
            case "restarted" -> restarted(args[1], args[2], args[3]);
            default -> throw new IllegalArgumentException(args[0]);
        }
        System.out.println("tokens: ok");
    }

    private static void disabled(String sasl) throws Exception {
        try (Admin alice = plainAdmin(sasl, "alice", "alice-secret")) {
            expect(alice.createDelegationToken().delegationToken(), DelegationTokenDisabledException.class);
            expect(alice.describeDelegationToken().delegationTokens(), DelegationTokenDisabledException.class);
            expect(alice.renewDelegationToken(new byte[64]).expiryTimestamp(), DelegationTokenDisabledException.class);
        }
    }

    private static void lifecycle(String plaintext, String sasl) throws Exception {
        Properties anonymous = new Properties();
        anonymous.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, plaintext);
        try (Admin admin = Admin.create(anonymous)) {
            expect(admin.createDelegationToken().delegationToken(), UnsupportedByAuthenticationException.class);
            expect(admin.describeDelegationToken().delegationTokens(), UnsupportedByAuthenticationException.class);
        }
        try (Admin alice = plainAdmin(sasl, "alice", "alice-secret");
             Admin admin = plainAdmin(sasl, "admin", "admin-secret");
             Admin quinn = plainAdmin(sasl, "quinn", "quinn-secret")) {
            DelegationToken token = alice.createDelegationToken(
                new CreateDelegationTokenOptions().renewers(List.of(QUINN))).delegationToken().get();
            TokenInformation info = token.tokenInfo();
            check(info.owner().equals(new KafkaPrincipal("User", "alice")), "owner " + info.owner());
            check(info.tokenRequester().equals(info.owner()), "requester " + info.tokenRequester());
            check(info.expiryTimestamp() - info.issueTimestamp() == 86_400_000L, "expiry " + info);
            check(info.maxTimestamp() - info.issueTimestamp() == 604_800_000L, "max " + info);
            check(token.hmac().length == 64, "an HmacSHA512: " + token.hmac().length + " bytes");
            check(info.renewers().equals(List.of(QUINN)), "renewers " + info.renewers());

            List<DelegationToken> described = alice.describeDelegationToken().delegationTokens().get();
            check(described.equals(List.of(token)), "alice describes her token: " + described);
            List<DelegationToken> byOwner = quinn.describeDelegationToken(new DescribeDelegationTokenOptions()
                .owners(List.of(info.owner()))).delegationTokens().get();
            check(byOwner.equals(List.of(token)), "quinn, a renewer, describes alice's token: " + byOwner);
            List<DelegationToken> none = alice.describeDelegationToken(new DescribeDelegationTokenOptions()
                .owners(List.of())).delegationTokens().get();
            check(none.isEmpty(), "no owners asked for, no tokens: " + none);

            long renewed = quinn.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions()
                .renewTimePeriodMs(3_600_000L)).expiryTimestamp().get();
            check(Math.abs(renewed - System.currentTimeMillis() - 3_600_000L) < 60_000L, "renewed to " + renewed);
            expect(admin.renewDelegationToken(token.hmac()).expiryTimestamp(),
                   DelegationTokenOwnerMismatchException.class);
            expect(alice.renewDelegationToken(new byte[64]).expiryTimestamp(), DelegationTokenNotFoundException.class);
            expect(alice.createDelegationToken(new CreateDelegationTokenOptions().renewers(
                List.of(new KafkaPrincipal("Group", "g")))).delegationToken(), InvalidPrincipalTypeException.class);

            produceAndConsume(sasl, "SCRAM-SHA-256", token, "java-token-256");
            produceAndConsume(sasl, "SCRAM-SHA-512", token, "java-token-512");
            try (Admin delegated = tokenAdmin(sasl, token)) {
                expect(delegated.createDelegationToken().delegationToken(), UnsupportedByAuthenticationException.class);
                expect(delegated.describeDelegationToken().delegationTokens(),
                       UnsupportedByAuthenticationException.class);
            }

            long expiry = alice.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions()
                .expiryTimePeriodMs(1_000L)).expiryTimestamp().get();
            check(expiry - System.currentTimeMillis() <= 1_000L, "expires within a second: " + expiry);
            waitUntilRemoved(alice, token);

            DelegationToken shortLived = alice.createDelegationToken(
                new CreateDelegationTokenOptions().maxlifeTimeMs(2_000L)).delegationToken().get();
            TokenInformation shortInfo = shortLived.tokenInfo();
            check(shortInfo.maxTimestamp() - shortInfo.issueTimestamp() == 2_000L, "max " + shortInfo);
            check(shortInfo.expiryTimestamp() == shortInfo.maxTimestamp(), "expiry capped: " + shortInfo);
            waitUntilRemoved(alice, shortLived);

            DelegationToken kept = alice.createDelegationToken().delegationToken().get();
            System.out.println("token " + kept.tokenInfo().tokenId() + " " + kept.hmacAsBase64String());
        }
    }

    private static void restarted(String sasl, String tokenId, String hmac) throws Exception {
        try (Admin alice = plainAdmin(sasl, "alice", "alice-secret")) {
            List<DelegationToken> described = alice.describeDelegationToken().delegationTokens().get();
            check(described.size() == 1 && described.get(0).tokenInfo().tokenId().equals(tokenId)
                  && described.get(0).hmacAsBase64String().equals(hmac), "the token kept: " + described);
            DelegationToken token = described.get(0);
            produceAndConsume(sasl, "SCRAM-SHA-512", token, "java-token-restarted");
            long expiry = alice.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions()
                .expiryTimePeriodMs(-1L)).expiryTimestamp().get();
            check(Math.abs(expiry - System.currentTimeMillis()) < 60_000L, "expired now: " + expiry);
            check(alice.describeDelegationToken().delegationTokens().get().isEmpty(), "expired at once");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                     tokenClient(sasl, "SCRAM-SHA-512", token), new StringSerializer(), new StringSerializer())) {
                expect(producer.send(new ProducerRecord<>("java-token-restarted", "k", "v")),
                       SaslAuthenticationException.class);
            }
        }
    }

    private static void waitUntilRemoved(Admin admin, DelegationToken token) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000L;
        String id = token.tokenInfo().tokenId();
        while (admin.describeDelegationToken().delegationTokens().get().stream()
                   .anyMatch(t -> t.tokenInfo().tokenId().equals(id))) {
            check(System.currentTimeMillis() < deadline, "the expired token removed within 30 s");
            Thread.sleep(100L);
        }
    }

    private static void produceAndConsume(String sasl, String mechanism, DelegationToken token, String topic)
            throws Exception {
        Properties config = tokenClient(sasl, mechanism, token);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config, new StringSerializer(),
                                                                          new StringSerializer())) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k", "record-" + i)).get();
            }
        }
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config, new StringDeserializer(),
                                                                          new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            int read = 0;
            long deadline = System.currentTimeMillis() + 30_000L;
            while (read < 3 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                read += records.count();
            }
            check(read == 3, mechanism + ": read " + read + " of 3");
        }
    }

    private static Admin plainAdmin(String sasl, String user, String password) {
        return Admin.create(saslConfig(sasl, "PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"
            + " required username=\"" + user + "\" password=\"" + password + "\";"));
    }

    private static Admin tokenAdmin(String sasl, DelegationToken token) {
        return Admin.create(tokenClient(sasl, "SCRAM-SHA-256", token));
    }

    private static Properties tokenClient(String sasl, String mechanism, DelegationToken token) {
        return saslConfig(sasl, mechanism, "org.apache.kafka.common.security.scram.ScramLoginModule required "
            + "username=\"" + token.tokenInfo().tokenId() + "\" password=\"" + token.hmacAsBase64String()
            + "\" tokenauth=\"true\";");
    }

    private static Properties saslConfig(String sasl, String mechanism, String jaas) {
        Properties config = new Properties();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, sasl);
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        config.put(SaslConfigs.SASL_MECHANISM, mechanism);
        config.put(SaslConfigs.SASL_JAAS_CONFIG, jaas);
        return config;
    }

    private static void expect(Future<?> future, Class<? extends Exception> failure) throws InterruptedException {
        try {
            future.get();
            check(false, "expected " + failure.getSimpleName() + ", got success");
        } catch (ExecutionException e) {
            check(failure.isInstance(e.getCause()), "expected " + failure.getSimpleName() + ", got " + e.getCause());
        }
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            System.out.println("FAIL " + what);
            System.exit(1);
        }
    }
}
