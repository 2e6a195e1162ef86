"""IncrementalAlterConfigs.

Behaviour: per topic config, SET (0) a value, DELETE (1) the override, APPEND (2) or SUBTRACT (3)
items of a list config (``cleanup.policy``); a key named twice in one resource is INVALID_REQUEST,
an unknown key or bad value INVALID_CONFIG. ``validate_only`` checks only.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from kafka_wire.broker.apis.configs import RESOURCE_TOPIC
from kafka_wire.broker.log.config import CONFIG_KEYS
from kafka_wire.broker.state import Context
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


def handle(ctx: Context, request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    state = ctx.state
    results = []
    for resource in request.resources:
        result = IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
            resource_type=resource.resource_type, resource_name=resource.resource_name, error_message=None
        )
        topic = state.topic_named(resource.resource_name) if resource.resource_type == RESOURCE_TOPIC else None
        if resource.resource_type != RESOURCE_TOPIC:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "only topic configs can be altered on this broker"
        elif topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            configs, problem = _apply(topic.configs, resource.configs)
            if problem is None:
                checked = state.check_configs(configs)
                problem = None if checked is None else (checked.error_code, checked.message)
            if problem is not None:
                result.error_code, result.error_message = problem
            elif not request.validate_only:
                state.update_topic_configs(topic, configs)
        results.append(result)
    return IncrementalAlterConfigsResponse(responses=results)


def _apply(
    current: dict[str, str], changes: list[IncrementalAlterConfigsRequestAlterableConfig]
) -> tuple[dict[str, str], tuple[int, str] | None]:
    repeated = [name for name, n in Counter(c.name for c in changes).items() if n > 1]
    if repeated:
        return current, (ErrorCode.INVALID_REQUEST, f"Duplicate config keys: {', '.join(repeated)}")
    configs = dict(current)
    for change in changes:
        spec = CONFIG_KEYS.get(change.name)
        if spec is None:
            return current, (ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {change.name}")
        op = change.config_operation
        if op == SET:
            if change.value is None:
                return current, (ErrorCode.INVALID_REQUEST, f"Null value not supported for: {change.name}")
            configs[change.name] = change.value
        elif op == DELETE:
            configs.pop(change.name, None)
        elif op in (APPEND, SUBTRACT):
            if not spec.is_list:
                return current, (ErrorCode.INVALID_CONFIG, f"Config value append/subtract is not allowed for {change.name}")
            items = [i for i in configs.get(change.name, spec.default).split(",") if i]
            given = [i.strip() for i in (change.value or "").split(",") if i.strip()]
            items = items + [i for i in given if i not in items] if op == APPEND else [i for i in items if i not in given]
            configs[change.name] = ",".join(items)
        else:
            return current, (ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    return configs, None
