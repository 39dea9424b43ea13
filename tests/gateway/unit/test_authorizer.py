"""The authorizer's decisions and the ACL filters, as Kafka's StandardAuthorizer and filters decide."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.acls.authorizer import AclSet, Policy, Who, authorize, authorize_any
from gateway.acls.model import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    coded,
    invalid_binding,
)

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
ALICE = Who("User:alice", "10.0.0.1")
BOB = Who("User:bob", "10.0.0.2")
CLOSED = Policy()


def acl(name="orders", operation=Operation.READ, permission=ALLOW, principal="User:alice", host="*",
        pattern=LITERAL, kind=TOPIC) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, operation, permission)


def may(acls, who=ALICE, operation=Operation.READ, name="orders", kind=TOPIC, policy=CLOSED) -> bool:
    return authorize(AclSet(acls), policy, who, operation, kind, name)


def test_no_acl_denies_unless_everyone_is_allowed_then():
    assert not may([])
    assert may([], policy=Policy(allow_if_no_acl=True))
    # an ACL of another principal on the resource closes it to the rest, as in Kafka
    assert not may([acl(principal="User:bob")], policy=Policy(allow_if_no_acl=True))
    assert may([acl(name="other")], policy=Policy(allow_if_no_acl=True))


def test_super_users_may_do_anything_despite_deny():
    assert may([acl(permission=DENY)], policy=Policy(super_users=frozenset({"User:alice"})))
    assert not may([acl(permission=DENY)], who=BOB, policy=Policy(super_users=frozenset({"User:alice"})))


def test_literal_wildcard_and_prefixed_patterns():
    assert may([acl()])
    assert not may([acl()], name="orders2")
    assert may([acl(name="*")], name="anything")
    assert may([acl(name="ord", pattern=PREFIXED)], name="orders")
    assert not may([acl(name="ord", pattern=PREFIXED)], name="invoices")
    assert not may([acl(name="ord")], name="orders")  # a literal name is not a prefix


def test_principal_and_host_matching():
    assert may([acl(principal="User:*")], who=BOB)
    assert not may([acl()], who=BOB)
    assert may([acl(host="10.0.0.1")])
    assert not may([acl(host="10.0.0.9")])


def test_implications_of_allow():
    for granting in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER, Operation.ALL):
        assert may([acl(operation=granting)], operation=Operation.DESCRIBE)
    assert may([acl(operation=Operation.ALTER_CONFIGS)], operation=Operation.DESCRIBE_CONFIGS)
    assert not may([acl(operation=Operation.DESCRIBE)], operation=Operation.READ)
    assert not may([acl(operation=Operation.CREATE)], operation=Operation.DESCRIBE)
    assert not may([acl(operation=Operation.DESCRIBE_CONFIGS)], operation=Operation.ALTER_CONFIGS)


def test_deny_wins_but_is_not_implied():
    assert not may([acl(), acl(permission=DENY, name="ord", pattern=PREFIXED)])
    assert not may([acl(operation=Operation.ALL), acl(permission=DENY, principal="User:*")])
    assert not may([acl(), acl(permission=DENY, operation=Operation.ALL)])
    # a DENY of READ does not deny the DESCRIBE a WRITE allows
    assert may([acl(operation=Operation.WRITE), acl(permission=DENY)], operation=Operation.DESCRIBE)


def test_resource_types_are_apart():
    assert not may([acl(kind=GROUP)])
    assert may([acl(kind=GROUP)], kind=GROUP)


def test_authorize_any_as_kip_679():
    def any_write(acls, who=ALICE, policy=CLOSED):
        return authorize_any(AclSet(acls), policy, who, Operation.WRITE, TOPIC)

    assert not any_write([])
    assert any_write([], policy=Policy(allow_if_no_acl=True))
    assert any_write([acl(operation=Operation.WRITE)])
    assert not any_write([acl(operation=Operation.WRITE)], who=BOB)
    assert not any_write([acl(operation=Operation.WRITE), acl(operation=Operation.WRITE, permission=DENY)])
    assert any_write([acl(operation=Operation.WRITE, name="ord", pattern=PREFIXED),
                      acl(operation=Operation.WRITE, permission=DENY)])
    assert not any_write([acl(operation=Operation.WRITE, name="orders-eu", pattern=PREFIXED),
                          acl(operation=Operation.WRITE, permission=DENY, name="orders", pattern=PREFIXED)])
    assert not any_write([acl(operation=Operation.WRITE, name="*"),
                          acl(operation=Operation.ALL, permission=DENY, name="*")])


names = st.text(alphabet="ab*", min_size=1, max_size=3)
bindings = st.builds(
    AclBinding, st.sampled_from([TOPIC, GROUP]), names, st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]), st.sampled_from(["*", "10.0.0.1"]),
    st.sampled_from([Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALL]),
    st.sampled_from([ALLOW, DENY]))


def _applies(b: AclBinding, who: Who, kind: ResourceType, name: str) -> bool:
    covers = (b.name in (name, "*") if b.pattern_type == LITERAL else name.startswith(b.name))
    return b.resource_type == kind and covers and b.principal in (who.principal, "User:*") and b.host in (who.host, "*")


@given(st.lists(bindings, max_size=8), names, st.sampled_from([Operation.READ, Operation.DESCRIBE]),
       st.booleans())
def test_decision_is_kafkas_rule(acls, name, operation, open_by_default):
    """Allowed exactly when no applying DENY names the operation (or ALL) and an applying ALLOW grants it,
    or, with no ACL on the resource at all, as the policy says."""
    policy = Policy(allow_if_no_acl=open_by_default)
    on_resource = [b for b in acls if b.resource_type == TOPIC
                   and (b.name in (name, "*") if b.pattern_type == LITERAL else name.startswith(b.name))]
    applying = [b for b in acls if _applies(b, ALICE, TOPIC, name)]
    granting = {operation, Operation.ALL} | ({Operation.READ, Operation.WRITE} if operation == Operation.DESCRIBE
                                             else set())
    expected = (open_by_default if not on_resource else
                not any(b.permission == DENY and b.operation in (operation, Operation.ALL) for b in applying)
                and any(b.permission == ALLOW and b.operation in granting for b in applying))
    assert may(acls, operation=operation, name=name, policy=policy) == expected


@given(st.lists(bindings, max_size=8), names)
def test_a_match_filter_selects_the_acls_that_apply(acls, name):
    selected = AclFilter(TOPIC, name, PatternType.MATCH, None, None, Operation.ANY, Permission.ANY)
    assert {b for b in acls if selected.matches(b)} == set(AclSet(acls).applying_to(TOPIC, name))


def test_filters():
    bound = acl(name="ord", pattern=PREFIXED)
    everything = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY)
    assert everything.matches(bound)
    assert AclFilter(TOPIC, "ord", PatternType.ANY, None, None, Operation.ANY, Permission.ANY).matches(bound)
    assert not AclFilter(TOPIC, "ord", LITERAL, None, None, Operation.ANY, Permission.ANY).matches(bound)
    assert AclFilter(TOPIC, "orders", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY).matches(bound)
    assert not AclFilter(TOPIC, "orders", PREFIXED, None, None, Operation.ANY, Permission.ANY).matches(bound)
    assert not AclFilter(GROUP, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY).matches(bound)
    assert not AclFilter(TOPIC, None, PatternType.ANY, "User:bob", None, Operation.ANY, Permission.ANY).matches(bound)
    assert not AclFilter(TOPIC, None, PatternType.ANY, None, None, Operation.WRITE, Permission.ANY).matches(bound)
    assert AclFilter(TOPIC, None, PatternType.ANY, None, "*", Operation.READ, ALLOW).matches(bound)
    assert AclFilter(TOPIC, None, PatternType.UNKNOWN, None, None, Operation.ANY, Permission.ANY).has_unknown()


def test_invalid_bindings_have_kafkas_messages():
    assert invalid_binding(acl()) is None
    assert invalid_binding(acl(kind=CLUSTER, name="x")) == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert invalid_binding(acl(name="")) == "Invalid empty resource name specified"
    assert invalid_binding(acl(principal="alice")) == (
        "expected a string in format principalType:principalName but got alice")
    assert invalid_binding(acl(kind=ResourceType.ANY)) == "Invalid resourceType ANY"
    assert invalid_binding(acl(pattern=PatternType.MATCH)) == "Invalid patternType MATCH"
    assert invalid_binding(acl(operation=Operation.ANY)) == "Invalid operation ANY"
    assert invalid_binding(acl(permission=Permission.ANY)) == "Invalid permissionType ANY"
    assert coded(Operation, 99) == Operation.UNKNOWN


def test_acl_set_round_trips_bindings():
    acls = [acl(), acl(name="o", pattern=PREFIXED), acl(kind=GROUP)]
    held = AclSet(acls)
    assert sorted(held) == sorted(acls) and acls[1] in held
    held.discard(acls[1])
    assert acls[1] not in held and AclBinding.from_list(acls[0].as_list()) == acls[0]
