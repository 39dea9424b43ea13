import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.LogDirNotFoundException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;

/**
 * What Spark's Kafka connector asks of a broker, done with the Java client's
 * default settings: one line per check (PASS, FAIL or SKIP), then a summary.
 *
 * Usage: Conformance BOOTSTRAP [--pending FEATURE=REASON]...
 * A pending feature ("groups", "transactions") has its checks skipped.
 * Exit code 0 when no check failed.
 */
public final class Conformance {
    private static final long WAIT_S = 30;
    private static final int PER_PARTITION = 10;
    private static final int PARTITIONS = 3;
    private static final List<String> CODECS = List.of("none", "gzip", "snappy", "lz4", "zstd");

    private final String bootstrap;
    private final Map<String, String> pending;
    private final String prefix = "conformance-" + UUID.randomUUID().toString().substring(0, 8);
    // Event n is stamped baseTimestamp + n s, so lookups by time have exact answers.
    private final long baseTimestamp = System.currentTimeMillis() - 3_600_000;
    private final Admin admin;
    private int passed, failed, skipped;

    private final String events = prefix + "-events";
    private final String headers = prefix + "-headers";
    private final String codecs = prefix + "-codecs";
    private final String trimmed = prefix + "-trimmed";
    private final String grouped = prefix + "-grouped";
    private final String transactional = prefix + "-transactional";
    private final String described = prefix + "-described";
    // The producer whose open, then committed, transaction the admin checks describe.
    private KafkaProducer<String, String> describedProducer;
    private TransactionDescription describedOpen;

