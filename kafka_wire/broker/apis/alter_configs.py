"""AlterConfigs.

Behaviour: replaces a topic's whole set of overrides with the configs given (a null value drops
one); the new set must parse, or the topic gets INVALID_CONFIG and keeps its old set.
``validate_only`` checks only. Broker resources are refused (no dynamic broker configs), and so
are internal topics (INVALID_REQUEST: their configs belong to the broker).
In a cluster the request goes to the active controller when it names a topic, and its answer is relayed
(``forward``).
"""

from __future__ import annotations

from functools import partial

from kafka_wire.broker.apis.configs import alter_topic
from kafka_wire.broker.apis.forward import Forwarded, forward, names_topics
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResponseResourceResponse,
)


def handle(ctx: Context, request: AlterConfigsRequest) -> AlterConfigsResponse | Message | Forwarded:
    if ctx.state.cluster is not None and names_topics(request.resources):  # the controller owns the metadata
        return forward(ctx, ctx.state.cluster, request)
    results = []
    for resource in request.resources:
        configs = {c.name: c.value for c in resource.configs if c.value is not None}
        error_code, message = alter_topic(
            ctx.state,
            ctx.effects,
            resource.resource_type,
            resource.resource_name,
            partial(_replace, configs),
            request.validate_only,
        )
        results.append(
            AlterConfigsResponseResourceResponse(
                error_code=error_code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return AlterConfigsResponse(responses=results)


def _replace(configs: dict[str, str], current: dict[str, str]) -> tuple[dict[str, str], None]:
    return configs, None
