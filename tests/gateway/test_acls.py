"""ACLs with an authorizer on, against the real gateway, with every Python client.

The clients connect as User:ANONYMOUS (plaintext). On the gateway opened with
allow.everyone.if.no.acl.found=true, DENY ACLs for User:ANONYMOUS close one
topic, group or transactional id at a time; on a closed one (no ACL: no
access), super.users lets the set-up create ACLs, and after a restart without
it only the ACLs kept in the journal grant anything.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka import errors as kafka_errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest
from kafka.structs import OffsetAndMetadata

from tests.gateway.admin import create_topic
from tests.gateway.server import GatewayProcess

TIMEOUT_S = 30.0
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
COMPACTING = ("--journal-compaction-entries", "2")  # the ACL journal compacts while ACLs are set up


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory):
    """An authorizer that lets everyone do what no ACL speaks of."""
    server = GatewayProcess(tmp_path_factory.mktemp("acls"), "--authorizer-class-name", STANDARD,
                            "--allow-everyone-if-no-acl-found", "true").start()
    yield server
    server.stop()


def admin(server) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


def create_acls(server, *bindings: AclBinding) -> None:
    client = admin(server)  # held until the answers come: a client dropped cancels them
    for future in client.create_acls(list(bindings), request_timeout=TIMEOUT_S).values():
        future.result(TIMEOUT_S)


def deny(server, kind: ResourceType, name: str, operation: AclOperation, *, describable: bool = True) -> None:
    """DENY `operation` to ANONYMOUS; and, unless told, ALLOW DESCRIBE to everyone, as an ACL on the resource
    closes it to all it does not allow (allow.everyone.if.no.acl.found no longer applies), so that the
    refusal comes from the API that does the operation, not from Metadata or FindCoordinator."""
    acls = [AclBinding(kind, name, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation, AclPermissionType.DENY)]
    if describable:
        acls.append(AclBinding(kind, name, ResourcePatternType.LITERAL, "User:*", "*", AclOperation.DESCRIBE,
                               AclPermissionType.ALLOW))
    create_acls(server, *acls)


def error_code(future) -> int:
    with pytest.raises(KafkaException) as failed:
        future.result(TIMEOUT_S)
    return failed.value.args[0].code()


def test_acl_apis_with_confluent_kafka(open_gateway):
    prefix = unique("cf")
    literal = AclBinding(ResourceType.TOPIC, f"{prefix}-orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:bob", "10.0.0.1",
                          AclOperation.WRITE, AclPermissionType.DENY)
    group = AclBinding(ResourceType.GROUP, f"{prefix}-g", ResourcePatternType.LITERAL, "User:alice", "*",
                       AclOperation.ALL, AclPermissionType.ALLOW)
    create_acls(open_gateway, literal, prefixed, group)
    create_acls(open_gateway, literal)  # again: no error, as in Kafka
    client = admin(open_gateway)

    def described(selected: AclBindingFilter) -> set:
        return set(client.describe_acls(selected, request_timeout=TIMEOUT_S).result(TIMEOUT_S))

    mine = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)
    assert {literal, prefixed, group} <= described(mine)
    match = AclBindingFilter(ResourceType.TOPIC, f"{prefix}-orders", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert described(match) == {literal, prefixed}
    alice = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None, AclOperation.ANY,
                             AclPermissionType.ANY)
    assert {literal, group} <= described(alice) and prefixed not in described(alice)

    deleted = client.delete_acls([AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.PREFIXED, None,
                                                   "10.0.0.1", AclOperation.ANY, AclPermissionType.ANY)],
                                 request_timeout=TIMEOUT_S)
    assert [set(f.result(TIMEOUT_S)) for f in deleted.values()] == [{prefixed}]
    assert described(match) == {literal}

    bad_cluster = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.ALTER, AclPermissionType.ALLOW)
    [future] = client.create_acls([bad_cluster], request_timeout=TIMEOUT_S).values()
    with pytest.raises(KafkaException) as refused:
        future.result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in refused.value.args[0].str()


def test_acl_apis_with_kafka_python(open_gateway):
    prefix = unique("kp")
    client = KafkaAdminClient(bootstrap_servers=open_gateway.bootstrap)
    try:
        wanted = ACL("User:carol", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                     ResourcePattern(KpResourceType.TRANSACTIONAL_ID, prefix, ACLResourcePatternType.PREFIXED))
        created = client.create_acls([wanted])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        selected = ACLFilter("User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY,
                             ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))
        found, error = client.describe_acls(selected)
        assert error is kafka_errors.NoError
        assert [(a.principal, a.operation, a.resource_pattern.resource_type, a.resource_pattern.resource_name,
                 a.resource_pattern.pattern_type) for a in found] == [
            ("User:carol", ACLOperation.DESCRIBE, KpResourceType.TRANSACTIONAL_ID, prefix,
             ACLResourcePatternType.PREFIXED)]
        [(_, matched, error)] = client.delete_acls([selected])
        assert error is kafka_errors.NoError and [m.principal for m in matched] == ["User:carol"]
        assert client.describe_acls(selected)[0] == []
    finally:
        client.close()


def test_produce_refused_to_every_client_without_write(open_gateway):
    topic = unique("no-write")
    create_topic(open_gateway.bootstrap, topic)
    deny(open_gateway, ResourceType.TOPIC, topic, AclOperation.WRITE)

    reports = []
    producer = Producer({"bootstrap.servers": open_gateway.bootstrap, "message.timeout.ms": 20000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(TIMEOUT_S)
    assert [r.code() for r in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]

    kp = KafkaProducer(bootstrap_servers=open_gateway.bootstrap, retries=0)
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            kp.send(topic, b"x").get(TIMEOUT_S)
    finally:
        kp.close()

    async def aiokafka_send():
        aio = AIOKafkaProducer(bootstrap_servers=open_gateway.bootstrap)
        await aio.start()
        try:
            await aio.send_and_wait(topic, b"x")
        finally:
            await aio.stop()

    with pytest.raises(AioTopicAuthorizationFailed):
        asyncio.run(aiokafka_send())


def test_fetch_refused_without_read(open_gateway):
    topic = unique("no-read")
    create_topic(open_gateway.bootstrap, topic)
    producer = Producer({"bootstrap.servers": open_gateway.bootstrap})
    producer.produce(topic, b"written before the deny")
    assert producer.flush(TIMEOUT_S) == 0
    deny(open_gateway, ResourceType.TOPIC, topic, AclOperation.READ)

    consumer = Consumer({"bootstrap.servers": open_gateway.bootstrap, "group.id": unique("g"),
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        message = consumer.poll(TIMEOUT_S)
        assert message is not None and message.error() is not None
        assert message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()

    kp = KafkaConsumer(bootstrap_servers=open_gateway.bootstrap, enable_auto_commit=False)
    try:
        kp.assign([KpTopicPartition(topic, 0)])
        kp.seek_to_beginning()
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            poll_until_error(kp)
    finally:
        kp.close()


def poll_until_error(consumer: KafkaConsumer) -> None:
    """Poll until the consumer raises (the test's pytest.raises catches it) or gets records."""
    for _ in range(60):
        records = consumer.poll(timeout_ms=500)
        assert not records, "records fetched despite the DENY"


def test_metadata_leaves_out_topics_the_principal_may_not_describe(open_gateway):
    hidden, shown = unique("hidden"), unique("shown")
    for name in (hidden, shown):
        create_topic(open_gateway.bootstrap, name)
    deny(open_gateway, ResourceType.TOPIC, hidden, AclOperation.DESCRIBE, describable=False)
    client = admin(open_gateway)
    listed = client.list_topics(timeout=TIMEOUT_S).topics
    assert shown in listed and hidden not in listed
    named = client.list_topics(topic=hidden, timeout=TIMEOUT_S).topics[hidden]
    assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_authorized_operations_of_a_topic(open_gateway):
    topic = unique("ops")
    create_topic(open_gateway.bootstrap, topic)
    deny(open_gateway, ResourceType.TOPIC, topic, AclOperation.WRITE)  # and ALLOW DESCRIBE to everyone
    client = admin(open_gateway)
    described = client.describe_topics(TopicCollection([topic]), include_authorized_operations=True,
                                       request_timeout=TIMEOUT_S)[topic].result(TIMEOUT_S)
    assert set(described.authorized_operations) == {AclOperation.DESCRIBE}


def test_authorized_operations_of_the_cluster(tmp_path):
    """Through Metadata v8-10 as librdkafka asks: once an ACL speaks of the cluster, only what it allows,
    and ALTER brings DESCRIBE with it."""
    server = GatewayProcess(tmp_path, "--authorizer-class-name", STANDARD,
                            "--allow-everyone-if-no-acl-found", "true").start()
    try:
        create_acls(server, AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANONYMOUS,
                                       "*", AclOperation.ALTER, AclPermissionType.ALLOW))
        client = admin(server)  # held until the answer comes
        cluster = client.describe_cluster(include_authorized_operations=True,
                                          request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        assert set(cluster.authorized_operations) == {AclOperation.ALTER, AclOperation.DESCRIBE}
    finally:
        server.stop()


def test_group_refused_without_read(open_gateway):
    topic, group = unique("grouped"), unique("closed-group")
    create_topic(open_gateway.bootstrap, topic)
    deny(open_gateway, ResourceType.GROUP, group, AclOperation.READ)
    consumer = Consumer({"bootstrap.servers": open_gateway.bootstrap, "group.id": group})
    try:
        consumer.subscribe([topic])
        message = consumer.poll(TIMEOUT_S)
        assert message is not None and message.error() is not None
        assert message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    kp = KafkaConsumer(topic, bootstrap_servers=open_gateway.bootstrap, group_id=group)
    try:
        with pytest.raises(kafka_errors.GroupAuthorizationFailedError):
            poll_until_error(kp)
    finally:
        kp.close()


def test_offset_commit_refused_without_read_on_the_group_or_the_topic(open_gateway):
    topic, closed_topic, group = unique("committed"), unique("closed"), unique("no-commit")
    for name in (topic, closed_topic):
        create_topic(open_gateway.bootstrap, name)
    deny(open_gateway, ResourceType.GROUP, group, AclOperation.READ)
    deny(open_gateway, ResourceType.TOPIC, closed_topic, AclOperation.READ)
    with pytest.raises(kafka_errors.GroupAuthorizationFailedError):
        commit_offset(open_gateway, group, topic)
    with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
        commit_offset(open_gateway, unique("open-group"), closed_topic)


def test_transactions_refused_without_write_on_the_transactional_id(open_gateway):
    transactional_id = unique("txn")
    deny(open_gateway, ResourceType.TRANSACTIONAL_ID, transactional_id, AclOperation.WRITE)
    producer = Producer({"bootstrap.servers": open_gateway.bootstrap, "transactional.id": transactional_id})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@pytest.fixture
def gateway_factory(tmp_path):
    """A gateway of the test's own, started with the options given."""
    def start(*options: str) -> GatewayProcess:
        return GatewayProcess(tmp_path / "gateway", *options).start()
    return start


@pytest.fixture
def closed_gateway(gateway_factory):
    """An authorizer that allows nothing but what ACLs grant; ANONYMOUS a super user to set them up."""
    return gateway_factory("--authorizer-class-name", "kafka.security.authorizer.AclAuthorizer",
                           "--super-users", f"User:admin;{ANONYMOUS}", *COMPACTING)


def revoked_fields(binding: AclBinding) -> tuple:
    return (binding.restype, binding.name, binding.resource_pattern_type, binding.principal, binding.host,
            binding.operation, binding.permission_type)


def test_acls_survive_a_restart_and_alone_grant_access(closed_gateway):
    granted, other, prefix = unique("granted"), unique("other"), unique("auto")
    for name in (granted, other):
        create_topic(closed_gateway.bootstrap, name)
    create_acls(closed_gateway, *(
        AclBinding(ResourceType.TOPIC, granted, ResourcePatternType.LITERAL, "User:*", "*", operation,
                   AclPermissionType.ALLOW) for operation in (AclOperation.READ, AclOperation.WRITE)),
        AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, ANONYMOUS, "*", AclOperation.DESCRIBE,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, f"{prefix}-creatable", ResourcePatternType.LITERAL, ANONYMOUS, "*",
                   AclOperation.CREATE, AclPermissionType.ALLOW))
    revoked = AclBinding(ResourceType.TOPIC, other, ResourcePatternType.LITERAL, "User:*", "*", AclOperation.WRITE,
                         AclPermissionType.ALLOW)
    create_acls(closed_gateway, revoked)
    client = admin(closed_gateway)
    deleted = client.delete_acls([AclBindingFilter(*revoked_fields(revoked))], request_timeout=TIMEOUT_S)
    assert [f.result(TIMEOUT_S) for f in deleted.values()] == [[revoked]]
    closed_gateway.stop()
    closed_gateway.options = ("--authorizer-class-name", STANDARD, *COMPACTING)  # no super user any more
    restarted = closed_gateway.start()
    client = admin(restarted)
    listed = client.list_topics(timeout=TIMEOUT_S).topics
    assert granted in listed and other not in listed  # WRITE and READ imply DESCRIBE

    reports = []
    producer = Producer({"bootstrap.servers": restarted.bootstrap, "message.timeout.ms": 20000})
    for name in (granted, other):
        producer.produce(name, b"x", on_delivery=lambda err, msg: reports.append((msg.topic(), err)))
    producer.flush(TIMEOUT_S)
    assert {name: err.code() if err else None for name, err in reports} == {
        granted: None, other: KafkaError.TOPIC_AUTHORIZATION_FAILED}
    # an idempotent producer's InitProducerId: WRITE on some topic is enough (KIP-679)
    idempotent = Producer({"bootstrap.servers": restarted.bootstrap, "enable.idempotence": True})
    idempotent.produce(granted, b"y", on_delivery=lambda err, msg: reports.append((msg.topic(), err)))
    assert idempotent.flush(TIMEOUT_S) == 0 and reports[-1] == (granted, None)

    # auto-creation needs CREATE (here on the topic, as none has it on the cluster)
    refused = client.list_topics(topic=f"{prefix}-refused", timeout=TIMEOUT_S).topics[f"{prefix}-refused"]
    assert refused.error is not None and refused.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    creatable = client.list_topics(topic=f"{prefix}-creatable", timeout=TIMEOUT_S).topics[f"{prefix}-creatable"]
    assert creatable.error is None and len(creatable.partitions) == 1
    assert set(client.list_topics(timeout=TIMEOUT_S).topics) == {granted, f"{prefix}-creatable"}

    # the cluster's APIs: describing and changing ACLs, creating topics
    created = client.create_topics([NewTopic(unique("new"), 1, 1)], operation_timeout=TIMEOUT_S)
    assert [error_code(f) for f in created.values()] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    changed = client.create_acls([AclBinding(ResourceType.TOPIC, other, ResourcePatternType.LITERAL, ANONYMOUS, "*",
                                             AclOperation.READ, AclPermissionType.ALLOW)], request_timeout=TIMEOUT_S)
    assert [error_code(f) for f in changed.values()] == [KafkaError.CLUSTER_AUTHORIZATION_FAILED]
    kp = KafkaAdminClient(bootstrap_servers=restarted.bootstrap)
    try:
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                       ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        kp.close()
    restarted.stop()


