"""One request's ACL changes become visible together, as Kafka applies them as one batch of records:
no decision made while they are journaled sees some of them and not the others.

The request below denies ANONYMOUS to write the topic and allows everyone to describe it. The DENY
alone would hide the topic too (an ACL on a resource closes it to what no ACL allows), and Metadata
would answer TOPIC_AUTHORIZATION_FAILED where Kafka's brokers never do. A creation may name the DENY
first; a deletion goes in the bindings' order, which puts the ALLOW of `User:*` first."""

from __future__ import annotations

import trio

from gateway.acls.acl_store import Acls
from gateway.acls.authorizer import Who
from gateway.acls.model import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from gateway.settings.table import BrokerSettings

TOPIC = "orders"
ANONYMOUS = Who("User:ANONYMOUS", "127.0.0.1")
EVERY_TOPIC_ACL = AclFilter(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, None, None, Operation.ANY,
                            Permission.ANY)


def acl(principal: str, operation: Operation, permission: Permission) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, principal, "*", operation, permission)


DENIED = [acl("User:ANONYMOUS", Operation.WRITE, Permission.DENY), acl("User:*", Operation.DESCRIBE, Permission.ALLOW)]


class SlowJournal:
    """Each write takes a while, as one to the stores does; requests are answered meanwhile."""

    def __init__(self):
        self.entries: list[dict] = []

    async def write(self, entry: dict) -> None:
        await trio.sleep(0.01)
        self.entries.append(entry)


def open_authorizer() -> Acls:
    settings = BrokerSettings(authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                              allow_everyone_if_no_acl_found=True)
    return Acls(SlowJournal(), settings)


def decision(acls: Acls) -> tuple[bool, bool]:
    """Whether ANONYMOUS may describe the topic, and write it."""
    return (acls.authorize(ANONYMOUS, Operation.DESCRIBE, ResourceType.TOPIC, TOPIC),
            acls.authorize(ANONYMOUS, Operation.WRITE, ResourceType.TOPIC, TOPIC))


async def decisions_while(acls: Acls, change) -> set[tuple[bool, bool]]:
    """Every decision met while `change()` ran, and once it ended."""
    seen: set[tuple[bool, bool]] = set()
    done = trio.Event()

    async def observe():
        while not done.is_set():
            seen.add(decision(acls))
            await trio.sleep(0.001)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(observe)
        await change()
        done.set()
    return seen | {decision(acls)}


async def test_the_acls_a_request_creates_apply_at_once(autojump_clock):
    acls = open_authorizer()
    seen = await decisions_while(acls, lambda: acls.create(DENIED))
    assert seen == {(True, True), (True, False)}
    assert len(acls.journal.entries) == 2


async def test_the_acls_a_request_deletes_go_at_once(autojump_clock):
    acls = open_authorizer()
    await acls.create(DENIED)
    seen = await decisions_while(acls, lambda: acls.delete([EVERY_TOPIC_ACL]))
    assert seen == {(True, False), (True, True)}
    assert acls.describe(EVERY_TOPIC_ACL) == []
    assert len(acls.journal.entries) == 4
