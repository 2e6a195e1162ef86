"""ACL bindings and filters, as Kafka's ``AclBinding`` / ``AclBindingFilter`` define them.

The codes of :class:`ResourceType`, :class:`PatternType`, :class:`AclOperation` and
:class:`AclPermissionType` are the wire's (CreateAcls, DescribeAcls, DeleteAcls) and the
metadata log's (``AccessControlEntryRecord``). A code outside the enum reads as UNKNOWN, as
Kafka's ``fromCode`` reads it.

Filter matching (:meth:`AclFilter.matches`): a filter's resource type, operation and permission
type match equal values or ANY; its pattern type matches an equal one, ANY (names compared
literally), or MATCH: a LITERAL binding named as the filter or ``*``, or a PREFIXED binding whose
name starts the filter's name. A null name, principal or host matches every binding.
"""

from __future__ import annotations

import enum
from typing import Final

from kafka_wire.quick_dataclass import dataclass


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: Kafka's answer to an ACL request on a broker without an authorizer (SECURITY_DISABLED).
SECURITY_DISABLED_MESSAGE: Final = "No Authorizer is configured."
#: The name of the one CLUSTER resource.
CLUSTER_NAME: Final = "kafka-cluster"
#: The resource name matching every resource of its type (a LITERAL binding's).
WILDCARD_RESOURCE: Final = "*"
#: The principal matching every principal of type User.
WILDCARD_PRINCIPAL: Final = "User:*"
#: The host matching every host.
WILDCARD_HOST: Final = "*"
#: The principal of a connection that did not authenticate (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS: Final = "User:ANONYMOUS"


def resource_type(code: int) -> ResourceType:
    return ResourceType(code) if code in ResourceType._value2member_map_ else ResourceType.UNKNOWN


def pattern_type(code: int) -> PatternType:
    return PatternType(code) if code in PatternType._value2member_map_ else PatternType.UNKNOWN


def operation(code: int) -> AclOperation:
    return AclOperation(code) if code in AclOperation._value2member_map_ else AclOperation.UNKNOWN


def permission_type(code: int) -> AclPermissionType:
    return (
        AclPermissionType(code) if code in AclPermissionType._value2member_map_ else AclPermissionType.UNKNOWN
    )


def principal_of(user: str) -> str:
    """The principal string of a connection's authenticated user name ("" when none)."""
    if not user:
        return ANONYMOUS
    return user if user.startswith("User:") else f"User:{user}"


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


def binding_problem(binding: AclBinding) -> str | None:
    """Why ``binding`` cannot be created (INVALID_REQUEST with Kafka 4.4's message), else None."""
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.resource_name:
        return "Invalid empty resource name"
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type.name}"
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {binding.permission_type.name}"
    if ":" not in binding.principal:
        return (
            f"Could not parse principal from `{binding.principal}` "
            "(no colon is present separating the principal type from the principal name)"
        )
    if not binding.host:
        return "Host pattern cannot be null or empty"
    return None


def names_unknown(*codes: int) -> bool:
    """Whether a request names UNKNOWN (code 0) as a resource type, pattern type, operation or
    permission type: Kafka's request parsing refuses it, and the broker closes the connection."""
    return 0 in codes


def creation_unrepresentable(binding: AclBinding) -> bool:
    """A binding to create with ANY (or MATCH) in it: Kafka cannot even build it, and fails the
    whole CreateAcls with UNKNOWN_SERVER_ERROR."""
    return (
        binding.resource_type == ResourceType.ANY
        or binding.pattern_type in (PatternType.ANY, PatternType.MATCH)
        or binding.operation == AclOperation.ANY
        or binding.permission_type == AclPermissionType.ANY
    )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A filter of DescribeAcls or DeleteAcls; None matches any name, principal or host."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def problem(self) -> str | None:
        """Why DeleteAcls refuses the filter (a code it does not know: INVALID_REQUEST with Kafka
        4.4's message), else None. DescribeAcls answers such a filter with nothing."""
        if ResourceType.UNKNOWN in (self.resource_type,) or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, b.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
            return False
        if not self._name_matches(b):
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation not in (AclOperation.ANY, b.operation):
            return False
        return self.permission_type in (AclPermissionType.ANY, b.permission_type)

    def _name_matches(self, b: AclBinding) -> bool:
        name = self.resource_name
        if name is None:
            return True
        if self.pattern_type != PatternType.MATCH:
            return name == b.resource_name
        if b.pattern_type == PatternType.LITERAL:
            return name == b.resource_name or b.resource_name == WILDCARD_RESOURCE
        return name.startswith(b.resource_name)
