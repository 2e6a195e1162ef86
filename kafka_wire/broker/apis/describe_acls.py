"""DescribeAcls.

Behaviour: answered by the broker from its metadata image (as Kafka's authorizer answers it
locally). A filter naming UNKNOWN (code 0) closes the connection (Kafka's request parsing refuses
it); SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED for a connection that
may not DESCRIBE the cluster; otherwise the bindings the filter matches (none for a code Kafka
does not know)
(:meth:`~kafka_wire.broker.security.acls.AclFilter.matches`), grouped by resource pattern, sorted.
Version notes: v1+ carries the pattern type (v0 is not served: Kafka 4 dropped it).
"""

from __future__ import annotations

from kafka_wire.broker.controller.acl_control import request_filter
from kafka_wire.broker.security.acls import SECURITY_DISABLED_MESSAGE, AclBinding, AclOperation, names_unknown
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.errors import RemoteProtocolError
from kafka_wire.messages import (
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseAclDescription,
    DescribeAclsResponseResource,
    ErrorCode,
)


def handle(ctx: Context, request: DescribeAclsRequest) -> DescribeAclsResponse:
    r = request
    if names_unknown(r.resource_type_filter, r.pattern_type_filter, r.operation, r.permission_type):
        raise RemoteProtocolError("DescribeAcls filter contains UNKNOWN elements")  # Kafka closes
    authorizer = ctx.state.authorizer
    if authorizer is None:
        return DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message=SECURITY_DISABLED_MESSAGE
        )
    if not cluster_allowed(ctx, AclOperation.DESCRIBE):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    acl_filter = request_filter(request)  # a code it does not know matches nothing
    groups: dict[tuple[int, str, int], list[AclBinding]] = {}
    for b in sorted(b for b in authorizer.bindings() if acl_filter.matches(b)):
        groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    return DescribeAclsResponse(
        resources=[
            DescribeAclsResponseResource(
                resource_type=rtype,
                resource_name=name,
                pattern_type=ptype,
                acls=[
                    DescribeAclsResponseAclDescription(
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission_type,
                    )
                    for b in bindings
                ],
            )
            for (rtype, name, ptype), bindings in groups.items()
        ]
    )
