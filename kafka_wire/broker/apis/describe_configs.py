"""DescribeConfigs.

Behaviour: topic resources list every topic config (or the keys asked for; none named, or an
empty list, is every one) with value, source, synonyms (v1+), type and documentation (v3+); this
broker's resource (its node id) lists the broker's settings as read-only static configs; the
cluster-default resource ("") lists none (this broker applies no dynamic broker configs); illegal
topic names get INVALID_TOPIC_EXCEPTION, unknown topics UNKNOWN_TOPIC_OR_PARTITION (without a
message, as from Kafka), other brokers and broker loggers INVALID_REQUEST. A resource type Kafka does not define fails the whole request (INVALID_REQUEST
for every resource), as Kafka's request parsing does.
Authorization (with an authorizer): DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or,
for a broker, broker logger or client metrics, on the cluster (CLUSTER_AUTHORIZATION_FAILED), for
a group on the group (GROUP_AUTHORIZATION_FAILED), checked first.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.metadata import topic_name_problem
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.state import Context
from kafka_wire.broker.topic_configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_TOPIC,
    describe_topic_configs,
)
from kafka_wire.broker.topic_synonyms import STATIC_BROKER_CONFIG
from kafka_wire.messages import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeConfigsResponseResourceResult,
    DescribeConfigsResponseResult,
    ErrorCode,
)

_STRING = 2


#: The resource types of Kafka's ``ConfigResource.Type`` (TOPIC, BROKER, BROKER_LOGGER,
#: CLIENT_METRICS, GROUP): another one fails the whole request.
#: ``ConfigResource.Type`` CLIENT_METRICS and GROUP.
_RESOURCE_CLIENT_METRICS, _RESOURCE_GROUP = 16, 32
KNOWN_RESOURCE_TYPES: Final = frozenset(
    {RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, _RESOURCE_CLIENT_METRICS, _RESOURCE_GROUP}
)


def handle(ctx: Context, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    if any(r.resource_type not in KNOWN_RESOURCE_TYPES for r in request.resources):
        return DescribeConfigsResponse(
            results=[
                DescribeConfigsResponseResult(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=ErrorCode.INVALID_REQUEST.description,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in request.resources
            ]
        )
    return DescribeConfigsResponse(results=[_describe(ctx, request, r) for r in request.resources])


def _refusal(ctx: Context, resource_type: int, name: str) -> ErrorCode | None:
    """TOPIC_AUTHORIZATION_FAILED for a topic the connection may not DESCRIBE_CONFIGS,
    CLUSTER_AUTHORIZATION_FAILED for a broker resource when it may not on the cluster."""
    if ctx.state.authorizer is None:
        return None
    if resource_type == RESOURCE_TOPIC:
        ok = allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
        return None if ok else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, _RESOURCE_CLIENT_METRICS):
        ok = allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        return None if ok else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource_type == _RESOURCE_GROUP:
        ok = allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP, name)
        return None if ok else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def _describe(
    ctx: Context, request: DescribeConfigsRequest, resource: DescribeConfigsRequestResource
) -> DescribeConfigsResponseResult:
    state = ctx.state
    keys = resource.configuration_keys
    result = DescribeConfigsResponseResult(
        resource_type=resource.resource_type, resource_name=resource.resource_name
    )
    refusal = _refusal(ctx, resource.resource_type, resource.resource_name)
    if refusal is not None:  # Kafka's KafkaApis checks DESCRIBE_CONFIGS first
        result.error_code, result.error_message = refusal, refusal.description
        return result
    if resource.resource_type == RESOURCE_TOPIC:
        topic = state.topic_named(resource.resource_name)
        problem = topic_name_problem(resource.resource_name)
        if problem is not None:  # Kafka's ConfigHelper validates the name first
            result.error_code, result.error_message = ErrorCode.INVALID_TOPIC_EXCEPTION, problem
        elif topic is None:  # without a message, as Kafka's ConfigHelper answers it
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            result.configs = describe_topic_configs(
                state.defaults,
                state.config.topic_default_properties,
                topic.configs,
                keys,
                synonyms=request.include_synonyms,
                documentation=request.include_documentation,
                version=ctx.api_version,
            )
    elif resource.resource_type == RESOURCE_BROKER and resource.resource_name == str(state.config.node_id):
        result.configs = [
            DescribeConfigsResponseResourceResult(
                name=name,
                value=value,
                read_only=True,
                config_source=STATIC_BROKER_CONFIG,
                config_type=_STRING,
            )
            for name, value in broker_properties(ctx)
            if not keys or name in keys
        ]
    elif resource.resource_type == RESOURCE_BROKER and resource.resource_name == "":
        pass  # the cluster's dynamic defaults: this broker applies none
    else:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = (
            f"unsupported resource type {resource.resource_type} / name {resource.resource_name!r}"
        )
    return result


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
