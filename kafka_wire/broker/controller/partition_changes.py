"""``PartitionChanges``: layer 1 of the replication part
(:class:`~kafka_wire.broker.controller.replication_control.ReplicationControl`, Kafka's
``ReplicationControlManager``): the controller's view of topics and partitions, and the partition
changes every request and every broker state change builds by Kafka's rules.

It owns the working :class:`~kafka_wire.broker.controller.topics_image.TopicsImage` (replayed
records, and this controller's own proposals at once) and builds ``PartitionChangeRecord`` values
with :func:`~kafka_wire.broker.controller.elections.build_partition_change` (each topic's
``min.insync.replicas`` and ``unclean.leader.election.enable`` from the configuration part). As
the :class:`~kafka_wire.broker.controller.cluster_control.LeaderMoves` of the cluster part it
moves leaderships away from brokers that leave (fenced, shutting down, an old incarnation) and
lets a just-unfenced broker lead partitions that have none (Kafka's
``generateLeaderAndIsrUpdates``); the leader imbalance check picks preferred elections.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.cluster_control import ClusterControl
from kafka_wire.broker.controller.configuration_control import ConfigurationControl
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.elections import Election, build_partition_change
from kafka_wire.broker.controller.settings import MAX_ELECTIONS_PER_IMBALANCE, ControllerConfig
from kafka_wire.broker.controller.topics_image import NO_LEADER, TopicsImage
from kafka_wire.codec.structs import Message


class PartitionChanges:
    """Topics and partitions, and the changes built on them (see the module docstring)."""

    def __init__(
        self,
        config: ControllerConfig,
        cluster: ClusterControl,
        configuration: ConfigurationControl,
        rng: random.Random,
        hooks: Hooks = OFF,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.configuration = configuration
        self.rng = rng
        #: The simulator's BUGGIFY hooks (``buggify.OFF`` outside it).
        self.hooks = hooks
        self.image = TopicsImage(hooks)

    # -- state -----------------------------------------------------------------------------------

    def reset(self) -> None:
        self.image = TopicsImage(self.hooks)

    def replay(self, record: Message, delta: DeltaBuilder) -> str | None:
        return self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    def topic_exists(self, name: str) -> bool:
        return name in self.image.topics

    # -- building changes ------------------------------------------------------------------------

    def change(
        self,
        p: PartitionState,
        records: list[Message],
        acceptable: Callable[[int], bool] | None = None,
        *,
        election: Election | None = None,
        target_isr: Sequence[int] | None = None,
        target_replicas: Sequence[int] | None = None,
        target_adding: Sequence[int] | None = None,
        target_removing: Sequence[int] | None = None,
        target_leader_recovery_state: LeaderRecoveryState | None = None,
        unclean_shutdown_replicas: Sequence[int] = (),
    ) -> messages.PartitionChangeRecord | None:
        """Build one partition change by Kafka's rules and add it to ``records`` (None: no change)."""
        if election is None:
            election = Election.UNCLEAN if self.configuration.unclean(p.topic) else Election.ONLINE
        record = build_partition_change(
            p,
            acceptable or self.cluster.acceptable,
            election=election,
            min_isr=self.configuration.min_isr(p.topic),
            target_isr=target_isr,
            target_replicas=target_replicas,
            target_adding=target_adding,
            target_removing=target_removing,
            target_leader_recovery_state=target_leader_recovery_state,
            elr_enabled=self.config.elr_enabled,
            unclean_shutdown_replicas=unclean_shutdown_replicas,
            hooks=self.hooks,
        )
        if record is not None:
            records.append(record)
        return record

    def _leader_and_isr_updates(
        self,
        records: list[Message],
        remove: int = NO_LEADER,
        add: int = NO_LEADER,
        unclean_shutdown: int = NO_LEADER,
    ) -> None:
        """Kafka's ``generateLeaderAndIsrUpdates``: ``remove`` leaves every ISR it is in and every
        leadership; ``add`` (just unfenced) may take leaderless partitions."""

        def acceptable(r: int) -> bool:
            return r not in (remove, unclean_shutdown) and (r == add or self.cluster.acceptable(r))

        gone = {remove, unclean_shutdown} - {NO_LEADER}
        for p in list(self.image.all_partitions()):
            if add != NO_LEADER:
                if p.leader != NO_LEADER:
                    continue
            elif not (gone & set(p.isr) or gone & set(p.elr) or p.leader in gone):
                continue
            target = tuple(r for r in p.isr if r not in gone)
            self.change(
                p,
                records,
                acceptable,
                target_isr=target,
                unclean_shutdown_replicas=tuple(gone) if unclean_shutdown != NO_LEADER else (),
            )

    # -- LeaderMoves (for the cluster part) ------------------------------------------------------

    def broker_leaving(self, broker: int, records: list[Message]) -> None:
        self._leader_and_isr_updates(records, remove=broker)

    def broker_unfenced(self, broker: int, records: list[Message]) -> None:
        self._leader_and_isr_updates(records, add=broker)

    def broker_shut_down_uncleanly(self, broker: int, records: list[Message]) -> None:
        self._leader_and_isr_updates(records, unclean_shutdown=broker)

    def leads_any(self, broker: int) -> bool:
        return any(p.leader == broker for p in self.image.all_partitions())

    # -- leader imbalance ------------------------------------------------------------------------

    def _imbalanced(self) -> Iterable[PartitionState]:
        for p in self.image.all_partitions():
            if (
                p.replicas
                and p.leader != p.replicas[0]
                and p.replicas[0] in p.isr
                and self.cluster.acceptable(p.replicas[0])
            ):
                yield p

    def preferred_elections(self) -> list[Message]:
        """Preferred leader elections for the partitions not led by their first replica, at most
        :data:`MAX_ELECTIONS_PER_IMBALANCE` (Kafka's ``maybeBalancePartitionLeaders``)."""
        records: list[Message] = []
        for p in self._imbalanced():
            if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
                break
            self.change(p, records, election=Election.PREFERRED)
        return records

    def assignment_problem(self, assignment: Sequence[Sequence[int]]) -> str | None:
        """Why a manual replica assignment cannot be used, or None."""
        sizes = {len(replicas) for replicas in assignment}
        if len(sizes) != 1 or 0 in sizes:
            return "All partitions must have the same, non-zero number of replicas."
        for replicas in assignment:
            if len(set(replicas)) != len(replicas):
                return f"Duplicate broker ids in the replica assignment {list(replicas)}."
            for b in replicas:
                if self.cluster.broker(b) is None:
                    return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        return None
