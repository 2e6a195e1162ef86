"""The checks API handlers make with the broker's authorizer (``BrokerState.authorizer``; None
when ``authorizer.class.name`` is unset: everything is allowed).

A connection's principal is ``User:<name>`` of its authenticated user (``User:ANONYMOUS``
without authentication) and its host the client's address, as Kafka's ``RequestContext`` gives
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType, principal_of
from kafka_wire.broker.security.authorizer import OPERATIONS_OF, AclSource, Authorizer

if TYPE_CHECKING:
    from kafka_wire.broker.config import BrokerConfig
    from kafka_wire.broker.state import BrokerState, Context


def build_authorizer(config: BrokerConfig, source: Callable[[], AclSource | None]) -> Authorizer:
    """The authorizer ``config`` asks for, reading the ACLs of ``source``."""
    return Authorizer(
        source,
        super_users=config.super_user_set,
        allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
    )


def allowed_for(
    state: BrokerState, user: str, host: str, op: AclOperation, rtype: ResourceType, name: str
) -> bool:
    """Whether the connection of ``user`` (its authenticated name) from ``host`` may do ``op``."""
    authorizer = state.authorizer
    return authorizer is None or authorizer.authorize(principal_of(user), host, op, rtype, name)


def allowed(ctx: Context, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    """Whether the request's connection may do ``op`` on the resource (the node's own requests
    to itself always may)."""
    return ctx.internal or allowed_for(ctx.state, ctx.principal, ctx.client_host, op, rtype, name)


def cluster_allowed(ctx: Context, op: AclOperation) -> bool:
    return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def topic_allowed(ctx: Context, op: AclOperation, topic: str) -> bool:
    return allowed(ctx, op, ResourceType.TOPIC, topic)


def denied_topics(ctx: Context, op: AclOperation, names: Iterable[str]) -> set[str]:
    """The topics of ``names`` the connection may not ``op`` (empty without an authorizer)."""
    if ctx.state.authorizer is None or ctx.internal:
        return set()
    return {n for n in names if not topic_allowed(ctx, op, n)}


def authorized_operations(ctx: Context, rtype: ResourceType, name: str) -> int:
    """The authorized-operations bit field of a resource for the connection (every operation of
    the type without an authorizer)."""
    authorizer = ctx.state.authorizer
    if authorizer is None:
        bits = 0
        for op in OPERATIONS_OF.get(rtype, ()):
            bits |= 1 << op
        return bits
    return authorizer.authorized_operations(principal_of(ctx.principal), ctx.client_host, rtype, name)
