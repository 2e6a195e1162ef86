"""CreateAcls.

Behaviour: a creation naming UNKNOWN (code 0) as a type, operation or permission closes the
connection (Kafka's request parsing refuses it). Without an authorizer (``authorizer.class.name`` unset) every creation fails with
SECURITY_DISABLED, as Kafka answers. A connection that may not ALTER the cluster gets
CLUSTER_AUTHORIZATION_FAILED for every creation (Kafka's controller checks the forwarded
request's principal; this broker checks it before forwarding). The rest goes to the active
controller (``forward``), whose ACL part (``controller/acl_control.py``) checks each binding and
writes an ``AccessControlEntryRecord`` per new one, answering once they are committed.
Version notes: v1+ carries the pattern type (v0 is LITERAL only, and not served: Kafka 4 dropped it).
"""

from __future__ import annotations

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.error_answers import ERROR_ANSWERS
from kafka_wire.broker.security.acls import SECURITY_DISABLED_MESSAGE, AclOperation, names_unknown
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.errors import RemoteProtocolError
from kafka_wire.messages import ApiKey, CreateAclsRequest, ErrorCode


def handle(ctx: Context, request: CreateAclsRequest) -> Message | Forwarded:
    for c in request.creations:
        if names_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
            raise RemoteProtocolError("CreateAcls creations contain UNKNOWN elements")  # Kafka closes
    answer = ERROR_ANSWERS[ApiKey.CREATE_ACLS]
    if ctx.state.authorizer is None:
        return answer(request, ErrorCode.SECURITY_DISABLED, SECURITY_DISABLED_MESSAGE)
    if not cluster_allowed(ctx, AclOperation.ALTER):
        return answer(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    return forward(ctx, ctx.state.cluster, request)
