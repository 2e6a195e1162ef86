"""IncrementalAlterConfigs.

Behaviour: per topic config, SET (0) a value, DELETE (1) the override, APPEND (2) or SUBTRACT (3)
items of a list config (``cleanup.policy``); a key named twice in one resource is INVALID_REQUEST,
an unknown key or bad value INVALID_CONFIG. ``validate_only`` checks only. Internal topics are
refused (INVALID_REQUEST: their configs belong to the broker).
In a cluster the request goes to the active controller when it names a topic, and its answer is relayed
(``forward``).
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Final

from kafka_wire.broker.apis.configs import alter_topic
from kafka_wire.broker.apis.forward import Forwarded, forward, names_topics
from kafka_wire.broker.log.config import CONFIG_KEYS
from kafka_wire.broker.state import Context, TopicError
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
)

SET: Final = 0
DELETE: Final = 1
APPEND: Final = 2
SUBTRACT: Final = 3


def handle(
    ctx: Context, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse | Message | Forwarded:
    if ctx.state.cluster is not None and names_topics(request.resources):  # the controller owns the metadata
        return forward(ctx, ctx.state.cluster, request)
    results = []
    for resource in request.resources:
        error_code, message = alter_topic(
            ctx.state,
            ctx.effects,
            resource.resource_type,
            resource.resource_name,
            partial(_apply, resource.configs),
            request.validate_only,
        )
        results.append(
            IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                error_code=error_code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(responses=results)


def _apply(
    changes: list[IncrementalAlterConfigsRequestAlterableConfig], current: dict[str, str]
) -> tuple[dict[str, str], TopicError | None]:
    repeated = [name for name, n in Counter(c.name for c in changes).items() if n > 1]
    if repeated:
        return current, TopicError(ErrorCode.INVALID_REQUEST, f"Duplicate config keys: {', '.join(repeated)}")
    configs = dict(current)
    for change in changes:
        spec = CONFIG_KEYS.get(change.name)
        if spec is None:
            return current, TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {change.name}")
        op = change.config_operation
        if op == SET:
            if change.value is None:
                return current, TopicError(
                    ErrorCode.INVALID_REQUEST, f"Null value not supported for: {change.name}"
                )
            configs[change.name] = change.value
        elif op == DELETE:
            configs.pop(change.name, None)
        elif op in (APPEND, SUBTRACT):
            if not spec.is_list:
                return current, TopicError(
                    ErrorCode.INVALID_CONFIG, f"Config value append/subtract is not allowed for {change.name}"
                )
            items = [i for i in configs.get(change.name, spec.default).split(",") if i]
            given = [i.strip() for i in (change.value or "").split(",") if i.strip()]
            items = (
                items + [i for i in given if i not in items]
                if op == APPEND
                else [i for i in items if i not in given]
            )
            configs[change.name] = ",".join(items)
        else:
            return current, TopicError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    return configs, None