    private Conformance(String bootstrap, Map<String, String> pending) {
        this.bootstrap = bootstrap;
        this.pending = pending;
        this.admin = Admin.create(settings());
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> pending = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].equals("--pending")) throw new IllegalArgumentException(args[i]);
            String[] feature = args[i + 1].split("=", 2);
            pending.put(feature[0], feature.length > 1 ? feature[1] : "pending");
        }
        Conformance conformance = new Conformance(args[0], pending);
        try {
            conformance.runAll();
        } finally {
            conformance.admin.close();
        }
        System.out.printf("conformance: %d passed, %d failed, %d skipped%n",
                conformance.passed, conformance.failed, conformance.skipped);
        System.exit(conformance.failed == 0 ? 0 : 1);
    }

    private void runAll() {
        check("admin.createTopics", this::createTopics);
        check("admin.describeTopics", this::describeTopics);
        check("admin.listTopics", this::listTopics);
        check("admin.describeCluster", this::describeCluster);
        check("admin.describeConfigs", this::describeConfigs);
        check("producer.idempotent-defaults", this::produceEvents);
        check("producer.headers", this::produceHeaders);
        for (String codec : CODECS) {
            check("producer.compression." + codec, () -> compressedRoundTrip(codec));
        }
        check("admin.listOffsets.earliest-latest", this::listEarliestLatest);
        check("admin.listOffsets.forTimestamp", this::listForTimestamp);
        check("admin.listOffsets.maxTimestamp", this::listMaxTimestamp);
        check("consumer.offsets-lookup", this::consumerOffsetLookups);
        check("consumer.assign-seek.read_uncommitted", () -> readEvents(IsolationLevel.READ_UNCOMMITTED));
        check("consumer.assign-seek.read_committed", () -> readEvents(IsolationLevel.READ_COMMITTED));
        check("consumer.seek-mid-partition", this::seekMidPartition);
        check("consumer.seek-with-leader-epoch", this::seekWithLeaderEpoch);
        check("consumer.poll-at-end", this::pollAtEnd);
        check("admin.deleteRecords-then-out-of-range", this::dataLoss);
        check("consumer.seek-past-end", this::seekPastEnd);
        checkUnlessPending("groups", "consumer.subscribe-group-commit", this::subscribeWithGroup);
        checkUnlessPending("groups", "consumer.subscribe-consumer-protocol", this::subscribeWithConsumerProtocol);
        checkUnlessPending("transactions", "producer.transactional", this::transactions);
        checkUnlessPending("transactions", "admin.listOffsets.open-transaction", this::openTransaction);
        checkUnlessPending("transactions", "admin.describeTransactions.ongoing", this::describeOngoing);
        checkUnlessPending("transactions", "admin.describeProducers.ongoing", this::describeProducersOngoing);
        checkUnlessPending("transactions", "admin.listTransactions.filters", this::listTransactionsFiltered);
        checkUnlessPending("transactions", "admin.describe-after-commit", this::describeCommitted);
        checkUnlessPending("transactions", "admin.abortTransaction.hanging", this::abortHanging);
        check("admin.acls.no-authorizer", this::aclsWithoutAuthorizer);
        check("admin.describeLogDirs", this::describeLogDirs);
        check("admin.electLeaders", this::electLeaders);
        check("admin.partitionReassignments", this::reassignments);
        check("admin.alterReplicaLogDirs", this::alterReplicaLogDirs);
        check("admin.describeMetadataQuorum", this::describeQuorum);
        checkUnlessPending("groups", "admin.internal-offsets-topic", this::offsetsTopic);
    }

    // ---------------------------------------------------------------- harness

    private interface Check {
        String run() throws Exception;
    }

    private void check(String name, Check body) {
        long start = System.nanoTime();
        String outcome;
        try {
            outcome = "PASS " + name + ": " + body.run();
            passed++;
        } catch (Throwable failure) {
            Throwable cause = failure instanceof ExecutionException ? failure.getCause() : failure;
            outcome = "FAIL " + name + ": " + cause;
            failed++;
        }
        System.out.printf("%s (%.1f s)%n", outcome, (System.nanoTime() - start) / 1e9);
        System.out.flush();
    }

    private void checkUnlessPending(String feature, String name, Check body) {
        if (pending.containsKey(feature)) {
            System.out.println("SKIP " + name + ": " + feature + " pending (" + pending.get(feature) + ")");
            skipped++;
        } else {
            check(name, body);
        }
    }

    private static void expect(boolean condition, String message) {
        if (!condition) throw new AssertionError(message);
    }

    private static void expectEqual(Object expected, Object actual, String what) {
        expect(expected.equals(actual), what + ": expected " + expected + ", got " + actual);
    }

    private static <T> T await(Future<T> future) throws Exception {
        return future.get(WAIT_S, TimeUnit.SECONDS);
    }

    private interface Read<T> {
        T get() throws Exception;
    }

    /** Reads until `done` holds or WAIT_S pass; the last value read. */
    private static <T> T until(Read<T> read, Predicate<T> done) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        T value = read.get();
        while (!done.test(value) && System.nanoTime() < deadline) {
            Thread.sleep(50);
            value = read.get();
        }
        return value;
    }

    /** The exception the call failed with, or null when it succeeded. */
    private static Throwable failure(Future<?> call) throws Exception {
        try {
            await(call);
            return null;
        } catch (ExecutionException failed) {
            return failed.getCause();
        }
    }

    private Properties settings(String... pairs) {
        Properties properties = new Properties();
        properties.put("bootstrap.servers", bootstrap);
        for (int i = 0; i < pairs.length; i += 2) properties.put(pairs[i], pairs[i + 1]);
        return properties;
    }

    private KafkaProducer<String, String> producer(String... pairs) {
        Properties properties = settings(pairs);
        properties.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        properties.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        return new KafkaProducer<>(properties);
    }

    /** A consumer as Spark's executors make one: its own group id, no auto-commit, no reset. */
    private KafkaConsumer<String, String> consumer(String... pairs) {
        Properties properties = settings("group.id", prefix + "-executor", "enable.auto.commit", "false",
                "auto.offset.reset", "none");
        properties.putAll(settings(pairs));
        properties.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        properties.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        return new KafkaConsumer<>(properties);
    }

    private static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> result = new ArrayList<>();
        for (int p = 0; p < count; p++) result.add(new TopicPartition(topic, p));
        return result;
    }

    /** Polls until `count` records came, failing after WAIT_S. */
    private static List<ConsumerRecord<String, String>> pollFor(KafkaConsumer<String, String> consumer, int count) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        while (records.size() < count && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
        }
        expect(records.size() == count, "expected " + count + " records, got " + records.size());
        return records;
    }

    /** Assigns the partitions, seeks each to `offset` and reads `count` records. */
    private List<ConsumerRecord<String, String>> readFrom(List<TopicPartition> partitions, long offset, int count,
                                                         String... pairs) {
        try (KafkaConsumer<String, String> consumer = consumer(pairs)) {
            consumer.assign(partitions);
            partitions.forEach(partition -> consumer.seek(partition, offset));
            return pollFor(consumer, count);
        }
    }

    private static Map<TopicPartition, OffsetSpec> every(List<TopicPartition> partitions, OffsetSpec spec) {
        return partitions.stream().collect(Collectors.toMap(partition -> partition, partition -> spec));
    }

    private Map<TopicPartition, ListOffsetsResultInfo> listOffsets(Map<TopicPartition, OffsetSpec> specs,
                                                                   IsolationLevel isolation) throws Exception {
        return await(admin.listOffsets(specs, new ListOffsetsOptions(isolation)).all());
    }

    // ---------------------------------------------------------------- admin

    private String createTopics() throws Exception {
        Map<String, String> configs = Map.of("cleanup.policy", "delete", "retention.ms", "-1");
        List<NewTopic> topics = List.of(
                new NewTopic(events, Optional.of(PARTITIONS), Optional.empty()).configs(configs),
                new NewTopic(headers, 1, (short) 1),
                new NewTopic(codecs, Optional.of(CODECS.size()), Optional.empty()),
                new NewTopic(trimmed, 1, (short) 1),
                new NewTopic(grouped, PARTITIONS, (short) 1),
                new NewTopic(transactional, 1, (short) 1),
                new NewTopic(described, 1, (short) 1));
        await(admin.createTopics(topics).all());
        try {
            await(admin.createTopics(List.of(new NewTopic(events, 1, (short) 1))).all());
            throw new AssertionError("creating " + events + " again succeeded");
        } catch (ExecutionException expected) {
            expect(expected.getCause() instanceof TopicExistsException, "second create: " + expected.getCause());
        }
        return topics.size() + " topics created; a second create fails with TopicExistsException";
    }

    private String describeTopics() throws Exception {
        Node node = await(admin.describeCluster().controller());
        Map<String, TopicDescription> topics = await(admin.describeTopics(List.of(events, codecs)).allTopicNames());
        expectEqual(PARTITIONS, topics.get(events).partitions().size(), events + " partitions");
        expectEqual(CODECS.size(), topics.get(codecs).partitions().size(), codecs + " partitions");
        for (TopicDescription topic : topics.values()) {
            expect(!topic.topicId().equals(Uuid.ZERO_UUID), topic.name() + " has no topic id");
            expect(!topic.isInternal(), topic.name() + " is internal");
            for (TopicPartitionInfo partition : topic.partitions()) {
                expectEqual(node.id(), partition.leader().id(), topic.name() + "/" + partition.partition() + " leader");
                expectEqual(List.of(node), partition.replicas(), "replicas");
                expectEqual(List.of(node), partition.isr(), "in-sync replicas");
            }
        }
        return "partition counts, topic ids, leader/replicas/isr = node " + node.id();
    }

    private String listTopics() throws Exception {
        Set<String> names = await(admin.listTopics().names());
        List<String> ours = List.of(events, headers, codecs, trimmed, grouped, transactional, described);
        expect(names.containsAll(ours), "missing topics: " + ours + " not all in " + names);
        expect(names.stream().noneMatch(name -> name.startsWith("__")), "internal topics listed: " + names);
        return names.size() + " topics, ours included, none internal";
    }

    private String describeCluster() throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        String clusterId = await(cluster.clusterId());
        Collection<Node> nodes = await(cluster.nodes());
        Node controller = await(cluster.controller());
        expect(clusterId != null && !clusterId.isEmpty(), "no cluster id");
        expectEqual(1, nodes.size(), "node count");
        Node node = nodes.iterator().next();
        expectEqual(bootstrap, node.host() + ":" + node.port(), "advertised address");
        expectEqual(node.id(), controller.id(), "controller");
        return "cluster " + clusterId + ", node " + node;
    }

    private String describeConfigs() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, events);
        Config config = await(admin.describeConfigs(List.of(resource)).all()).get(resource);
        ConfigEntry retention = config.get("retention.ms");
        expectEqual("-1", retention.value(), "retention.ms");
        expectEqual(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source(), "retention.ms source");
        ConfigEntry maxBytes = config.get("max.message.bytes");
        expect(maxBytes != null && maxBytes.isDefault(), "max.message.bytes not a default: " + maxBytes);
        expect(Integer.parseInt(maxBytes.value()) > 0, "max.message.bytes " + maxBytes.value());
        return config.entries().size() + " entries; retention.ms=-1 (topic), max.message.bytes="
                + maxBytes.value() + " (default)";
    }

    // ---------------------------------------------------------------- producers

    private static String eventValue(int number) {
        return "{\"user\":\"user-" + number % 4 + "\",\"number\":" + number + "}";
    }

    /** 30 records, record n in partition n % 3 at offset n / 3, sent together so they share batches. */
    private String produceEvents() throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            for (int n = 0; n < PARTITIONS * PER_PARTITION; n++) {
                sent.add(producer.send(new ProducerRecord<>(events, n % PARTITIONS, baseTimestamp + n * 1000L,
                        "key-" + n, eventValue(n))));
            }
            producer.flush();
        }
        for (int n = 0; n < sent.size(); n++) {
            RecordMetadata metadata = await(sent.get(n));
            expectEqual(n % PARTITIONS, metadata.partition(), "record " + n + " partition");
            expectEqual((long) n / PARTITIONS, metadata.offset(), "record " + n + " offset");
            expectEqual(baseTimestamp + n * 1000L, metadata.timestamp(), "record " + n + " timestamp");
        }
        return sent.size() + " records acknowledged with their offsets and timestamps (idempotent, acks=all)";
    }

    private String produceHeaders() throws Exception {
        List<Header> sentHeaders = List.of(
                new RecordHeader("trace", "abc".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("trace", "second".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("empty", new byte[0]),
                new RecordHeader("null", null));
        try (KafkaProducer<String, String> producer = producer()) {
            await(producer.send(new ProducerRecord<>(headers, 0, null, "with-headers", "v0", sentHeaders)));
            await(producer.send(new ProducerRecord<>(headers, 0, null, null, "no key, no headers")));
            await(producer.send(new ProducerRecord<String, String>(headers, 0, "tombstone", null)));
        }
        List<ConsumerRecord<String, String>> got = readFrom(partitions(headers, 1), 0, 3);
        List<Header> gotHeaders = Arrays.asList(got.get(0).headers().toArray());
        expectEqual(sentHeaders.size(), gotHeaders.size(), "header count");
        for (int i = 0; i < sentHeaders.size(); i++) {
            expectEqual(sentHeaders.get(i).key(), gotHeaders.get(i).key(), "header " + i + " key");
            expect(Arrays.equals(sentHeaders.get(i).value(), gotHeaders.get(i).value()), "header " + i + " value");
        }
        expectEqual("with-headers", got.get(0).key(), "record 0 key");
        expect(got.get(1).key() == null && got.get(1).headers().toArray().length == 0, "record 1: " + got.get(1));
        expect(got.get(2).value() == null, "record 2 is no tombstone: " + got.get(2));
        return "repeated, empty and null headers, a null key and a null value read back";
    }

    private String compressedRoundTrip(String codec) throws Exception {
        int partition = CODECS.indexOf(codec);
        int count = 50;
        try (KafkaProducer<String, String> producer = producer("compression.type", codec)) {
            for (int n = 0; n < count; n++) {
                producer.send(new ProducerRecord<>(codecs, partition, "key-" + n, codec.repeat(20) + n));
            }
            producer.flush();
        }
        List<ConsumerRecord<String, String>> got = readFrom(List.of(new TopicPartition(codecs, partition)), 0, count);
        for (int n = 0; n < count; n++) {
            ConsumerRecord<String, String> record = got.get(n);
            expectEqual((long) n, record.offset(), "offset");
            expectEqual("key-" + n, record.key(), "key");
            expectEqual(codec.repeat(20) + n, record.value(), "value");
        }
        return count + " " + codec + " records read back in order";
    }

    // ---------------------------------------------------------------- offsets

    private String listEarliestLatest() throws Exception {
        List<TopicPartition> partitions = partitions(events, PARTITIONS);
        for (IsolationLevel isolation : IsolationLevel.values()) {
            Map<TopicPartition, ListOffsetsResultInfo> earliest =
                    listOffsets(every(partitions, OffsetSpec.earliest()), isolation);
            Map<TopicPartition, ListOffsetsResultInfo> latest =
                    listOffsets(every(partitions, OffsetSpec.latest()), isolation);
            for (TopicPartition partition : partitions) {
                String where = partition + " (" + isolation + ")";
                expectEqual(0L, earliest.get(partition).offset(), where + " earliest");
                expectEqual((long) PER_PARTITION, latest.get(partition).offset(), where + " latest");
            }
        }
        return "earliest 0, latest " + PER_PARTITION + " in every partition, both isolation levels";
    }

    /** Record n lies in partition n % 3 at offset n / 3, with timestamp BASE + n s. */
    private String listForTimestamp() throws Exception {
        List<TopicPartition> partitions = partitions(events, PARTITIONS);
        int between = 13;  // halfway between records 13 and 14: the first at or after it is 14, 15 or 16
        Map<TopicPartition, ListOffsetsResultInfo> found = listOffsets(
                every(partitions, OffsetSpec.forTimestamp(baseTimestamp + between * 1000L + 500)),
                IsolationLevel.READ_UNCOMMITTED);
        for (TopicPartition partition : partitions) {
            int first = between + 1 + Math.floorMod(partition.partition() - between - 1, PARTITIONS);
            expectEqual((long) first / PARTITIONS, found.get(partition).offset(), partition + " offset");
            expectEqual(baseTimestamp + first * 1000L, found.get(partition).timestamp(), partition + " timestamp");
        }
        Map<TopicPartition, ListOffsetsResultInfo> beyond = listOffsets(
                every(partitions, OffsetSpec.forTimestamp(baseTimestamp + 3_600_000)), IsolationLevel.READ_UNCOMMITTED);
        for (TopicPartition partition : partitions) {
            expectEqual(-1L, beyond.get(partition).offset(), partition + " offset after the last timestamp");
        }
        Map<TopicPartition, ListOffsetsResultInfo> before = listOffsets(
                every(partitions, OffsetSpec.forTimestamp(0)), IsolationLevel.READ_UNCOMMITTED);
        for (TopicPartition partition : partitions) {
            expectEqual(0L, before.get(partition).offset(), partition + " offset for time 0");
        }
        return "exact offsets inside batches; -1 past the last timestamp; 0 for time 0";
    }

    private String listMaxTimestamp() throws Exception {
        List<TopicPartition> partitions = partitions(events, PARTITIONS);
        Map<TopicPartition, ListOffsetsResultInfo> found = listOffsets(
                every(partitions, OffsetSpec.maxTimestamp()), IsolationLevel.READ_UNCOMMITTED);
        for (TopicPartition partition : partitions) {
            int last = PARTITIONS * (PER_PARTITION - 1) + partition.partition();
            expectEqual((long) PER_PARTITION - 1, found.get(partition).offset(), partition + " offset");
            expectEqual(baseTimestamp + last * 1000L, found.get(partition).timestamp(), partition + " timestamp");
        }
        return "the last record of each partition";
    }

    private String consumerOffsetLookups() {
        List<TopicPartition> partitions = partitions(events, PARTITIONS);
        try (KafkaConsumer<String, String> consumer = consumer()) {
            Duration wait = Duration.ofSeconds(WAIT_S);
            Map<TopicPartition, Long> beginning = consumer.beginningOffsets(partitions, wait);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, wait);
            Map<TopicPartition, Long> times = partitions.stream()
                    .collect(Collectors.toMap(partition -> partition, partition -> baseTimestamp));
            Map<TopicPartition, OffsetAndTimestamp> byTime = consumer.offsetsForTimes(times, wait);
            for (TopicPartition partition : partitions) {
                expectEqual(0L, beginning.get(partition), partition + " beginning");
                expectEqual((long) PER_PARTITION, end.get(partition), partition + " end");
                OffsetAndTimestamp first = byTime.get(partition);
                expect(first != null, partition + ": no offset for the first timestamp");
                expectEqual(0L, first.offset(), partition + " offset for the first timestamp");
                expectEqual(baseTimestamp + partition.partition() * 1000L, first.timestamp(),
                        partition + " first timestamp");
            }
        }
        return "beginningOffsets, endOffsets, offsetsForTimes";
    }

    // ---------------------------------------------------------------- consumers

    private String readEvents(IsolationLevel isolation) {
        List<ConsumerRecord<String, String>> got = readFrom(partitions(events, PARTITIONS), 0,
                PARTITIONS * PER_PARTITION, "isolation.level", isolation.toString());
        for (ConsumerRecord<String, String> record : got) {
            int n = Integer.parseInt(record.key().substring("key-".length()));
            expectEqual(n % PARTITIONS, record.partition(), record.key() + " partition");
            expectEqual((long) n / PARTITIONS, record.offset(), record.key() + " offset");
            expectEqual(eventValue(n), record.value(), record.key() + " value");
            expectEqual(baseTimestamp + n * 1000L, record.timestamp(), record.key() + " timestamp");
            expectEqual(TimestampType.CREATE_TIME, record.timestampType(), record.key() + " timestamp type");
            expect(record.leaderEpoch().isPresent(), record.key() + " has no leader epoch");
        }
        expectEqual((long) PARTITIONS * PER_PARTITION, got.stream().map(ConsumerRecord::key).distinct().count(),
                "distinct records");
        return got.size() + " records with keys, values, offsets, CreateTime timestamps";
    }

    private String seekMidPartition() {
        TopicPartition partition = new TopicPartition(events, 1);
        List<ConsumerRecord<String, String>> got = readFrom(List.of(partition), 7, PER_PARTITION - 7);
        expectEqual(7L, got.get(0).offset(), "first offset");
        expectEqual("key-" + (7 * PARTITIONS + 1), got.get(0).key(), "first key");
        return "seek to offset 7 (inside a batch) starts at offset 7";
    }

    /** A position with a leader epoch is validated (OffsetForLeaderEpoch) before the consumer fetches. */
    private String seekWithLeaderEpoch() {
        TopicPartition partition = new TopicPartition(events, 2);
        Optional<Integer> epoch = readFrom(List.of(partition), 0, PER_PARTITION).get(0).leaderEpoch();
        try (KafkaConsumer<String, String> consumer = consumer()) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, new OffsetAndMetadata(5, epoch, ""));
            List<ConsumerRecord<String, String>> got = pollFor(consumer, PER_PARTITION - 5);
            expectEqual(5L, got.get(0).offset(), "first offset");
            expectEqual("key-" + (5 * PARTITIONS + 2), got.get(0).key(), "first key");
        }
        return "seek to offset 5 with leader epoch " + epoch.orElseThrow() + " reads from offset 5";
    }

    private String pollAtEnd() {
        TopicPartition partition = new TopicPartition(events, 0);
        try (KafkaConsumer<String, String> consumer = consumer()) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, PER_PARTITION);
            int got = consumer.poll(Duration.ofSeconds(1)).count();
            expectEqual(0, got, "records at the log end");
            expectEqual((long) PER_PARTITION, consumer.position(partition), "position");
        }
        return "no records and no error at the log end";
    }

    /** What Spark's failOnDataLoss relies on: records below the log start are out of range. */
    private String dataLoss() throws Exception {
        TopicPartition partition = new TopicPartition(trimmed, 0);
        try (KafkaProducer<String, String> producer = producer()) {
            for (int n = 0; n < PER_PARTITION; n++) producer.send(new ProducerRecord<>(trimmed, 0, "k" + n, "v" + n));
        }
        long low = await(admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(4))).lowWatermarks()
                .get(partition)).lowWatermark();
        expectEqual(4L, low, "low watermark");
        long earliest = listOffsets(Map.of(partition, OffsetSpec.earliest()), IsolationLevel.READ_UNCOMMITTED)
                .get(partition).offset();
        expectEqual(4L, earliest, "earliest after deleteRecords");
        expectOutOfRange(partition, 0);
        List<ConsumerRecord<String, String>> got = readFrom(List.of(partition), 0, PER_PARTITION - 4,
                "auto.offset.reset", "earliest");
        expectEqual(4L, got.get(0).offset(), "first offset after a reset to earliest");
        expectEqual("v4", got.get(0).value(), "first value after a reset to earliest");
        return "low watermark 4; offset 0 out of range; reset to earliest reads from 4";
    }

    private String seekPastEnd() {
        expectOutOfRange(new TopicPartition(events, 2), PER_PARTITION + 5);
        return "an offset past the log end is out of range";
    }

    private void expectOutOfRange(TopicPartition partition, long offset) {
        try (KafkaConsumer<String, String> consumer = consumer()) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, offset);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
            while (System.nanoTime() < deadline) {
                try {
                    consumer.poll(Duration.ofMillis(200));
                } catch (OffsetOutOfRangeException expected) {
                    expectEqual(Map.of(partition, offset), expected.offsetOutOfRangePartitions(), "out of range");
                    return;
                }
            }
            throw new AssertionError("no OffsetOutOfRangeException for " + partition + " at " + offset);
        }
    }

    // ---------------------------------------------------------------- groups (issue 5)

    private String subscribeWithGroup() throws Exception {
        String group = prefix + "-group";
        try (KafkaProducer<String, String> producer = producer()) {
            for (int n = 0; n < PARTITIONS * PER_PARTITION; n++) {
                producer.send(new ProducerRecord<>(grouped, n % PARTITIONS, "key-" + n, "value-" + n));
            }
        }
        List<TopicPartition> partitions = partitions(grouped, PARTITIONS);
        try (KafkaConsumer<String, String> consumer = consumer("group.id", group, "auto.offset.reset", "earliest")) {
            consumer.subscribe(List.of(grouped));
            List<ConsumerRecord<String, String>> got = pollFor(consumer, PARTITIONS * PER_PARTITION);
            expectEqual(Set.copyOf(partitions), consumer.assignment(), "assignment");
            expectEqual((long) PARTITIONS * PER_PARTITION, got.stream().map(ConsumerRecord::value).distinct().count(),
                    "distinct values");
            consumer.commitSync();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.copyOf(partitions));
            for (TopicPartition partition : partitions) {
                expectEqual((long) PER_PARTITION, committed.get(partition).offset(), partition + " committed");
            }
        }
        try (KafkaProducer<String, String> producer = producer()) {
            await(producer.send(new ProducerRecord<>(grouped, 0, "after", "after-commit")));
        }
        try (KafkaConsumer<String, String> consumer = consumer("group.id", group, "auto.offset.reset", "earliest")) {
            consumer.subscribe(List.of(grouped));
            List<ConsumerRecord<String, String>> got = pollFor(consumer, 1);
            expectEqual("after-commit", got.get(0).value(), "the one record after the commit");
            expectEqual((long) PER_PARTITION, got.get(0).offset(), "its offset");
        }
        return "subscribe, commitSync, committed; a new member resumes at the commit";
    }

    /** KIP-848: the same topic read by a group of the consumer protocol, server-side assignment. */
    private String subscribeWithConsumerProtocol() throws Exception {
        List<TopicPartition> partitions = partitions(grouped, PARTITIONS);
        int records = PARTITIONS * PER_PARTITION + 1;  // and the one written after the first group's commit
        try (KafkaConsumer<String, String> consumer = consumer("group.id", prefix + "-kip848",
                "group.protocol", "consumer", "auto.offset.reset", "earliest")) {
            consumer.subscribe(List.of(grouped));
            List<ConsumerRecord<String, String>> got = pollFor(consumer, records);
            expectEqual(Set.copyOf(partitions), consumer.assignment(), "assignment");
            expectEqual((long) records, got.stream().map(ConsumerRecord::value).distinct().count(), "distinct values");
            consumer.commitSync();
            expectEqual((long) PER_PARTITION + 1, consumer.committed(Set.of(partitions.get(0)))
                    .get(partitions.get(0)).offset(), "partition 0 committed");
            return "group.protocol=consumer: every partition assigned, " + records + " records, commitSync";
        }
    }

    // ---------------------------------------------------------------- transactions (issue 6)

    private KafkaProducer<String, String> transactionalProducer() {
        KafkaProducer<String, String> producer = producer("transactional.id", prefix + "-txn");
        producer.initTransactions();
        return producer;
    }

    /** committed 0-2, marker 3, aborted 4-5, marker 6, committed 7, marker 8. */
    private String transactions() throws Exception {
        try (KafkaProducer<String, String> producer = transactionalProducer()) {
            sendInTransaction(producer, List.of("c0", "c1", "c2"));
            producer.commitTransaction();
            sendInTransaction(producer, List.of("a0", "a1"));
            producer.abortTransaction();
            sendInTransaction(producer, List.of("c3"));
            producer.commitTransaction();
        }
        List<TopicPartition> partition = partitions(transactional, 1);
        expectRead(readFrom(partition, 0, 4, "isolation.level", "read_committed"),
                List.of("c0", "c1", "c2", "c3"), List.of(0L, 1L, 2L, 7L));
        expectRead(readFrom(partition, 0, 6, "isolation.level", "read_uncommitted"),
                List.of("c0", "c1", "c2", "a0", "a1", "c3"), List.of(0L, 1L, 2L, 4L, 5L, 7L));
        long latest = listOffsets(every(partition, OffsetSpec.latest()), IsolationLevel.READ_COMMITTED)
                .get(partition.get(0)).offset();
        expectEqual(9L, latest, "latest (read_committed) after the last marker");
        return "read_committed skips aborted records and markers; read_uncommitted shows aborted records";
    }

    private void sendInTransaction(KafkaProducer<String, String> producer, List<String> values) throws Exception {
        producer.beginTransaction();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (String value : values) sent.add(producer.send(new ProducerRecord<>(transactional, 0, null, value)));
        for (Future<RecordMetadata> future : sent) await(future);
    }

    private static void expectRead(List<ConsumerRecord<String, String>> got, List<String> values, List<Long> offsets) {
        expectEqual(values, got.stream().map(ConsumerRecord::value).collect(Collectors.toList()), "values");
        expectEqual(offsets, got.stream().map(ConsumerRecord::offset).collect(Collectors.toList()), "offsets");
    }

    /** An open transaction holds the last stable offset back for read_committed readers. */
    private String openTransaction() throws Exception {
        List<TopicPartition> partition = partitions(transactional, 1);
        Map<TopicPartition, OffsetSpec> latest = every(partition, OffsetSpec.latest());
        try (KafkaProducer<String, String> producer = transactionalProducer()) {
            producer.beginTransaction();
            await(producer.send(new ProducerRecord<>(transactional, 0, null, "open")));
            long stable = listOffsets(latest, IsolationLevel.READ_COMMITTED).get(partition.get(0)).offset();
            long high = listOffsets(latest, IsolationLevel.READ_UNCOMMITTED).get(partition.get(0)).offset();
            expectEqual(9L, stable, "last stable offset while the transaction is open");
            expectEqual(10L, high, "high watermark while the transaction is open");
            producer.commitTransaction();
        }
        // As in Kafka, commitTransaction returns once PrepareCommit is durable; the markers follow.
        long stable = until(() -> listOffsets(latest, IsolationLevel.READ_COMMITTED).get(partition.get(0)).offset(),
                offset -> offset != 9L);
        expectEqual(11L, stable, "last stable offset after the commit");
        return "LSO 9 < HW 10 while open, 11 after commit";
    }

    // ---------------------------------------------------------------- transaction admin (issue 6)

    private static final int DESCRIBED_TIMEOUT_MS = 42_000;
    private static final int DESCRIBED_RECORDS = 3;

    private TopicPartition describedPartition() {
        return new TopicPartition(described, 0);
    }

    private String describedId() {
        return prefix + "-described-txn";
    }

    private TransactionDescription describeTransaction() throws Exception {
        return await(admin.describeTransactions(List.of(describedId())).description(describedId()));
    }

    private ProducerState describedProducerState(long producerId) throws Exception {
        List<ProducerState> active = await(admin.describeProducers(List.of(describedPartition()))
                .partitionResult(describedPartition())).activeProducers();
        return active.stream().filter(state -> state.producerId() == producerId).findFirst()
                .orElseThrow(() -> new AssertionError("producer " + producerId + " not in " + active));
    }

    /** A transaction left open over records 0-2 of the described topic, with a non-default timeout. */
    private String describeOngoing() throws Exception {
        long before = System.currentTimeMillis();
        describedProducer = producer("transactional.id", describedId(),
                "transaction.timeout.ms", String.valueOf(DESCRIBED_TIMEOUT_MS));
        describedProducer.initTransactions();
        expectEqual(TransactionState.EMPTY, describeTransaction().state(), "state after initTransactions");
        describedProducer.beginTransaction();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int n = 0; n < DESCRIBED_RECORDS; n++) {
            sent.add(describedProducer.send(new ProducerRecord<>(described, 0, baseTimestamp + n, null, "v" + n)));
        }
        for (Future<RecordMetadata> future : sent) await(future);
        TransactionDescription open = describeTransaction();
        Node node = await(admin.describeCluster().controller());
        expectEqual(TransactionState.ONGOING, open.state(), "state");
        expectEqual(Set.of(describedPartition()), open.topicPartitions(), "partitions");
        expectEqual((long) DESCRIBED_TIMEOUT_MS, open.transactionTimeoutMs(), "timeout");
        expectEqual(node.id(), open.coordinatorId(), "coordinator");
        long start = open.transactionStartTimeMs().orElseThrow(() -> new AssertionError("no start time"));
        expect(before <= start && start <= System.currentTimeMillis(), "start time " + start + " before " + before);
        expect(open.producerId() >= 0 && open.producerEpoch() >= 0, "producer " + open);
        describedOpen = open;
        try {
            await(admin.describeTransactions(List.of(prefix + "-never-used")).all());
            throw new AssertionError("an unknown transactional id was described");
        } catch (ExecutionException expected) {
            expect(expected.getCause() instanceof TransactionalIdNotFoundException, "unknown id: " + expected.getCause());
        }
        return "Empty after init; Ongoing over " + open.topicPartitions() + ", timeout "
                + open.transactionTimeoutMs() + " ms, producer " + open.producerId() + "/" + open.producerEpoch()
                + "; an unknown id is not found";
    }

    private String describeProducersOngoing() throws Exception {
        ProducerState state = describedProducerState(describedOpen.producerId());
        expectEqual((int) describedOpen.producerEpoch(), state.producerEpoch(), "epoch");
        expectEqual(DESCRIBED_RECORDS - 1, state.lastSequence(), "last sequence");
        expectEqual(baseTimestamp + DESCRIBED_RECORDS - 1, state.lastTimestamp(), "last timestamp");
        expectEqual(OptionalLong.of(0), state.currentTransactionStartOffset(), "transaction start offset");
        expectEqual(OptionalInt.empty(), state.coordinatorEpoch(), "coordinator epoch before any marker");
        return "producer " + state.producerId() + " epoch " + state.producerEpoch() + ", last sequence "
                + state.lastSequence() + ", transaction from offset 0";
    }

    private List<TransactionListing> listTransactions(ListTransactionsOptions options) throws Exception {
        return await(admin.listTransactions(options).all()).stream()
                .filter(listing -> listing.transactionalId().startsWith(prefix)).collect(Collectors.toList());
    }

    private String listTransactionsFiltered() throws Exception {
        long producerId = describedOpen.producerId();
        List<TransactionListing> ours = List.of(new TransactionListing(describedId(), producerId,
                TransactionState.ONGOING));
        expectEqual(ours, listTransactions(new ListTransactionsOptions().filterStates(
                List.of(TransactionState.ONGOING))), "filtered by Ongoing");
        expectEqual(ours, listTransactions(new ListTransactionsOptions().filterProducerIds(List.of(producerId))),
                "filtered by producer id");
        expectEqual(List.of(), listTransactions(new ListTransactionsOptions().filterProducerIds(List.of(producerId))
                .filterStates(List.of(TransactionState.COMPLETE_COMMIT, TransactionState.EMPTY))),
                "filtered by producer id and other states");
        expectEqual(List.of(), listTransactions(new ListTransactionsOptions().filterProducerIds(
                List.of(producerId + 1_000_000))), "filtered by another producer id");
        expectEqual(ours, listTransactions(new ListTransactionsOptions().filterProducerIds(List.of(producerId))
                .filterOnDuration(0)), "open for longer than 0 ms");
        expectEqual(List.of(), listTransactions(new ListTransactionsOptions().filterProducerIds(List.of(producerId))
                .filterOnDuration(3_600_000)), "open for longer than an hour");
        return "by state, by producer id, by both, by duration";
    }

    /** KIP-664: an admin ends a transaction on one partition with an ABORT marker (WriteTxnMarkers). */
    private String abortHanging() throws Exception {
        String topic = prefix + "-hanging";
        await(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        TopicPartition partition = new TopicPartition(topic, 0);
        Map<TopicPartition, OffsetSpec> latest = every(List.of(partition), OffsetSpec.latest());
        KafkaProducer<String, String> producer = producer("transactional.id", prefix + "-hanging-txn");
        try {
            producer.initTransactions();
            producer.beginTransaction();
            await(producer.send(new ProducerRecord<>(topic, 0, null, "hanging-0")));
            await(producer.send(new ProducerRecord<>(topic, 0, null, "hanging-1")));
            expectEqual(0L, listOffsets(latest, IsolationLevel.READ_COMMITTED).get(partition).offset(),
                    "last stable offset while the transaction hangs");
            ProducerState state = await(admin.describeProducers(List.of(partition)).partitionResult(partition))
                    .activeProducers().get(0);
            await(admin.abortTransaction(new AbortTransactionSpec(partition, state.producerId(),
                    (short) state.producerEpoch(), state.coordinatorEpoch().orElse(-1))).all());
            expectEqual(3L, listOffsets(latest, IsolationLevel.READ_COMMITTED).get(partition).offset(),
                    "last stable offset after the ABORT marker at offset 2");
            ProducerState after = await(admin.describeProducers(List.of(partition)).partitionResult(partition))
                    .activeProducers().get(0);
            expectEqual(OptionalLong.empty(), after.currentTransactionStartOffset(), "open transaction after abort");
            return "LSO 0 while hanging, 3 after abortTransaction of producer " + state.producerId();
        } finally {
            producer.close(Duration.ZERO);
        }
    }

    /** The gateway's one log directory holds every partition of the events topic, with its size. */
    private String describeLogDirs() throws Exception {
        int node = await(admin.describeCluster().nodes()).iterator().next().id();
        Map<String, LogDirDescription> dirs = await(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node);
        expectEqual(1, dirs.size(), "log directories");
        LogDirDescription dir = dirs.values().iterator().next();
        ReplicaInfo events0 = dir.replicaInfos().get(new TopicPartition(events, 0));
        expect(events0 != null && events0.size() > 0, "events-0 with a size: " + dir.replicaInfos());
        expect(dir.totalBytes().isPresent() && dir.usableBytes().isPresent(), "total and usable bytes");
        return dirs.keySet().iterator().next() + ": events-0 " + events0.size() + " bytes";
    }

    /** The gateway leads every partition already: an election is not needed; an unknown partition is named. */
    private String electLeaders() throws Exception {
        TopicPartition known = new TopicPartition(events, 0), unknown = new TopicPartition(events, 99);
        Map<TopicPartition, Optional<Throwable>> results = await(
                admin.electLeaders(ElectionType.PREFERRED, Set.of(known, unknown)).partitions());
        expect(results.get(known).orElse(null) instanceof ElectionNotNeededException, "known: " + results);
        expect(results.get(unknown).orElse(null) instanceof UnknownTopicOrPartitionException, "unknown: " + results);
        expectEqual(Map.of(), await(admin.electLeaders(ElectionType.PREFERRED, null).partitions()),
                "every partition: nothing to elect");
        return "ElectionNotNeeded for " + known + ", UnknownTopicOrPartition for " + unknown;
    }

    /** As a Kafka broker without an authorizer: every ACL call fails with SecurityDisabledException. */
    private String aclsWithoutAuthorizer() throws Exception {
        AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.TOPIC, events, PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        List<Future<?>> calls = List.of(admin.describeAcls(AclBindingFilter.ANY).values(),
                admin.createAcls(List.of(binding)).all(), admin.deleteAcls(List.of(AclBindingFilter.ANY)).all());
        for (Future<?> call : calls) {
            try {
                await(call);
                throw new AssertionError("an ACL call succeeded without an authorizer");
            } catch (ExecutionException expected) {
                expect(expected.getCause() instanceof SecurityDisabledException, "not SECURITY_DISABLED: "
                        + expected.getCause());
            }
        }
        return "describeAcls, createAcls, deleteAcls: SecurityDisabledException";
    }

    private String describeCommitted() throws Exception {
        describedProducer.commitTransaction();
        describedProducer.close();
        TransactionDescription committed = until(this::describeTransaction,
                description -> description.state() != TransactionState.PREPARE_COMMIT);
        expectEqual(TransactionState.COMPLETE_COMMIT, committed.state(), "state");
        expectEqual(Set.of(), committed.topicPartitions(), "partitions");
        expectEqual(describedOpen.producerId(), committed.producerId(), "producer id");
        expectEqual(describedOpen.producerEpoch(), committed.producerEpoch(), "producer epoch");
        ProducerState state = describedProducerState(committed.producerId());
        expectEqual(DESCRIBED_RECORDS - 1, state.lastSequence(), "last sequence");
        expectEqual(OptionalLong.empty(), state.currentTransactionStartOffset(), "transaction start offset");
        expectEqual(OptionalInt.of(0), state.coordinatorEpoch(), "coordinator epoch of the marker");
        expectEqual(List.of(new TransactionListing(describedId(), committed.producerId(),
                TransactionState.COMPLETE_COMMIT)), listTransactions(new ListTransactionsOptions()
                .filterStates(List.of(TransactionState.COMPLETE_COMMIT)).filterProducerIds(
                        List.of(committed.producerId()))), "listed as CompleteCommit");
        return "CompleteCommit with no partitions; the producer's transaction closed by the marker";
    }

    /** Every store holds every partition: the current replica list is accepted, no other, nothing is moving. */
    private String reassignments() throws Exception {
        int node = await(admin.describeCluster().controller()).id();
        TopicPartition here = new TopicPartition(events, 0), unknown = new TopicPartition(events, 99);
        expectEqual(Map.of(), await(admin.listPartitionReassignments().reassignments()), "in progress");
        Optional<NewPartitionReassignment> same = Optional.of(new NewPartitionReassignment(List.of(node)));
        Optional<NewPartitionReassignment> other = Optional.of(new NewPartitionReassignment(List.of(node, node + 1)));
        Throwable kept = failure(admin.alterPartitionReassignments(Map.of(here, same)).all());
        expect(kept == null, "same replicas: " + kept);
        Throwable moved = failure(admin.alterPartitionReassignments(Map.of(here, other)).all());
        Throwable cancelled = failure(admin.alterPartitionReassignments(Map.of(here, Optional.empty())).all());
        Throwable missing = failure(admin.alterPartitionReassignments(Map.of(unknown, same)).all());
        expect(moved instanceof InvalidReplicaAssignmentException, "other replicas: " + moved);
        expect(cancelled instanceof NoReassignmentInProgressException, "cancel: " + cancelled);
        expect(missing instanceof UnknownTopicOrPartitionException, "unknown: " + missing);
        return "same replicas accepted; " + moved.getMessage();
    }

    /** One log directory: moving there succeeds, anywhere else is LogDirNotFound. */
    private String alterReplicaLogDirs() throws Exception {
        int node = await(admin.describeCluster().nodes()).iterator().next().id();
        String dir = await(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node).keySet().iterator().next();
        TopicPartitionReplica replica = new TopicPartitionReplica(events, 0, node);
        Throwable moved = failure(admin.alterReplicaLogDirs(Map.of(replica, dir)).all());
        expect(moved == null, "same directory: " + moved);
        Throwable elsewhere = failure(admin.alterReplicaLogDirs(Map.of(replica, dir + "-elsewhere")).all());
        expect(elsewhere instanceof LogDirNotFoundException, "another directory: " + elsewhere);
        return "moved to " + dir + "; another path LogDirNotFound";
    }

    /** The controller is the quorum's one voter and its leader. */
    private String describeQuorum() throws Exception {
        int controller = await(admin.describeCluster().controller()).id();
        QuorumInfo quorum = await(admin.describeMetadataQuorum().quorumInfo());
        expectEqual(controller, quorum.leaderId(), "leader");
        expectEqual(List.of(controller), quorum.voters().stream().map(QuorumInfo.ReplicaState::replicaId)
                .collect(Collectors.toList()), "voters");
        expectEqual(List.of(), quorum.observers(), "observers");
        return "leader " + quorum.leaderId() + " at epoch " + quorum.leaderEpoch();
    }

    /** Once groups exist, __consumer_offsets is described and listed as Kafka's internal topic. */
    private String offsetsTopic() throws Exception {
        String name = "__consumer_offsets";
        TopicDescription offsets = await(admin.describeTopics(List.of(name)).allTopicNames()).get(name);
        expect(offsets.isInternal(), "not internal: " + offsets);
        expectEqual(50, offsets.partitions().size(), "partitions");
        expect(await(admin.listTopics(new ListTopicsOptions().listInternal(true)).names()).contains(name),
                "not listed with listInternal");
        return name + ": internal, " + offsets.partitions().size() + " partitions";
    }
}
