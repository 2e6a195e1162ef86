"""DescribeConfigs.

Behaviour: topic resources list every topic config (or the keys asked for) with value, source,
synonyms (v1+), type and documentation (v3+); broker resources list the broker's settings as
read-only static configs; unknown topics get UNKNOWN_TOPIC_OR_PARTITION (without a message, as
from Kafka) and illegal names INVALID_TOPIC_EXCEPTION; broker loggers are not
supported (INVALID_REQUEST).
"""

from __future__ import annotations

from kafka_wire.broker.apis.configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    STATIC_BROKER_CONFIG,
    describe_topic_configs,
)
from kafka_wire.broker.metadata import topic_name_problem
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseResult,
    ErrorCode,
)

_STRING = 2


def handle(ctx: Context, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    state = ctx.state
    results = []
    for resource in request.resources:
        result = DescribeConfigsResponseResult(
            resource_type=resource.resource_type, resource_name=resource.resource_name
        )
        if resource.resource_type == RESOURCE_TOPIC:
            topic = state.topic_named(resource.resource_name)
            problem = topic_name_problem(resource.resource_name)
            if problem is not None:  # Kafka's ConfigHelper validates the name first
                result.error_code, result.error_message = ErrorCode.INVALID_TOPIC_EXCEPTION, problem
            elif topic is None:  # without a message, as Kafka's ConfigHelper answers it
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                result.configs = describe_topic_configs(
                    state,
                    topic.configs,
                    resource.configuration_keys,
                    synonyms=request.include_synonyms,
                    documentation=request.include_documentation,
                    version=ctx.api_version,
                )
        elif resource.resource_type == RESOURCE_BROKER and resource.resource_name in (
            "",
            str(state.config.node_id),
        ):
            result.configs = [
                DescribeConfigsResponseResourceResult(
                    name=name,
                    value=value,
                    read_only=True,
                    config_source=STATIC_BROKER_CONFIG,
                    config_type=_STRING,
                )
                for name, value in broker_properties(ctx)
                if resource.configuration_keys is None or name in resource.configuration_keys
            ]
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (
                f"unsupported resource type {resource.resource_type} / name {resource.resource_name!r}"
            )
        results.append(result)
    return DescribeConfigsResponse(results=results)


def broker_properties(ctx: Context) -> list[tuple[str, str]]:
    config = ctx.state.config
    pairs = [
        ("node.id", str(config.node_id)),
        ("advertised.listeners", f"PLAINTEXT://{config.host}:{config.port}"),
        ("auto.create.topics.enable", str(config.auto_create_topics).lower()),
        ("num.partitions", str(config.num_partitions)),
        ("default.replication.factor", str(config.default_replication_factor)),
        ("delete.topic.enable", str(config.delete_topic_enable).lower()),
        ("offsets.topic.num.partitions", str(config.offsets_topic_num_partitions)),
        ("offsets.topic.segment.bytes", str(config.offsets_topic_segment_bytes)),
        ("offsets.topic.compression.codec", str(config.offsets_topic_compression_codec)),
        ("group.max.size", str(config.group_max_size)),
        ("group.initial.rebalance.delay.ms", str(config.group_initial_rebalance_delay_ms)),
        ("socket.request.max.bytes", str(config.max_frame_bytes)),
    ]
    pairs += sorted(config.topic_default_properties.items())
    return sorted(pairs)
