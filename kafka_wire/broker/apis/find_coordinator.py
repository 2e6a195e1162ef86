"""FindCoordinator.

Behaviour: this broker coordinates every group (it creates ``__consumer_offsets`` on first use, as
Kafka does); transaction coordinators (key type 1) are not available yet (COORDINATOR_NOT_AVAILABLE).
Version notes: v0-v3 ask for one key; v4+ for a batch in ``coordinator_keys``.
"""

from __future__ import annotations

from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)

_GROUP = 0


def handle(ctx: Context, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    config = ctx.state.config
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    coordinators = []
    for key in keys:
        entry = FindCoordinatorResponseCoordinator(
            key=key, node_id=config.node_id, host=config.host, port=config.port
        )
        if request.key_type != _GROUP:
            entry = FindCoordinatorResponseCoordinator(
                key=key,
                node_id=-1,
                host="",
                port=-1,
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                error_message="this broker has no transaction coordinator",
            )
        else:
            ctx.state.offsets_topic(ctx.now_ms, ctx.effects)
        coordinators.append(entry)
    if ctx.api_version >= 4:
        return FindCoordinatorResponse(coordinators=coordinators)
    [only] = coordinators
    return FindCoordinatorResponse(
        error_code=only.error_code,
        error_message=only.error_message,
        node_id=only.node_id,
        host=only.host,
        port=only.port,
    )
