"""The parts of a cluster node of this build, made from its configuration.

:func:`build_parts` is the :data:`~kafka_wire.broker.node_contracts.PartsFactory` a
:class:`~kafka_wire.broker.node.Node` uses by default: the KRaft replica of
``__cluster_metadata`` (:mod:`kafka_wire.broker.raft`), on a controller the
:class:`~kafka_wire.broker.controller.QuorumController` (whose committed image is the node's
image), else a :class:`~kafka_wire.broker.controller.image.MetadataImage` of its own, and on a
broker the :class:`~kafka_wire.broker.replication.manager.ReplicaManager`.
"""

from __future__ import annotations

from kafka_wire.broker.controller.controller import QuorumController
from kafka_wire.broker.controller.image import MetadataImage
from kafka_wire.broker.controller.records import decode_record
from kafka_wire.broker.controller.settings import ControllerConfig
from kafka_wire.broker.node_contracts import NodeParts, PartsContext
from kafka_wire.broker.raft import KRaftReplica, RaftConfig
from kafka_wire.broker.replication.fetcher import FetcherConfig
from kafka_wire.broker.replication.manager import ReplicaManager, ReplicationConfig

__all__ = ["MetadataLogOfRaft", "build_parts", "decode_record"]


class MetadataLogOfRaft:
    """The controller's view of the raft replica (``controller.MetadataLog``): it leads once
    everything before its epoch is committed, as Kafka's controller is told of a leader change."""

    def __init__(self, raft: KRaftReplica) -> None:
        self.raft = raft

    @property
    def is_leader(self) -> bool:
        return self.raft.leader_ready

    @property
    def epoch(self) -> int:
        return self.raft.epoch

    @property
    def log_end_offset(self) -> int:
        return self.raft.log_end_offset

    def append(self, records: list[bytes], now_ms: int) -> int | None:
        return self.raft.append(records, now_ms)

    def write_snapshot(self, offset: int, records: list[bytes], now_ms: int) -> None:
        """A snapshot holding everything up to ``offset`` (inclusive)."""
        self.raft.create_snapshot(offset + 1, self.raft.epoch_of(offset), records, now_ms)


def build_parts(context: PartsContext) -> NodeParts:
    config, settings = context.config, context.settings
    raft = KRaftReplica(
        RaftConfig(
            node_id=config.node_id,
            voters=settings.voters,
            cluster_id=context.state.metadata.cluster_id,
            listener=settings.controller_listener,
            election_timeout_ms=config.quorum_election_timeout_ms,
            election_backoff_max_ms=config.quorum_election_backoff_max_ms,
            fetch_timeout_ms=config.quorum_fetch_timeout_ms,
            request_timeout_ms=config.quorum_request_timeout_ms,
        ),
        context.state.storage,
        context.effects,
        context.rng,
        logger=context.logger,
    )
    controller = None
    if settings.is_controller:
        controller = QuorumController(
            ControllerConfig.of(config, context.state.metadata.cluster_id),
            MetadataLogOfRaft(raft),
            context.rng,
            bootstrap=context.state.bootstrap_records,
            budget=context.state.budget,
            may_step=lambda: context.state.may_slice(),
            hooks=context.state.hooks,
        )
    replication = None
    if settings.is_broker:
        replication = ReplicaManager(
            context.state,
            context.view,
            context.effects,
            ReplicationConfig(
                replica_lag_time_max_ms=config.replica_lag_time_max_ms,
                fetcher=FetcherConfig(
                    wait_max_ms=config.replica_fetch_wait_max_ms,
                    max_bytes=config.replica_fetch_max_bytes,
                    response_max_bytes=config.replica_fetch_response_max_bytes,
                ),
            ),
            now_ms=context.now_ms,
        )
    return NodeParts(
        raft=raft,
        image=controller.committed if controller is not None else MetadataImage(context.state.hooks),
        controller=controller,
        replication=replication,
    )
