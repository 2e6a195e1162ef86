"""The authorizer's decisions: Kafka's StandardAuthorizer semantics over a set of bindings."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.broker.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    principal_of,
)
from kafka_wire.broker.security.authorizer import Authorizer

Op = AclOperation
Rt = ResourceType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


class Source:
    def __init__(self, *bindings: AclBinding) -> None:
        self.acls = {uuid.UUID(int=i + 1): b for i, b in enumerate(bindings)}
        self.version = 0

    def add(self, b: AclBinding) -> None:
        self.acls[uuid.UUID(int=len(self.acls) + 1)] = b
        self.version += 1


def topic(
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    principal: str = "User:alice",
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(Rt.TOPIC, name, pattern, principal, host, op, perm)


def authorizer(
    *bindings: AclBinding, supers: tuple[str, ...] = ("User:admin",), everyone: bool = False
) -> Authorizer:
    source = Source(*bindings)
    return Authorizer(lambda: source, super_users=supers, allow_everyone_if_no_acl_found=everyone)


def can(
    a: Authorizer, op: AclOperation, name: str, principal: str = "User:alice", host: str = "10.0.0.1"
) -> bool:
    return a.authorize(principal, host, op, Rt.TOPIC, name)


def test_super_users_may_do_everything_and_others_nothing_without_acls() -> None:
    a = authorizer()
    assert can(a, Op.WRITE, "t", "User:admin")
    assert not can(a, Op.WRITE, "t")
    assert can(authorizer(everyone=True), Op.WRITE, "t")


def test_allow_everyone_only_applies_where_no_acl_exists_for_anyone() -> None:
    a = authorizer(topic("t", Op.READ, principal="User:bob"), everyone=True)
    assert not can(a, Op.READ, "t")  # an ACL exists on t: alice has none
    assert can(a, Op.READ, "other")


def test_deny_wins_over_allow() -> None:
    a = authorizer(topic("t", Op.ALL), topic("t", Op.WRITE, DENY))
    assert can(a, Op.READ, "t") and not can(a, Op.WRITE, "t")
    b = authorizer(topic("t", Op.READ), topic("*", Op.ALL, DENY, principal="User:*"))
    assert not can(b, Op.READ, "t")


def test_literal_prefixed_and_wildcard_resources() -> None:
    a = authorizer(
        topic("orders", Op.READ),
        topic("pay-", Op.WRITE, pattern=PatternType.PREFIXED),
        topic("*", Op.DESCRIBE, principal="User:bob"),
    )
    assert can(a, Op.READ, "orders") and not can(a, Op.READ, "orders2")
    assert can(a, Op.WRITE, "pay-eu") and not can(a, Op.WRITE, "pa")
    assert can(a, Op.DESCRIBE, "anything", "User:bob")
    # a literal "*" written as a prefix is only the prefix "*"
    c = authorizer(topic("*", Op.READ, pattern=PatternType.PREFIXED))
    assert not can(c, Op.READ, "t") and can(c, Op.READ, "*t")


def test_implied_operations() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert can(authorizer(topic("t", op)), Op.DESCRIBE, "t"), op
    assert not can(authorizer(topic("t", Op.CREATE)), Op.DESCRIBE, "t")
    assert can(authorizer(topic("t", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS, "t")
    assert not can(authorizer(topic("t", Op.DESCRIBE)), Op.READ, "t")
    # a DENY of READ does not deny DESCRIBE (implication is for ALLOW only)
    assert can(authorizer(topic("t", Op.DESCRIBE), topic("t", Op.READ, DENY)), Op.DESCRIBE, "t")


def test_principals_and_hosts() -> None:
    a = authorizer(topic("t", Op.READ, principal="User:*"), topic("t", Op.WRITE, host="10.0.0.2"))
    assert can(a, Op.READ, "t", "User:anyone")
    assert not can(a, Op.WRITE, "t") and can(a, Op.WRITE, "t", host="10.0.0.2")
    assert principal_of("") == "User:ANONYMOUS" and principal_of("alice") == "User:alice"


def test_new_acls_are_seen_at_once() -> None:
    source = Source()
    a = Authorizer(lambda: source)
    assert not can(a, Op.READ, "t")
    source.add(topic("t", Op.READ))
    assert can(a, Op.READ, "t")


def test_authorize_any_and_authorized_operations() -> None:
    a = authorizer(topic("pay-", Op.WRITE, pattern=PatternType.PREFIXED))
    assert a.authorize_any("User:alice", "h", Op.WRITE, Rt.TOPIC)
    assert not a.authorize_any("User:alice", "h", Op.READ, Rt.TOPIC)
    bits = a.authorized_operations("User:alice", "h", Rt.TOPIC, "pay-1")
    assert bits == (1 << Op.WRITE) | (1 << Op.DESCRIBE)


NAMES = st.sampled_from(["a", "ab", "abc", "b", "*"])
BINDINGS = st.builds(
    AclBinding,
    st.sampled_from([Rt.TOPIC, Rt.GROUP]),
    NAMES,
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "h1", "h2"]),
    st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER]),
    st.sampled_from([ALLOW, DENY]),
)


def _applies(b: AclBinding, rtype: ResourceType, name: str) -> bool:
    if b.resource_type != rtype:
        return False
    if b.pattern_type == PatternType.LITERAL:
        return b.resource_name in (name, "*")
    return name.startswith(b.resource_name)


def _oracle(
    bindings: list[AclBinding], principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str
) -> bool:
    """The decision written out plainly from Kafka's documented rules."""
    applying = [b for b in bindings if _applies(b, rtype, name)]
    if not applying:
        return False
    mine = [b for b in applying if b.principal in (principal, "User:*") and b.host in (host, "*")]
    if any(b.permission_type == DENY and b.operation in (Op.ALL, op) for b in mine):
        return False
    implied = {op} | ({Op.READ, Op.WRITE, Op.DELETE, Op.ALTER} if op == Op.DESCRIBE else set())
    return any(b.permission_type == ALLOW and (b.operation == Op.ALL or b.operation in implied) for b in mine)


