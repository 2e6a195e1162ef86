"""Internal topics: the topics the broker owns (``__consumer_offsets`` and, as Kafka, the ones of
coordinators this broker does not run yet).

Clients cannot create, delete, produce to, trim, re-partition or reconfigure an internal topic;
each API refuses with the error code listed in ``docs/guide/broker.md``. The broker creates the ones
it uses itself (:func:`internal_topic_specs`: Metadata auto-creation, FindCoordinator), with its
own partition count and configs, by asking the active controller (:class:`TopicCreation`, which
also asks for the topics Metadata auto-creates).

Facts from Kafka: the internal names are ``Topic.INTERNAL_TOPICS``; ``__consumer_offsets`` is
created with ``offsets.topic.num.partitions`` partitions and ``cleanup.policy=compact``,
``compression.type=producer`` and ``segment.bytes=offsets.topic.segment.bytes`` (the group
coordinator's ``groupMetadataTopicConfigs``). ``__cluster_metadata`` is not a topic clients see;
Kafka refuses to create it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
SHARE_GROUP_STATE_TOPIC: Final = "__share_group_state"
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"

#: Kafka's internal topics (``Topic.INTERNAL_TOPICS``): refused to clients whether or not this
#: broker runs their coordinator yet.
INTERNAL_TOPICS: Final = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
#: Names no client may create: the internal topics and KRaft's metadata log.
RESERVED_TOPICS: Final = INTERNAL_TOPICS | {CLUSTER_METADATA_TOPIC}


@dataclass(frozen=True, slots=True)
class InternalTopicSpec:
    """How the broker creates one internal topic."""

    name: str
    partitions: int
    #: Topic config overrides, by Kafka property name.
    configs: Mapping[str, str]


def is_internal(name: str | None) -> bool:
    return name in INTERNAL_TOPICS


def internal_topic_specs(config: BrokerConfig) -> dict[str, InternalTopicSpec]:
    """The internal topics this broker creates itself, as it creates them.

    ``__transaction_state`` is made as Kafka's ``transactionTopicConfigs``:
    ``transaction.state.log.num.partitions`` partitions, compacted, uncompressed, no unclean
    election, ``min.insync.replicas=transaction.state.log.min.isr`` and ``segment.bytes``.
    ``__share_group_state`` as Kafka's share coordinator makes it:
    ``share.coordinator.state.topic.num.partitions`` partitions, compacted, ``min.insync.replicas``
    and ``segment.bytes`` from its ``share.coordinator.state.topic.*`` settings.
    """
    return {
        OFFSETS_TOPIC: InternalTopicSpec(
            OFFSETS_TOPIC,
            config.offsets_topic_num_partitions,
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.offsets_topic_segment_bytes),
            },
        ),
        TRANSACTION_STATE_TOPIC: InternalTopicSpec(
            TRANSACTION_STATE_TOPIC,
            config.transaction_state_log_num_partitions,
            {
                "unclean.leader.election.enable": "false",
                "compression.type": "uncompressed",
                "cleanup.policy": "compact",
                "min.insync.replicas": str(config.transaction_state_log_min_isr),
                "segment.bytes": str(config.transaction_state_log_segment_bytes),
            },
        ),
        SHARE_GROUP_STATE_TOPIC: InternalTopicSpec(
            SHARE_GROUP_STATE_TOPIC,
            config.share_coordinator_state_topic_num_partitions,
            {
                "cleanup.policy": "compact",
                "min.insync.replicas": str(config.share_coordinator_state_topic_min_isr),
                "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes),
            },
        ),
    }


#: kafka_wire's own: after a creation request failed, the wait before another is sent.
CREATE_RETRY_BACKOFF_MS: Final = 100


class TopicCreation:
    """Topics a broker asked the active controller to create (auto-created ones, and the
    internal topics it makes).

    The controller creates topics: the broker sends it the CreateTopics request Kafka's
    ``AutoTopicCreationManager`` sends (the spec's partitions and configs, replication factor
    ``offsets.topic.replication.factor`` for ``__consumer_offsets``,
    ``transaction.state.log.replication.factor`` for ``__transaction_state``; the topics one Metadata
    request auto-creates go in one request, so that Kafka's limit on the records of one request
    applies to them together), with at most one request in flight per topic; a failed one (no
    answer, or an error other than TOPIC_ALREADY_EXISTS) is asked again no sooner than
    :data:`CREATE_RETRY_BACKOFF_MS` later. The topic appears in the cluster view once the
    controller has committed it; until then the caller answers as Kafka does
    (COORDINATOR_NOT_AVAILABLE for FindCoordinator, LEADER_NOT_AVAILABLE for Metadata).
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger(__name__)
        self._in_flight: set[str] = set()
        self._retry_at_ms: dict[str, int] = {}

    def in_flight(self, name: str) -> bool:
        return name in self._in_flight

    def request(self, cluster: ClusterView, config: BrokerConfig, name: str, now_ms: int) -> bool:
        """Ask for ``name`` (an internal topic this broker makes, with its spec) unless a request
        is in flight or backing off; True when one was sent now."""
        spec = internal_topic_specs(config).get(name)
        if spec is None:
            return False
        return self.create(
            cluster, [name], spec.partitions, _replication_factor(config, name), spec.configs, now_ms
        )

    def create(
        self,
        cluster: ClusterView,
        names: Iterable[str],
        partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        now_ms: int,
    ) -> bool:
        """Ask for the topics ``names`` (auto-created, or internal) in one request, but those
        in flight or backing off; True when one was sent now."""
        wanted = [
            n
            for n in dict.fromkeys(names)
            if n not in self._in_flight and now_ms >= self._retry_at_ms.get(n, 0)
        ]
        if not wanted or cluster.controller_id < 0:
            return False  # no active controller known yet: asked again at the next lookup
        body = messages.CreateTopicsRequest(
            topics=[
                messages.CreateTopicsRequestCreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    configs=[
                        messages.CreateTopicsRequestCreatableTopicConfig(name=key, value=value)
                        for key, value in configs.items()
                    ],
                )
                for name in wanted
            ],
            timeout_ms=CREATE_TIMEOUT_MS,
        )

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            for name in wanted:
                self._in_flight.discard(name)
                error = _creation_error(reply, name)
                if error is None:
                    self._retry_at_ms.pop(name, None)
                    continue
                self._log.warning("creating %s through the controller failed (%s); retrying", name, error)
                self._retry_at_ms[name] = reply_ms + CREATE_RETRY_BACKOFF_MS

        self._in_flight.update(wanted)
        cluster.send(
            Outbound(cluster.controller_id, cluster.controller_listener, body, on_reply, CREATE_TIMEOUT_MS)
        )
        return True


#: The timeout of a creation request (Kafka's broker uses its ``request.timeout.ms``, 30 s).
CREATE_TIMEOUT_MS: Final = 30_000


def _replication_factor(config: BrokerConfig, name: str) -> int:
    if name == OFFSETS_TOPIC:
        return config.offsets_topic_replication_factor
    if name == TRANSACTION_STATE_TOPIC:
        return config.transaction_state_log_replication_factor
    if name == SHARE_GROUP_STATE_TOPIC:
        return config.share_coordinator_state_topic_replication_factor
    return config.default_replication_factor


def _creation_error(reply: Message | None, name: str) -> str | None:
    """Why a creation request failed, or None when the topic was made (or already existed)."""
    if not isinstance(reply, messages.CreateTopicsResponse):
        return "no answer"
    for topic in reply.topics:
        if topic.name == name and topic.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            known = ErrorCode.lookup(topic.error_code)
            code = known.name if isinstance(known, ErrorCode) else str(topic.error_code)
            return f"{code}: {topic.error_message}" if topic.error_message else code
    return None
