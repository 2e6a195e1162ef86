"""IncrementalAlterConfigs, for :class:`~kafka_wire.broker.controller.controller.QuorumController`.

Behaviour (Kafka's ``ControllerApis``, ``ConfigAdminManager`` and ``ConfigurationControlManager``):
a resource named twice in one request is INVALID_REQUEST ("Duplicate resource.") every time it
appears, and so is a resource naming one config twice, or setting one to null; an unknown
operation is UNKNOWN_SERVER_ERROR, as Kafka answers its failed lookup. A topic must exist
(UNKNOWN_TOPIC_OR_PARTITION), a broker be named by its id or "" (the cluster default). SET and
DELETE change the override; APPEND and SUBTRACT work on list configs only (``cleanup.policy``),
starting from the override or else the config's default, and are INVALID_CONFIG on others. The
topic's resulting configs must parse (INVALID_CONFIG). ``validate_only`` changes nothing. What
changed is written as ConfigRecords, answered once committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.broker.controller.image import ConfigResourceType
from kafka_wire.broker.controller.settings import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.log.config import CONFIG_KEYS, ConfigError, LogConfig
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ConfigRecord,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
)

if TYPE_CHECKING:
    from kafka_wire.broker.controller.controller import QuorumController

#: An answer for one resource: the error code and its message.
Refusal = tuple[int, str | None]


def incremental_alter_configs(
    c: QuorumController, version: int, req: IncrementalAlterConfigsRequest, now_ms: int
) -> Message | Waiting:
    seen: dict[tuple[int, str], int] = {}
    for resource in req.resources:
        key = (resource.resource_type, resource.resource_name)
        seen[key] = seen.get(key, 0) + 1
    results: list[IncrementalAlterConfigsResponseAlterConfigsResourceResponse] = []
    records: list[Message] = []
    for resource in req.resources:
        key = (resource.resource_type, resource.resource_name)
        old = dict(c.image.configs.get(key, {}))
        new: dict[str, str] = {}
        refusal: Refusal | None = (
            (ErrorCode.INVALID_REQUEST, "Duplicate resource.") if seen[key] > 1 else _refusal(c, resource)
        )
        if refusal is None:
            new, refusal = _apply(resource, old)
        code, message = refusal or (ErrorCode.NONE, None)
        results.append(
            IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                error_code=code,
                error_message=message,
            )
        )
        if refusal is not None or req.validate_only:
            continue
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                records.append(
                    ConfigRecord(
                        resource_type=resource.resource_type,
                        resource_name=resource.resource_name,
                        name=name,
                        value=new.get(name),
                    )
                )

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.INCREMENTAL_ALTER_CONFIGS, req, code)

    return c.answer_when_committed(
        records, lambda: IncrementalAlterConfigsResponse(responses=results), fail, now_ms
    )


def _refusal(
    c: QuorumController, resource: IncrementalAlterConfigsRequestAlterConfigsResource
) -> Refusal | None:
    """Why the resource itself, or the shape of its changes, is refused (None: it is not)."""
    name = resource.resource_name
    names = [op.name for op in resource.configs]
    if len(set(names)) != len(names):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    unset = [op.name for op in resource.configs if op.config_operation == OP_SET and op.value is None]
    if unset:
        return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {unset[0]}"
    if resource.resource_type == ConfigResourceType.TOPIC:
        if name not in c.image.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
    elif resource.resource_type == ConfigResourceType.BROKER:
        if name and not name.isdigit():
            return ErrorCode.INVALID_REQUEST, f"Invalid broker name {name}"
    else:
        return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}"
    return None


def _apply(
    resource: IncrementalAlterConfigsRequestAlterConfigsResource, old: dict[str, str]
) -> tuple[dict[str, str], Refusal | None]:
    """The resource's configs after its operations, or why they are refused."""
    topic = resource.resource_type == ConfigResourceType.TOPIC
    new = dict(old)
    for op in resource.configs:
        if op.config_operation == OP_SET and op.value is not None:
            new[op.name] = op.value
        elif op.config_operation == OP_DELETE:
            new.pop(op.name, None)
        elif op.config_operation in (OP_APPEND, OP_SUBTRACT):
            spec = CONFIG_KEYS.get(op.name) if topic else None
            if topic and (spec is None or not spec.is_list):
                return new, (
                    ErrorCode.INVALID_CONFIG,
                    f"Config value append or subtract is not allowed for config {op.name}",
                )
            current = new.get(op.name, spec.default if spec is not None else "")
            items = [v for v in current.split(",") if v]
            given = [v for v in (op.value or "").split(",") if v]
            if op.config_operation == OP_APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            new[op.name] = ",".join(items)
        else:
            return new, (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    if topic:
        try:
            LogConfig.from_properties(new)
        except ConfigError as exc:
            return new, (ErrorCode.INVALID_CONFIG, str(exc))
    return new, None
