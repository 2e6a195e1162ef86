"""Dynamic configs, for the active controller (Kafka's ``ConfigurationControlManager``).

:class:`ConfigurationControl` owns the controller's view of the config overrides
(:class:`~kafka_wire.broker.controller.configs_image.ConfigsImage`): per topic, per broker and
the cluster-wide broker defaults (the broker resource named ""). It answers
IncrementalAlterConfigs and gives the replication part each topic's effective
``min.insync.replicas`` and ``unclean.leader.election.enable``.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_wire.broker.controller.configs_image import ConfigResourceType, ConfigsImage
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.settings import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, ControllerConfig
from kafka_wire.broker.log.config import ConfigError, LogConfig
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ConfigRecord,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
)


class ConfigurationControl:
    """Config overrides by resource (see the module docstring)."""

    def __init__(self, config: ControllerConfig, topic_exists: Callable[[str], bool]) -> None:
        self.config = config
        self._topic_exists = topic_exists
        self.image = ConfigsImage()

    # -- state -----------------------------------------------------------------------------------

    def reset(self) -> None:
        self.image = ConfigsImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def topic_removed(self, topic: str, delta: DeltaBuilder) -> None:
        self.image.topic_removed(topic, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    # -- effective topic settings ----------------------------------------------------------------

    def topic_setting(self, topic: str, key: str) -> str | None:
        """A topic config: the topic's, else the cluster-wide dynamic default (broker "")."""
        value = self.image.topic_configs(topic).get(key)
        if value is None:
            value = self.image.configs.get((ConfigResourceType.BROKER, ""), {}).get(key)
        return value

    def min_isr(self, topic: str) -> int:
        value = self.topic_setting(topic, "min.insync.replicas")
        return int(value) if value is not None and value.isdigit() else self.config.min_insync_replicas

    def unclean(self, topic: str) -> bool:
        value = self.topic_setting(topic, "unclean.leader.election.enable")
        return self.config.unclean_leader_election_enable if value is None else value.lower() == "true"

    @staticmethod
    def topic_config_problem(configs: dict[str, str]) -> str | None:
        """Why a topic's overrides do not make a valid log config, or None."""
        try:
            LogConfig.from_properties(configs)
        except ConfigError as exc:
            return str(exc)
        return None

    # -- IncrementalAlterConfigs -----------------------------------------------------------------

    def incremental_alter_configs(
        self, version: int, req: IncrementalAlterConfigsRequest, now_ms: int
    ) -> Decision:
        results: list[IncrementalAlterConfigsResponseAlterConfigsResourceResponse] = []
        records: list[Message] = []
        for resource in req.resources:
            result = IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                resource_type=resource.resource_type, resource_name=resource.resource_name
            )
            results.append(result)
            key = (resource.resource_type, resource.resource_name)
            if resource.resource_type == ConfigResourceType.TOPIC:
                if not self._topic_exists(resource.resource_name):
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    result.error_message = f"Topic {resource.resource_name} does not exist."
                    continue
            elif resource.resource_type == ConfigResourceType.BROKER:
                if resource.resource_name and not resource.resource_name.isdigit():
                    result.error_code = ErrorCode.INVALID_REQUEST
                    result.error_message = f"Invalid broker name {resource.resource_name}"
                    continue
            else:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Unsupported resource type {resource.resource_type}"
                continue
            old = dict(self.image.configs.get(key, {}))
            new = dict(old)
            problem = None
            for op in resource.configs:
                if op.config_operation == OP_SET:
                    if op.value is None:
                        problem = f"Null value not supported for {op.name}"
                        break
                    new[op.name] = op.value
                elif op.config_operation == OP_DELETE:
                    new.pop(op.name, None)
                elif op.config_operation in (OP_APPEND, OP_SUBTRACT):
                    items = [v for v in new.get(op.name, "").split(",") if v]
                    given = [v for v in (op.value or "").split(",") if v]
                    if op.config_operation == OP_APPEND:
                        items += [v for v in given if v not in items]
                    else:
                        items = [v for v in items if v not in given]
                    new[op.name] = ",".join(items)
                else:
                    problem = f"Unknown operation {op.config_operation}"
                    break
            if problem is None and resource.resource_type == ConfigResourceType.TOPIC:
                problem = self.topic_config_problem(new)
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, problem
                continue
            if req.validate_only:
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
            return IncrementalAlterConfigsResponse(
                responses=[
                    IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                        resource_type=r.resource_type, resource_name=r.resource_name, error_code=code
                    )
                    for r in req.resources
                ]
            )

        return ControllerResult(records, lambda: IncrementalAlterConfigsResponse(responses=results), fail)
