"""DescribeCluster.

Behaviour: a broker listener serves ``endpoint_type`` 1 (brokers): the live brokers with their
endpoint on the client's listener (fenced ones too, marked ``is_fenced``, when v2's
``include_fenced_brokers`` asks), the cluster id, and as controller id what Metadata tells (a
random live broker, as Kafka since KIP-590). ``endpoint_type`` 2
(controllers, v1+) is Kafka's MISMATCHED_ENDPOINT_TYPE on a broker listener: clients ask a
controller listener for it, where the controller answers with :func:`controllers_answer`. Any
other type is UNSUPPORTED_ENDPOINT_TYPE.
Version notes: ``endpoint_type`` from v1, ``include_fenced_brokers`` / ``is_fenced`` from v2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_wire.broker.apis.cluster_facts import advertised_controller, live_brokers
from kafka_wire.broker.apis.metadata import ALL_CLUSTER_OPERATIONS, OPERATIONS_NOT_REQUESTED
from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_wire.broker.security.checks import authorized_operations, cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
    ErrorCode,
)

BROKERS: Final = 1
CONTROLLERS: Final = 2
_NAMES: Final = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}


def handle(ctx: Context, request: DescribeClusterRequest) -> DescribeClusterResponse:
    refusal = endpoint_type_refusal(request, ctx.api_version, BROKERS)
    if refusal is not None:
        return refusal
    return DescribeClusterResponse(
        endpoint_type=BROKERS,
        cluster_id=ctx.state.metadata.cluster_id,
        controller_id=advertised_controller(ctx),
        brokers=[
            DescribeClusterResponseBroker(
                broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack, is_fenced=b.fenced
            )
            for b in live_brokers(ctx, include_fenced=ctx.api_version >= 2 and request.include_fenced_brokers)
        ],
        cluster_authorized_operations=_operations(ctx, request),
    )


def endpoint_type_refusal(
    request: DescribeClusterRequest, api_version: int, served: int
) -> DescribeClusterResponse | None:
    """Kafka's answer to a request for endpoints this listener does not serve, or None."""
    wanted = request.endpoint_type
    if wanted not in _NAMES:
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if api_version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {wanted}",
        )
    if wanted != served:
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if api_version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message=(
                f"The request was sent to an endpoint of type {_NAMES[served]}, "
                f"but we wanted an endpoint of type {_NAMES[wanted]}"
            ),
        )
    return None


def controllers_answer(
    request: DescribeClusterRequest,
    api_version: int,
    cluster_id: str,
    active_controller: int,
    voters: Sequence[tuple[int, Endpoint]],
) -> DescribeClusterResponse:
    """DescribeCluster on a controller listener: the voters with their endpoints (for the
    controller's own dispatch; brokers never answer it)."""
    refusal = endpoint_type_refusal(request, api_version, CONTROLLERS)
    if refusal is not None:
        return refusal
    return DescribeClusterResponse(
        endpoint_type=CONTROLLERS,
        cluster_id=cluster_id,
        controller_id=active_controller,
        brokers=[
            DescribeClusterResponseBroker(broker_id=node_id, host=e.host, port=e.port)
            for node_id, e in sorted(voters, key=lambda v: v[0])
        ],
        cluster_authorized_operations=(
            ALL_CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else OPERATIONS_NOT_REQUESTED
        ),
    )


def _operations(ctx: Context, request: DescribeClusterRequest) -> int:
    """The cluster's authorized operations when asked: the authorizer's for a connection that may
    DESCRIBE the cluster, none otherwise (Kafka's)."""
    if not request.include_cluster_authorized_operations:
        return OPERATIONS_NOT_REQUESTED
    if not cluster_allowed(ctx, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
