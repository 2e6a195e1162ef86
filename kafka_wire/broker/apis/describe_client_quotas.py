"""DescribeClientQuotas.

Behaviour: answered by the broker from its metadata image's client quotas (Kafka's broker answers
it from its ``ClientQuotasImage``, not the controller): the entities matching the filter, each
with all its values; see :mod:`kafka_wire.broker.controller.quotas_image` for the filter rules
and their error codes (a refused filter answers ``entries`` null with the error and its message).
Entries are sorted by entity (Kafka's order is its hash map's). With an authorizer, the
connection needs DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka).
Version notes: v1 is the flexible version; the fields are the same.
"""

from __future__ import annotations

from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse, ErrorCode


def handle(ctx: Context, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not cluster_allowed(ctx, AclOperation.DESCRIBE_CONFIGS):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return DescribeClientQuotasResponse(error_code=code, error_message=code.description, entries=None)
    return ctx.state.quotas.values.describe(request)
