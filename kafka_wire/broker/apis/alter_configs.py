"""AlterConfigs.

Behaviour: replaces a topic's whole set of overrides with the configs given (a null value drops
one); the new set must parse, or the topic gets INVALID_CONFIG and keeps its old set.
``validate_only`` checks only. Broker resources are refused (no dynamic broker configs).
"""

from __future__ import annotations

from kafka_wire.broker.apis.configs import RESOURCE_TOPIC
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResponseResourceResponse,
    ErrorCode,
)


def handle(ctx: Context, request: AlterConfigsRequest) -> AlterConfigsResponse:
    state = ctx.state
    results = []
    for resource in request.resources:
        result = AlterConfigsResponseResourceResponse(
            resource_type=resource.resource_type, resource_name=resource.resource_name, error_message=None
        )
        topic = state.topic_named(resource.resource_name) if resource.resource_type == RESOURCE_TOPIC else None
        if resource.resource_type != RESOURCE_TOPIC:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "only topic configs can be altered on this broker"
        elif topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            configs = {c.name: c.value for c in resource.configs if c.value is not None}
            problem = state.check_configs(configs)
            if problem is not None:
                result.error_code, result.error_message = problem.error_code, problem.message
            elif not request.validate_only:
                state.update_topic_configs(topic, configs)
        results.append(result)
    return AlterConfigsResponse(responses=results)
