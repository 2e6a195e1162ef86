"""DeleteAcls.

Behaviour: a filter naming UNKNOWN (code 0) as a type, operation or permission closes the
connection (Kafka's request parsing refuses it); one with a code Kafka does not know is answered
INVALID_REQUEST by the controller. Without an authorizer (``authorizer.class.name`` unset) every filter fails with
SECURITY_DISABLED, as Kafka answers. A connection that may not ALTER the cluster gets
CLUSTER_AUTHORIZATION_FAILED for every filter (Kafka's controller checks the forwarded
request's principal; this broker checks it before forwarding). The rest goes to the active
controller (``forward``), whose ACL part (``controller/acl_control.py``) removes the bindings each filter matches (a
``RemoveAccessControlEntryRecord`` each), answering once they are committed.
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
from kafka_wire.messages import ApiKey, DeleteAclsRequest, ErrorCode


def handle(ctx: Context, request: DeleteAclsRequest) -> Message | Forwarded:
    for f in request.filters:
        if names_unknown(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type):
            raise RemoteProtocolError("DeleteAcls filters contain UNKNOWN elements")  # Kafka closes
    answer = ERROR_ANSWERS[ApiKey.DELETE_ACLS]
    if ctx.state.authorizer is None:
        return answer(request, ErrorCode.SECURITY_DISABLED, SECURITY_DISABLED_MESSAGE)
    if not cluster_allowed(ctx, AclOperation.ALTER):
        return answer(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    return forward(ctx, ctx.state.cluster, request)
