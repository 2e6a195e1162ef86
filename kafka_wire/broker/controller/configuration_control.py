"""Dynamic configs, for the active controller (Kafka's ``ConfigurationControlManager``).

:class:`ConfigurationControl` owns the controller's view of the config overrides
(:class:`~kafka_wire.broker.controller.configs_image.ConfigsImage`): per topic, per broker and
the cluster-wide broker defaults (the broker resource named ""). It answers
IncrementalAlterConfigs and gives the replication part each topic's effective
``min.insync.replicas`` and ``unclean.leader.election.enable``.

IncrementalAlterConfigs and the legacy AlterConfigs (whole sets of overrides) alter topics (they
must exist; internal ones are refused with INVALID_REQUEST, kafka_wire's: their configs belong to
the broker) and brokers (by id, or "" for the cluster-wide defaults). Checks, as Kafka makes them
(the broker's before forwarding, then the controller's): a resource named twice in one request
(INVALID_REQUEST, every time it appears), a key named twice in one resource (INVALID_REQUEST), a
null SET (INVALID_REQUEST), an unknown topic config set (INVALID_CONFIG; deleting one is no
error), APPEND or SUBTRACT of a key that is not a list (INVALID_CONFIG; an absent key starts from
its default), a result that is not a valid topic config (INVALID_CONFIG), an unknown operation
(UNKNOWN_SERVER_ERROR, as Kafka answers its failed lookup). One ConfigRecord per changed key;
``validate_only`` checks only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka_wire import messages
from kafka_wire.broker.controller.configs_image import ConfigResourceType, ConfigsImage
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.group_configs import group_config_problem
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.settings import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, ControllerConfig
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.log.config import CONFIG_KEYS, ConfigError, LogConfig
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        AlterConfigsRequest,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsRequestAlterableConfig,
    )

#: Why a resource's change is refused: (error code, message).
Problem = tuple[int, str | None]


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

    def topic_config_problem(self, configs: Mapping[str, str]) -> str | None:
        """Why a topic's overrides do not make a valid log config (on the broker's topic
        defaults), or None."""
        try:
            LogConfig.from_properties(configs, base=self.config.topic_defaults)
        except ConfigError as exc:
            return str(exc)
        return None

    # -- checks shared by both APIs --------------------------------------------------------------

    def _resource_problem(self, resource_type: int, name: str) -> Problem | None:
        """Why the resource cannot be altered: unknown or internal topics, malformed broker
        names, other resource types."""
        if resource_type == ConfigResourceType.TOPIC:
            if not self._topic_exists(name):
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
            if is_internal(name):  # kafka_wire's: Kafka's controller would change them
                return (
                    ErrorCode.INVALID_REQUEST,
                    f"The configs of internal topic {name} belong to the broker.",
                )
        elif resource_type == ConfigResourceType.BROKER:
            if name and not name.isdigit():
                return ErrorCode.INVALID_REQUEST, f"Invalid broker name {name}"
        elif resource_type == ConfigResourceType.GROUP:
            if not name:
                return ErrorCode.INVALID_REQUEST, "Group name cannot be empty."
        else:
            return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource_type}"
        return None

    def _changes(self, resource_type: int, name: str, new: dict[str, str]) -> list[Message]:
        """A ConfigRecord per key whose value changes (a null value removes the override)."""
        old = self.image.configs.get((resource_type, name), {})
        return [
            messages.ConfigRecord(
                resource_type=resource_type, resource_name=name, name=key, value=new.get(key)
            )
            for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)
        ]

    # -- both APIs -------------------------------------------------------------------------------

    def _alter(
        self,
        api_key: int,
        request: Message,
        resources: Sequence[Any],
        validate_only: bool,
        new_configs: Callable[[Any, Mapping[str, str]], tuple[dict[str, str], Problem | None]],
        response: Callable[..., Message],
        result_of: Callable[..., Any],
    ) -> Decision:
        """One result per resource (``result_of``), the records of the changes ``new_configs``
        computes, the answer (``response``) once they are committed."""
        named = Counter((r.resource_type, r.resource_name) for r in resources)
        results = []
        records: list[Message] = []
        for resource in resources:
            result = result_of(  # a success's message is null, as Kafka's controller sets it
                resource_type=resource.resource_type, resource_name=resource.resource_name, error_message=None
            )
            results.append(result)
            key = (resource.resource_type, resource.resource_name)
            problem: Problem | None = (
                (ErrorCode.INVALID_REQUEST, "Duplicate resource.")
                if named[key] > 1
                else self._resource_problem(resource.resource_type, resource.resource_name)
            )
            if problem is None:
                new, problem = new_configs(resource, self.image.configs.get(key, {}))
            if problem is not None:
                result.error_code, result.error_message = problem
                continue
            if not validate_only:
                records += self._changes(resource.resource_type, resource.resource_name, new)

        def fail(code: int) -> Message:
            return failure_answer(api_key, request, code)

        return ControllerResult(records, lambda: response(responses=results), fail)

    # -- IncrementalAlterConfigs -----------------------------------------------------------------

    def incremental_alter_configs(
        self, version: int, req: IncrementalAlterConfigsRequest, now_ms: int
    ) -> Decision:
        return self._alter(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            req,
            req.resources,
            req.validate_only,
            lambda resource, old: self._apply_ops(resource.resource_type, resource.configs, old),
            messages.IncrementalAlterConfigsResponse,
            messages.IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
        )

    def _apply_ops(
        self,
        resource_type: int,
        ops: list[IncrementalAlterConfigsRequestAlterableConfig],
        current: Mapping[str, str],
    ) -> tuple[dict[str, str], Problem | None]:
        """The overrides after ``ops``, or why they cannot be applied (Kafka's broker-side checks
        of the request, then its controller's of each operation and of the result)."""
        repeated = [name for name, n in Counter(op.name for op in ops).items() if n > 1]
        if repeated:
            return {}, (ErrorCode.INVALID_REQUEST, f"Duplicate config keys: {', '.join(repeated)}")
        topic = resource_type == ConfigResourceType.TOPIC
        new = dict(current)
        for op in ops:
            spec = CONFIG_KEYS.get(op.name)
            if topic and spec is None and op.config_operation != OP_DELETE:  # Kafka deletes any name
                return {}, (ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {op.name}")
            if op.config_operation == OP_SET:
                if op.value is None:
                    return {}, (ErrorCode.INVALID_REQUEST, f"Null value not supported for : {op.name}")
                new[op.name] = op.value
            elif op.config_operation == OP_DELETE:
                new.pop(op.name, None)
            elif op.config_operation in (OP_APPEND, OP_SUBTRACT):
                if spec is not None and not spec.is_list:
                    verb = "APPEND" if op.config_operation == OP_APPEND else "SUBTRACT"
                    return {}, (
                        ErrorCode.INVALID_CONFIG,
                        f"Can't {verb} to key {op.name} because its type is not LIST.",
                    )
                base = new.get(op.name, spec.default if spec is not None else "")
                items = [v for v in base.split(",") if v]
                given = [v.strip() for v in (op.value or "").split(",") if v.strip()]
                if op.config_operation == OP_APPEND:
                    items += [v for v in given if v not in items]
                else:
                    items = [v for v in items if v not in given]
                new[op.name] = ",".join(items)
            else:
                return {}, (ErrorCode.UNKNOWN_SERVER_ERROR, None)  # Kafka's failed lookup of the operation
        problem = self._problem(resource_type, new)
        return new, None if problem is None else (ErrorCode.INVALID_CONFIG, problem)

    def _problem(self, resource_type: int, configs: Mapping[str, str]) -> str | None:
        """Why a resource's overrides are not valid (topics and groups are checked), or None."""
        if resource_type == ConfigResourceType.TOPIC:
            return self.topic_config_problem(configs)
        if resource_type == ConfigResourceType.GROUP:
            return group_config_problem(configs, self.config.group_config_bounds)
        return None

    # -- AlterConfigs ----------------------------------------------------------------------------

    def alter_configs(self, version: int, req: AlterConfigsRequest, now_ms: int) -> Decision:
        """The legacy API: each resource's whole set of overrides is replaced by the one given (a
        null value drops one)."""

        def replaced(resource: Any, old: Mapping[str, str]) -> tuple[dict[str, str], Problem | None]:
            new = {c.name: c.value for c in resource.configs if c.value is not None}
            invalid = self._problem(resource.resource_type, new)
            return new, None if invalid is None else (ErrorCode.INVALID_CONFIG, invalid)

        return self._alter(
            ApiKey.ALTER_CONFIGS,
            req,
            req.resources,
            req.validate_only,
            replaced,
            messages.AlterConfigsResponse,
            messages.AlterConfigsResponseResourceResponse,
        )
