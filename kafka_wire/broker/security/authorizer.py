"""The authorizer: Kafka's ``StandardAuthorizer`` decisions over the ACLs of the metadata image.

:meth:`Authorizer.authorize` answers whether ``principal`` (``User:alice``) connected from
``host`` may do ``operation`` on a resource (its type and name), in Kafka's order:

1. a super user (``super.users``) may do everything;
2. the ACLs that apply to the resource are those of its type named as it (LITERAL), named ``*``
   (LITERAL), or whose name starts its name (PREFIXED);
3. of those, the ones for the principal (or ``User:*``) and the host (or ``*``) decide: a DENY for
   the operation (or ALL) denies; otherwise an ALLOW for the operation, ALL, or an operation that
   implies it allows (DESCRIBE is implied by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by
   ALTER_CONFIGS);
4. when no ACL at all applies to the resource (whatever its principal),
   ``allow.everyone.if.no.acl.found`` decides; otherwise the answer is DENIED.

The bindings come from a callable (the node's image, whose section is replaced when a snapshot is
loaded); the authorizer indexes them by resource type again whenever the section's ``version``
changes. Pure: no clock, no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Protocol

from kafka_wire.broker.security.acls import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

#: The operations an ALLOW of the key's operation also allows (Kafka's implied operations).
IMPLIED: Final[dict[AclOperation, frozenset[AclOperation]]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}

#: The operations each resource type has (the authorized-operations fields list these).
OPERATIONS_OF: Final[dict[ResourceType, tuple[AclOperation, ...]]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DELETE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
    ),
}


class AclSource(Protocol):
    """What the authorizer reads: the image's ACL section."""

    @property
    def acls(self) -> Mapping[uuid.UUID, AclBinding]: ...

    @property
    def version(self) -> int: ...


class Authorizer:
    """ACL decisions (see the module docstring)."""

    def __init__(
        self,
        source: Callable[[], AclSource | None],
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._source = source
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        #: The source and its version the index was built from (the source is held, so that a
        #: new section is never mistaken for the one indexed).
        self._indexed: tuple[AclSource | None, int] | None = None
        #: Bindings by resource type: LITERAL ones by name, PREFIXED ones as a list.
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}

    def bindings(self) -> list[AclBinding]:
        source = self._source()
        return [] if source is None else list(source.acls.values())

    def _index(self) -> None:
        source = self._source()
        version = -1 if source is None else source.version
        if self._indexed is not None and self._indexed[0] is source and self._indexed[1] == version:
            return
        self._indexed = (source, version)
        self._literal = {}
        self._prefixed = {}
        for b in () if source is None else source.acls.values():
            if b.pattern_type == PatternType.LITERAL:
                self._literal.setdefault((b.resource_type, b.resource_name), []).append(b)
            elif b.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(b.resource_type, []).append(b)

    def _applying(self, rtype: ResourceType, name: str) -> list[AclBinding]:
        self._index()
        found = list(self._literal.get((rtype, name), ()))
        if name != WILDCARD_RESOURCE:
            found += self._literal.get((rtype, WILDCARD_RESOURCE), ())
        found += [b for b in self._prefixed.get(rtype, ()) if name.startswith(b.resource_name)]
        return found

    def authorize(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        acls = self._applying(rtype, name)
        if not acls:
            return self.allow_everyone_if_no_acl_found
        allowed = False
        implied = IMPLIED.get(operation, frozenset({operation}))
        for b in acls:
            if b.principal not in (principal, WILDCARD_PRINCIPAL) or b.host not in (host, WILDCARD_HOST):
                continue
            if b.permission_type == AclPermissionType.DENY:
                if b.operation in (AclOperation.ALL, operation):
                    return False
            elif b.permission_type == AclPermissionType.ALLOW and (
                b.operation == AclOperation.ALL or b.operation in implied
            ):
                allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, operation: AclOperation, rtype: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``: an ALLOW of a LITERAL or PREFIXED pattern that no DENY of
        a wider pattern covers; a super user, or ``allow.everyone.if.no.acl.found`` without any
        ACL of the type, may)."""
        if principal in self.super_users:
            return True
        self._index()
        of_type = [b for (t, _), bs in self._literal.items() if t == rtype for b in bs]
        of_type += self._prefixed.get(rtype, ())
        mine = [
            b
            for b in of_type
            if b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in (host, WILDCARD_HOST)
            and (b.operation in (AclOperation.ALL, operation) or b.operation in IMPLIED.get(operation, ()))
        ]
        denied_all = any(
            b.permission_type == AclPermissionType.DENY
            and b.operation in (AclOperation.ALL, operation)
            and b.pattern_type == PatternType.LITERAL
            and b.resource_name == WILDCARD_RESOURCE
            for b in mine
        )
        if denied_all:
            return False
        denies = [
            b
            for b in mine
            if b.permission_type == AclPermissionType.DENY and b.operation in (AclOperation.ALL, operation)
        ]
        for b in mine:
            if b.permission_type == AclPermissionType.ALLOW and not any(_covers(d, b) for d in denies):
                return True
        if not of_type:
            return self.allow_everyone_if_no_acl_found
        return False

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """The bit field of the operations allowed on the resource (Metadata's, DescribeCluster's
        and DescribeGroups' authorized-operations fields: bit ``1 << operation``)."""
        bits = 0
        for op in OPERATIONS_OF.get(rtype, ()):
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << op
        return bits


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether ``deny`` denies every resource ``allow`` allows (Kafka's ``authorizeByResourceType``):
    a PREFIXED deny covers the allows whose name it starts (a PREFIXED allow whose prefix it
    starts), a LITERAL deny covers the LITERAL allow of the same name."""
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name)
    return allow.pattern_type == PatternType.LITERAL and allow.resource_name == deny.resource_name
