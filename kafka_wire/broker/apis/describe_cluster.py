"""DescribeCluster.

Behaviour: this broker is the whole cluster and its controller. ``endpoint_type`` 2 (controllers,
v1+) is refused with UNSUPPORTED_ENDPOINT_TYPE as a combined broker has no separate controller
listener.
"""

from __future__ import annotations

from kafka_wire.broker.apis.metadata import ALL_CLUSTER_OPERATIONS, OPERATIONS_NOT_REQUESTED
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
    ErrorCode,
)

_BROKERS = 1


def handle(ctx: Context, request: DescribeClusterRequest) -> DescribeClusterResponse:
    config = ctx.state.config
    if ctx.api_version >= 1 and request.endpoint_type != _BROKERS:
        return DescribeClusterResponse(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message="only broker endpoints are served",
            endpoint_type=request.endpoint_type,
            cluster_id=ctx.state.metadata.cluster_id,
        )
    return DescribeClusterResponse(
        endpoint_type=_BROKERS,
        cluster_id=ctx.state.metadata.cluster_id,
        controller_id=config.node_id,
        brokers=[
            DescribeClusterResponseBroker(
                broker_id=config.node_id, host=config.host, port=config.port, rack=config.rack
            )
        ],
        cluster_authorized_operations=(
            ALL_CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else OPERATIONS_NOT_REQUESTED
        ),
    )