def commit_offset(server, group: str, topic: str) -> None:
    """A group with a committed offset (kafka-python commits for an assigned partition without joining)."""
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([KpTopicPartition(topic, 0)])
        consumer.commit({KpTopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)})
    finally:
        consumer.close()


def test_cluster_and_group_admin_refused(gateway_factory):
    """With ALLOW ALL on the cluster for everyone but DESCRIBE and DESCRIBE_CONFIGS denied to ANONYMOUS:
    the cluster's describing APIs fail, ListGroups lists only what may be described, and groups refuse
    what their ACLs deny."""
    server = gateway_factory("--authorizer-class-name", STANDARD, "--allow-everyone-if-no-acl-found", "true")
    topic, visible, hidden = unique("t"), unique("visible"), unique("hidden")
    create_topic(server.bootstrap, topic)
    for group in (visible, hidden):
        commit_offset(server, group, topic)
    cluster = [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:*", "*",
                          AclOperation.ALL, AclPermissionType.ALLOW)]
    cluster += [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, ANONYMOUS, "*",
                           operation, AclPermissionType.DENY)
                for operation in (AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)]
    create_acls(server, *cluster)
    deny(server, ResourceType.GROUP, hidden, AclOperation.DESCRIBE, describable=False)
    deny(server, ResourceType.GROUP, visible, AclOperation.DELETE)

    client = admin(server)
    listed = {g.group_id for g in client.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S).valid}
    assert visible in listed and hidden not in listed
    [described] = client.describe_consumer_groups([hidden], request_timeout=TIMEOUT_S).values()
    assert error_code(described) == KafkaError.GROUP_AUTHORIZATION_FAILED
    [offsets] = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(hidden)],
                                                   request_timeout=TIMEOUT_S).values()
    assert error_code(offsets) == KafkaError.GROUP_AUTHORIZATION_FAILED
    [deleted] = client.delete_consumer_groups([visible], request_timeout=TIMEOUT_S).values()
    assert error_code(deleted) == KafkaError.GROUP_AUTHORIZATION_FAILED

    configs = client.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0"),
                                       ConfigResource(ConfigResource.Type.TOPIC, topic)],
                                      request_timeout=TIMEOUT_S)
    broker, topic_configs = configs.values()
    assert error_code(broker) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert "retention.ms" in topic_configs.result(TIMEOUT_S)

    kp = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                       ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
        quotas = kp._manager.run(kp._manager.send, DescribeClientQuotasRequest(components=[], strict=False))
        assert quotas.error_code == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    finally:
        kp.close()


def test_group_configs_need_describe_and_alter_configs_on_the_group(open_gateway):
    """Kafka asks DESCRIBE_CONFIGS / ALTER_CONFIGS on the group resource itself; an ACL on the group
    (here a DENY of ALTER_CONFIGS) closes both to everyone it does not allow."""
    group, other = unique("configured"), unique("open")
    deny(open_gateway, ResourceType.GROUP, group, AclOperation.ALTER_CONFIGS)
    client = admin(open_gateway)
    session = [ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET)]
    refused = ConfigResource(ResourceType.GROUP, group, incremental_configs=session)
    assert error_code(client.incremental_alter_configs([refused])[refused]) == KafkaError.GROUP_AUTHORIZATION_FAILED
    hidden = ConfigResource(ResourceType.GROUP, group)
    assert error_code(client.describe_configs([hidden])[hidden]) == KafkaError.GROUP_AUTHORIZATION_FAILED
    allowed = ConfigResource(ResourceType.GROUP, other, incremental_configs=session)
    client.incremental_alter_configs([allowed])[allowed].result(TIMEOUT_S)
