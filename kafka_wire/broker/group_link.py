"""The broker's side of its group coordinator: group requests in, answers out.

:class:`GroupLink` builds the coordinator from the broker's configuration (its timers in the
engine's queue) on first use: the settings are checked at start, the coordinator (and the modules
of ``kafka_wire.broker.group`` it needs) is built by the first group request or the first
``__consumer_offsets`` partition led here, so that a start does not pay for it. The link hands
it the group requests with a token per request, appends each of its ``Persist`` effects to
``__consumer_offsets`` (emitting to the call's :class:`~kafka_wire.broker.effects.EffectSink`) and
reports the outcome, and turns its ``Respond`` effects back into answers to the requests still
waiting for them.

The coordinator serves the groups of the ``__consumer_offsets`` partitions led on this node (on
a single node, all of them), and the node tells the link when that changes, from the metadata
deltas it applies:

* :meth:`GroupLink.partition_led` when this node becomes the partition's leader (after the
  replica is the leader): the partition's records are replayed from its log start to its log
  end, ``offsets_topic.LOAD_READ_BYTES`` per step, as far as each engine call's work budget
  allows (at least one step per call); its groups get COORDINATOR_LOAD_IN_PROGRESS until the
  load ends.
* :meth:`GroupLink.partition_lost` when another node leads it or it goes offline or away: writes
  of the partition still awaiting replication fail (NOT_COORDINATOR), its groups leave memory and
  requests waiting in them get NOT_COORDINATOR; clients look the coordinator up again.

A write is Kafka's acks=-1 append: refused (COORDINATOR_NOT_AVAILABLE) while the ISR is below
``min.insync.replicas``; once appended its outcome is reported when the partition's high
watermark reaches the write's end (:func:`~kafka_wire.broker.offsets_topic.replication_outcome`;
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min ISR meanwhile), or after
``offsets.commit.timeout.ms`` (REQUEST_TIMED_OUT); the coordinator maps both to
COORDINATOR_NOT_AVAILABLE. A write that timed out stays in the log and is watched on: the
coordinator is told (``replicated``) once the high watermark passes it, as its reads see only
what is stored. A write without records (an answer drawn from what earlier writes stored)
appends nothing: its outcome is reported once the high watermark reaches the log end
offset it found, as Kafka's coordinator runtime completes such a write once its last written
offset is committed. The link checks the high watermarks in :meth:`GroupLink.poll`, which the
engine calls after every call that may move one (a follower's Fetch) and at
:meth:`GroupLink.next_deadline_ms`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from kafka_wire import messages
from kafka_wire.broker import offsets_topic
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.group.config import GroupConfig
from kafka_wire.broker.group.effects import GroupEffect, Persist
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.offsets_topic import PartitionLoad, replication_outcome, step_loads
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.broker.txn_offset_commits import TxnCommitGate
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.group.service import GroupCoordinator
    from kafka_wire.broker.group.share_groups import Initialization, ShareGroups

_T = TypeVar("_T")

#: A group answer: (connection id, the request it answers, the response body).
GroupAnswer = tuple[int, Request, Message]


@dataclass(frozen=True, slots=True)
class _Replicating:
    """A group write appended in a cluster, waiting for the high watermark to pass its end."""

    append_id: int
    partition: int
    end_offset: int
    deadline_ms: int
    #: False for a write without records: it only waits for the writes before it.
    appended: bool = True


class GroupLink:
    """The group coordinator as the broker drives it (see the module docstring)."""

    def __init__(
        self,
        config: BrokerConfig,
        state: BrokerState,
        effects: EffectSink,
        timers: TimerQueue,
        log: logging.Logger,
        member_id_factory: Callable[[str], str] | None = None,
    ) -> None:
        self._state = state
        self._effects = effects
        self._log = log
        self._commit_timeout_ms = config.offsets_commit_timeout_ms
        #: Requests awaiting the coordinator's answer, by (connection id, correlation id).
        self._waiting: dict[tuple[int, int], Request] = {}
        #: Partitions being loaded, in the order they were led.
        self._loads: dict[int, PartitionLoad] = {}
        #: Writes waiting for their replication, in append order.
        self._replicating: list[_Replicating] = []
        #: Writes whose outcome was a timeout, in append order: watched until the high watermark
        #: passes them (the coordinator's reads see them from then on) or the partition is lost.
        self._timed_out: list[_Replicating] = []
        #: The client host of each request waiting, by token (handed to the coordinator).
        self._hosts: dict[tuple[int, int], str] = {}
        #: TxnOffsetCommits checked before the coordinator sees them.
        self._txn_commits = TxnCommitGate(state)
        #: The latest time seen, for deadlines that are "now".
        self._now_ms = 0
        self._timers = timers
        self._member_id_factory = member_id_factory
        offsets = state.topic_named(OFFSETS_TOPIC)
        #: Checked now (a bad setting stops the start), used when the coordinator is built.
        self._group_config = GroupConfig(
            initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=config.group_min_session_timeout_ms,
            max_session_timeout_ms=config.group_max_session_timeout_ms,
            max_group_size=config.group_max_size,
            consumer_session_timeout_ms=config.group_consumer_session_timeout_ms,
            consumer_heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            consumer_assignors=tuple(
                a.strip() for a in config.group_consumer_assignors.split(",") if a.strip()
            ),
            consumer_max_size=config.group_consumer_max_size,
            consumer_migration_policy=config.group_consumer_migration_policy,
            share_session_timeout_ms=config.group_share_session_timeout_ms,
            share_heartbeat_interval_ms=config.group_share_heartbeat_interval_ms,
            share_max_size=config.group_share_max_size,
            offsets_retention_ms=config.offsets_retention_ms,
            # Groups are placed by the partitions the topic has, once it exists.
            offsets_topic_num_partitions=(
                offsets.partitions if offsets is not None else config.offsets_topic_num_partitions
            ),
        )
        self._coordinator: GroupCoordinator | None = None

    @property
    def built(self) -> bool:
        """Whether the coordinator is built (before, no group exists and no heartbeat marked a
        share-partition initializing)."""
        return self._coordinator is not None

    @property
    def coordinator(self) -> GroupCoordinator:
        """The coordinator, built on first use: a broker that no group request reached, with no
        ``__consumer_offsets`` partition led here, never loads it (a fast start)."""
        if self._coordinator is None:
            self._coordinator = self._build_coordinator()
        return self._coordinator

    def _build_coordinator(self) -> GroupCoordinator:
        from kafka_wire.broker.group.service import GroupCoordinator

        state = self._state
        return GroupCoordinator(
            self._group_config,
            member_id_factory=self._member_id_factory,
            topic_name_of=lambda topic_id: (
                t.name if (t := state.topic_with_id(topic_id)) is not None else None
            ),
            topic_id_of=lambda name: t.topic_id if (t := state.topic_named(name)) is not None else None,
            partitions_of=lambda name: t.partitions if (t := state.topic_named(name)) is not None else None,
            timers=self._timers,
            partitioned=True,
            hooks=state.hooks,
            topics=lambda: [(t.name, t.topic_id, t.partitions) for t in state.metadata.topics.values()],
        )

    @property
    def waiting(self) -> int:
        """Group requests not answered yet."""
        return len(self._waiting)

    @property
    def replicating(self) -> int:
        """Group writes waiting for their replication."""
        return len(self._replicating)

    @property
    def loading(self) -> frozenset[int]:
        """``__consumer_offsets`` partitions being loaded."""
        return frozenset(self._loads)

    def handle(self, conn_id: int, request: Request, client_host: str, now_ms: int) -> list[GroupAnswer]:
        self._now_ms = max(self._now_ms, now_ms)
        token = (conn_id, request.correlation_id)
        self._waiting[token] = request
        self._hosts[token] = client_host
        if isinstance(request.body, messages.TxnOffsetCommitRequest):
            admitted = self._txn_commits.admit(token, request, now_ms)
            if admitted is None:
                return []  # verifying the transaction
            if not isinstance(admitted, Request):
                del self._waiting[token]
                return [(conn_id, request, admitted)]
            request = admitted
        return self._handle(token, request, now_ms)

    def _handle(self, token: tuple[int, int], request: Request, now_ms: int) -> list[GroupAnswer]:
        client_host = self._hosts.pop(token, "")
        effects = self.coordinator.handle(
            token,
            request.body,
            request.api_version,
            now_ms,
            client_id=request.header.client_id or "",
            # Kafka's coordinator keeps the peer's InetAddress.toString(): "/127.0.0.1".
            client_host=f"/{client_host}" if client_host else "",
        )
        return self._apply(effects, now_ms)

    def tick(self, now_ms: int) -> list[GroupAnswer]:
        answers = self.poll(now_ms)
        if self._coordinator is None:  # not built yet: no group, no timer of its own
            return answers
        return answers + self._apply(self._coordinator.tick(now_ms), now_ms)

    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> list[GroupAnswer]:
        if self._coordinator is None:
            return []
        return self._apply(self._coordinator.topics_deleted(topics, now_ms), now_ms)

    def share_write(self, call: Callable[[ShareGroups], _T], now_ms: int) -> tuple[_T, list[GroupAnswer]]:
        """A call on the share groups' part (their state metadata, ``group/share_groups.py``) and
        the answers its writes give."""
        result, effects = self.coordinator.share_write(call, now_ms)
        return result, self._apply(effects, now_ms)

    def take_share_initializations(self) -> list[Initialization]:
        """The share-partitions heartbeats marked initializing, once stored (none before the
        coordinator is built)."""
        return [] if self._coordinator is None else self._coordinator.share_groups.take_initializations()

    def transactions_ended(self, ended: list[tuple[int, int, bool]], now_ms: int) -> list[GroupAnswer]:
        """Markers ``__consumer_offsets`` partitions took: (partition, producer id, commit)."""
        return self._apply(self.coordinator.transactions_ended(ended, now_ms), now_ms)

    def next_deadline_ms(self) -> int | None:
        deadlines = [w.deadline_ms for w in self._replicating]
        if (retry := self._txn_commits.next_deadline_ms) is not None:
            deadlines.append(retry)
        if self._loads:
            deadlines.append(self._now_ms)  # a load in progress goes on at once
        if self._coordinator is not None and (group := self._coordinator.next_deadline_ms()) is not None:
            deadlines.append(group)
        return min(deadlines) if deadlines else None

    def forget(self, conn_id: int) -> None:
        """A connection is gone: the coordinator's later answers to it are dropped."""
        if self._waiting:
            self._waiting = {token: r for token, r in self._waiting.items() if token[0] != conn_id}
            self._hosts = {token: h for token, h in self._hosts.items() if token[0] != conn_id}
        self._txn_commits.forget(conn_id)

    def clear(self) -> None:
        self._waiting.clear()

    # -- the partitions led here --------------------------------------------------------------------

    def partition_led(self, partition: int, now_ms: int) -> list[GroupAnswer]:
        """This node now leads ``__consumer_offsets`` partition ``partition`` (its replica is the
        leader): load its groups and offsets, then serve them (see the module docstring). Nothing
        happens when the partition is served or loading already, or has no replica here (logged)."""
        self._now_ms = max(self._now_ms, now_ms)
        coordinator = self.coordinator
        served = coordinator.served_partitions or frozenset()
        if partition in served or partition in self._loads:
            return []
        replica = self._state.replica(OFFSETS_TOPIC, partition)
        topic = self._state.topic_named(OFFSETS_TOPIC)
        if replica is None or topic is None:
            self._log.warning(
                "%s-%d is led here but has no replica here: its groups are not served",
                OFFSETS_TOPIC,
                partition,
            )
            return []
        if not served and not self._loads and not coordinator.groups():
            coordinator.use_partition_count(topic.partitions)
        coordinator.partition_loading(partition)
        self._loads[partition] = PartitionLoad(replica, coordinator, self._log)
        return self._continue_loads(now_ms)

    def partition_lost(self, partition: int, now_ms: int) -> list[GroupAnswer]:
        """This node no longer leads ``partition`` (see the module docstring)."""
        self._now_ms = max(self._now_ms, now_ms)
        if self._coordinator is None:  # not built: nothing served, loaded or written here
            return []
        coordinator = self._coordinator
        self._loads.pop(partition, None)
        held = (
            partition in (coordinator.served_partitions or ()) or partition in coordinator.loading_partitions
        )
        coordinator.stop_serving(partition)  # what the failures below trigger is not written
        lost = [w for w in self._replicating if w.partition == partition]
        self._replicating = [w for w in self._replicating if w.partition != partition]
        self._timed_out = [w for w in self._timed_out if w.partition != partition]
        answers: list[GroupAnswer] = []
        for write in lost:
            effects = coordinator.persisted(write.append_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, now_ms)
            answers += self._apply(effects, now_ms)
        if held:
            answers += self._apply(coordinator.partition_lost(partition, now_ms), now_ms)
        return answers

    def poll(self, now_ms: int) -> list[GroupAnswer]:
        """Report the writes whose replication is settled (the high watermark passed their end,
        this node lost the partition, or ``offsets.commit.timeout.ms`` passed) and go on with
        the loads in progress."""
        answers: list[GroupAnswer] = []
        for token, admitted in self._txn_commits.poll(now_ms):
            request = self._waiting.get(token)
            if request is None:
                continue
            if isinstance(admitted, Request):
                answers += self._handle(token, admitted, now_ms)
            else:
                del self._waiting[token]
                answers.append((token[0], request, admitted))
        if not self._replicating and not self._loads and not self._timed_out:
            return answers
        self._now_ms = max(self._now_ms, now_ms)
        if self._timed_out:
            answers += self._stored_late(now_ms)
        settled: list[tuple[_Replicating, int]] = []
        still: list[_Replicating] = []
        for write in self._replicating:
            outcome = self._outcome(write, now_ms)
            if outcome is None:
                still.append(write)
            else:
                settled.append((write, outcome))
        self._replicating = still
        for write, outcome in settled:
            self._watch(write, outcome)
            answers += self._apply(self.coordinator.persisted(write.append_id, outcome, now_ms), now_ms)
        return answers + self._continue_loads(now_ms)

    def _watch(self, write: _Replicating, outcome: int) -> None:
        """Keep watching an appended write that timed out: its records may yet be stored."""
        if outcome == ErrorCode.REQUEST_TIMED_OUT and write.appended:
            self._timed_out.append(write)

    def _stored_late(self, now_ms: int) -> list[GroupAnswer]:
        """Tell the coordinator of the timed-out writes the high watermark has passed since."""
        answers: list[GroupAnswer] = []
        still: list[_Replicating] = []
        stored: list[int] = []
        for write in self._timed_out:
            outcome = replication_outcome(self._state, write.partition, write.end_offset)
            if outcome is None:
                still.append(write)
            elif outcome != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                stored.append(write.append_id)  # NOT_ENOUGH_REPLICAS_AFTER_APPEND: stored too
        self._timed_out = still
        for append_id in stored:
            answers += self._apply(self.coordinator.replicated(append_id, now_ms), now_ms)
        return answers

    def _outcome(self, write: _Replicating, now_ms: int) -> int | None:
        outcome = replication_outcome(self._state, write.partition, write.end_offset)
        if outcome is None and now_ms >= write.deadline_ms:
            self._log.warning(
                "%s-%d: a group write was not replicated within offsets.commit.timeout.ms (%d ms)",
                OFFSETS_TOPIC,
                write.partition,
                self._commit_timeout_ms,
            )
            return ErrorCode.REQUEST_TIMED_OUT
        if outcome == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND and not write.appended:
            return ErrorCode.NONE  # what it waited for is stored; the ISR is its writers' concern
        return outcome

    def _continue_loads(self, now_ms: int) -> list[GroupAnswer]:
        """Load steps as far as the call's work budget allows, at least one per call."""
        answers: list[GroupAnswer] = []
        for partition in step_loads(self._loads, self._state.budget):
            answers += self._apply(self.coordinator.partition_loaded(partition, now_ms), now_ms)
        return answers

    # -- effects ----------------------------------------------------------------------------------

    def _apply(self, effects: list[GroupEffect], now_ms: int) -> list[GroupAnswer]:
        answers: list[GroupAnswer] = []
        pending = list(effects)
        while pending:
            effect = pending.pop(0)
            if isinstance(effect, Persist):
                error = self._persist(effect, now_ms)
                if error is not None:
                    pending[:0] = self.coordinator.persisted(effect.append_id, error, now_ms)
                continue
            token = effect.token
            assert isinstance(token, tuple)
            request = self._waiting.pop(token, None)
            if self._log.isEnabledFor(logging.DEBUG):
                self._log.debug("conn %d: group answer %r", token[0], effect.body)
            if request is not None:
                body = effect.body
                if isinstance(body, messages.TxnOffsetCommitResponse):
                    body = self._txn_commits.merge(token, body)
                answers.append((token[0], request, body))
        return answers

    def _persist(self, write: Persist, now_ms: int) -> int | None:
        """Append one write; its outcome now, or None when it waits for its replication."""
        if write.partition not in (self.coordinator.served_partitions or ()):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER  # the partition was lost: no append
        deadline_ms = now_ms + self._commit_timeout_ms
        if not write.records:
            replica = self._state.replica(OFFSETS_TOPIC, write.partition)
            if replica is None or not replica.is_leader:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            waiting = _Replicating(
                write.append_id, write.partition, replica.log_end_offset, deadline_ms, appended=False
            )
        else:
            appended = offsets_topic.append(self._state, write, now_ms, self._log)
            if appended.error_code:
                return appended.error_code
            waiting = _Replicating(write.append_id, write.partition, appended.end_offset, deadline_ms)
        outcome = self._outcome(waiting, now_ms)
        if outcome is None:
            self._replicating.append(waiting)
        else:
            self._watch(waiting, outcome)
        return outcome