@given(
    st.lists(BINDINGS, max_size=8),
    st.sampled_from(["User:alice", "User:bob", "User:carol"]),
    st.sampled_from(["h1", "h2"]),
    st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER]),
    st.sampled_from([Rt.TOPIC, Rt.GROUP]),
    NAMES,
)
def test_decisions_follow_the_rules(
    bindings: list[AclBinding], principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str
) -> None:
    a = authorizer(*bindings, supers=())
    assert a.authorize(principal, host, op, rtype, name) == _oracle(
        bindings, principal, host, op, rtype, name
    )


@given(BINDINGS, NAMES)
def test_a_match_filter_finds_exactly_the_bindings_that_apply(b: AclBinding, name: str) -> None:
    f = AclFilter(b.resource_type, name, PatternType.MATCH, None, None, Op.ANY, AclPermissionType.ANY)
    assert f.matches(b) == _applies(b, b.resource_type, name)


def test_authorize_any_weighs_the_denies() -> None:
    lit = PatternType.LITERAL
    pre = PatternType.PREFIXED
    assert not authorizer(topic("t", Op.WRITE), topic("t", Op.WRITE, DENY)).authorize_any(
        "User:alice", "h", Op.WRITE, Rt.TOPIC
    )
    assert authorizer(topic("t", Op.WRITE), topic("u", Op.WRITE, DENY)).authorize_any(
        "User:alice", "h", Op.WRITE, Rt.TOPIC
    )
    assert not authorizer(
        topic("ab", Op.WRITE, pattern=pre), topic("a", Op.ALL, DENY, pattern=pre)
    ).authorize_any("User:alice", "h", Op.WRITE, Rt.TOPIC)
    assert not authorizer(topic("x", Op.WRITE, pattern=lit), topic("*", Op.ALL, DENY)).authorize_any(
        "User:alice", "h", Op.WRITE, Rt.TOPIC
    )
