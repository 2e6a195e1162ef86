"""The share-partitions a broker leads, for every share group (Kafka's ``SharePartitionManager``):
created at a group's first share fetch of a partition, acknowledged, released, and their
acquisition locks run out on the engine's timers.

A share-partition starts (its start offset, the SPSO) at the partition's high watermark, at its
log start with ``share.auto.offset.reset=earliest`` (the group's config; ``latest`` is Kafka's
default), or with ``by_duration:<duration>`` at the first offset whose timestamp is at or after
now less the duration (``share.offset_reset``). The group's ``share.isolation.level``
(:meth:`ShareManager.read_committed`) is read at every share fetch, as Kafka 4.4 reads it per
request. The group configs ``share.record.lock.duration.ms``, ``share.delivery.count.limit`` and
``share.partition.max.record.locks`` override the broker's ``group.share.*`` settings, read at
every fetch (``configs_of(group)``: the group's config overrides). A share-partition's state is
read from the share coordinator when it starts (``share.persister.StatePersister``: a
ReadShareGroupState at the partition's leader epoch; nothing is acquired until it is answered) and
written back with every change (:meth:`ShareManager.persist`, a WriteShareGroupState): the
answers that depend on a change wait for its :class:`~kafka_wire.broker.share.persister.Ticket`.
A share-partition whose partition is no longer led here, or led at another leader epoch (the
leadership moved away and back), is dropped (:meth:`ShareManager.poll`, and at every use): the
next leader starts again from the state the coordinator kept. So is one whose write failed for
good (fenced by a newer leader, or by a new state epoch).

Timers live in the engine's :class:`~kafka_wire.broker.timers.TimerQueue` under the owner
``"share"``, one per share-partition at its earliest lock deadline; :meth:`ShareManager.run_due`
(called by ``Broker.tick``) makes expired records available again (or archives them at the
delivery limit), and held share fetches see them at their next poll.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.group.share_defaults import (
    DEFAULT_DELIVERY_LIMIT,
    DEFAULT_LOCK_DURATION_MS,
    DEFAULT_MAX_IN_FLIGHT,
)
from kafka_wire.broker.share.coordinator import ShareStateStore
from kafka_wire.broker.share.offset_reset import EARLIEST, LATEST, parse_offset_reset, reset_timestamp_ms
from kafka_wire.broker.share.persister import ReadOutcome, Snapshot, StatePersister, Ticket
from kafka_wire.broker.share.sessions import DEFAULT_MAX_SHARE_SESSIONS, ShareSession, ShareSessionCache
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:  # the share-partition machine loads with the first share-partition or acknowledgement
    from kafka_wire.broker.group.share_partition import AcknowledgeType, SharePartition

#: The owner of the share-partitions' timers in the engine's queue.
SHARE_TIMERS: Final = "share"

#: (group id, topic id, partition).
SharePartitionKey = tuple[str, uuid.UUID, int]
#: An acknowledgement batch as sent: (first offset, last offset, acknowledge types).
AckBatch = tuple[int, int, list[int]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareConfig:
    #: ``group.share.record.lock.duration.ms``.
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    #: ``group.share.delivery.count.limit``.
    delivery_limit: int = DEFAULT_DELIVERY_LIMIT
    #: ``group.share.partition.max.record.locks``.
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: ``max.share.session.cache.size``.
    max_sessions: int = DEFAULT_MAX_SHARE_SESSIONS
    #: The broker's bounds of the group configs overriding the first three
    #: (``group.share.min/max.record.lock.duration.ms``, ``.delivery.count.limit``,
    #: ``.partition.max.record.locks``): an override outside them, kept from before they
    #: changed or checked by a controller with others, is taken at the nearest bound, as Kafka
    #: 4.4's ``GroupConfigManager`` takes it.
    lock_duration_bounds: tuple[int, int] = (15_000, 60_000)
    delivery_limit_bounds: tuple[int, int] = (2, 10)
    max_in_flight_bounds: tuple[int, int] = (100, 4000)


def _int(configs: Mapping[str, str], name: str, default: int, bounds: tuple[int, int]) -> int:
    """The group config ``name`` within ``bounds``, else ``default``."""
    value = configs.get(name)
    try:
        return default if value is None else min(max(int(value), bounds[0]), bounds[1])
    except ValueError:  # the controller checks group configs: not expected
        return default


def ack_ranges(batches: list[AckBatch], renew: bool) -> list[tuple[int, int, AcknowledgeType]] | None:
    """The ranges of a partition's acknowledgement batches, one type each, or None when they are
    malformed (Kafka's INVALID_REQUEST): out of order or overlapping, ``last < first``, types
    neither one nor one per offset, an unknown type, RENEW outside a renew acknowledgement."""
    from kafka_wire.broker.group.share_partition import AcknowledgeType

    out: list[tuple[int, int, AcknowledgeType]] = []
    previous_last = -1
    allowed = range(5) if renew else range(4)
    for first, last, types in batches:
        if first < 0 or last < first or first <= previous_last or not types:
            return None
        if any(t not in allowed for t in types):
            return None
        previous_last = last
        if len(types) == 1:
            out.append((first, last, AcknowledgeType(types[0])))
        elif len(types) == last - first + 1:
            for offset, kind in enumerate(types, start=first):
                if out and out[-1][1] == offset - 1 and out[-1][2] == kind:
                    out[-1] = (out[-1][0], offset, out[-1][2])
                else:
                    out.append((offset, offset, AcknowledgeType(kind)))
        else:
            return None
    return out


#: What a client is told when a change's write failed (Kafka's ``SharePartition`` maps the
#: persister's errors so).
_CLIENT_ERRORS: Final[Mapping[int, ErrorCode]] = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_STATE_EPOCH: ErrorCode.FENCED_STATE_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REQUEST_TIMED_OUT,
}


def write_outcome(ticket: Ticket | None) -> ErrorCode | None:
    """The error a client gets for a change whose write has ``ticket``: NONE once stored, None
    while it is not settled."""
    if ticket is None:
        return ErrorCode.NONE
    outcome = ticket.outcome()
    if outcome is None:
        return None
    return _CLIENT_ERRORS.get(outcome, ErrorCode.UNKNOWN_SERVER_ERROR) if outcome else ErrorCode.NONE


class ShareManager:
    """Share sessions and share-partitions of a broker; see the module docstring."""

    def __init__(
        self,
        config: ShareConfig,
        timers: TimerQueue,
        configs_of: Callable[[str], Mapping[str, str]] = lambda group_id: {},
        store: ShareStateStore | None = None,
        hooks: Hooks = OFF,
        persister: StatePersister | None = None,
        leader_epoch_of: Callable[[uuid.UUID, int], int | None] | None = None,
    ) -> None:
        self.config = config
        self.hooks = hooks
        self.sessions = ShareSessionCache(config.max_sessions)
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self._timers = timers
        self._configs_of = configs_of
        #: The share coordinator's state on this node (what DescribeShareGroupOffsets reads).
        self.store = store
        #: Where the share-partitions' state goes (None: kept in memory only).
        self.persister = persister
        #: The leader epoch of a partition led here (None: not led here); None: always led.
        self._leader_epoch_of = leader_epoch_of
        #: The leader epoch and state epoch each share-partition was read at.
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        #: The high watermark when a share-partition's state was first asked for: where it starts
        #: with ``share.auto.offset.reset=latest`` and no state kept (the first share fetch's, as
        #: when the state is read at once).
        self._asked_at: dict[SharePartitionKey, int] = {}

    def lock_duration_ms(self, group_id: str) -> int:
        """``share.record.lock.duration.ms`` of the group, else the broker's."""
        return _int(
            self._configs_of(group_id),
            "share.record.lock.duration.ms",
            self.config.lock_duration_ms,
            self.config.lock_duration_bounds,
        )

    def read_committed(self, group_id: str) -> bool:
        """Whether the group's ``share.isolation.level`` is ``read_committed`` (Kafka 4.4 reads it
        for each ShareFetch: a change applies to the next fetches)."""
        return self._configs_of(group_id).get("share.isolation.level", "").strip() == "read_committed"

    # -- share-partitions --------------------------------------------------------------------------

    def partition(
        self,
        key: SharePartitionKey,
        log_start_offset: int,
        high_watermark: int,
        now_ms: int,
        leader_epoch: int = -1,
        find_offset: Callable[[int], int | None] = lambda timestamp_ms: None,
    ) -> SharePartition | ErrorCode | None:
        """The share-partition of ``key``: created from the state the share coordinator kept, else
        at the offset ``share.auto.offset.reset`` says (and that state written; ``by_duration``
        asks ``find_offset`` for the first offset whose timestamp is at or after a time). None while
        its state is being read; OFFSET_NOT_AVAILABLE when ``by_duration`` finds no offset (Kafka
        4.4 fails the initialization: the next fetch reads the state again)."""
        configs = self._configs_of(key[0])
        found = self.partitions.get(key)
        if found is not None and self._leader_epochs.get(key) != leader_epoch:
            self.drop(key)  # led at another epoch since: what it kept may be stale
            found = None
        if found is None:
            kept: ReadOutcome | None = None
            if self.persister is not None:
                kept = self.persister.read(key, leader_epoch, now_ms)
                if kept is None:
                    self._asked_at.setdefault(key, high_watermark)
                    return None
                if kept.error_code:  # fenced (a newer leader read it) or refused: asked again later
                    return None
            window = _int(
                configs,
                "share.partition.max.record.locks",
                self.config.max_in_flight,
                self.config.max_in_flight_bounds,
            )
            from kafka_wire.broker.group.share_partition import SharePartition

            if kept is not None and kept.start_offset >= 0:
                found = SharePartition(
                    max(kept.start_offset, log_start_offset), max_in_flight=window, hooks=self.hooks
                )
                found.restore(list(kept.batches))
            else:
                reset = parse_offset_reset(configs.get("share.auto.offset.reset", LATEST).strip())
                if reset == EARLIEST:
                    start = log_start_offset
                elif isinstance(reset, int):
                    # Kafka 4.4 looks the timestamp up in the whole local log; none found fails the
                    # initialization (OffsetNotAvailableException): asked again at the next fetch
                    found_offset = find_offset(reset_timestamp_ms(now_ms, reset))
                    if found_offset is None:
                        return ErrorCode.OFFSET_NOT_AVAILABLE
                    start = found_offset
                else:
                    start = min(self._asked_at.get(key, high_watermark), high_watermark)
                found = SharePartition(max(start, log_start_offset), hooks=self.hooks)
            self.partitions[key] = found
            self._asked_at.pop(key, None)
            self._leader_epochs[key] = leader_epoch
            self._state_epochs[key] = 0 if kept is None else kept.state_epoch
            if kept is None or kept.start_offset != found.start_offset or kept.start_offset < 0:
                self.persist(key, now_ms)
        config = self.config
        found.lock_duration_ms = _int(
            configs, "share.record.lock.duration.ms", config.lock_duration_ms, config.lock_duration_bounds
        )
        found.delivery_limit = _int(
            configs, "share.delivery.count.limit", config.delivery_limit, config.delivery_limit_bounds
        )
        found.max_in_flight = _int(
            configs, "share.partition.max.record.locks", config.max_in_flight, config.max_in_flight_bounds
        )
        return found

    def persist(self, key: SharePartitionKey, now_ms: int) -> Ticket | None:
        """Hand ``key``'s state to the share coordinator; the ticket of the write (None: no
        persister, or no such share-partition)."""
        found, persister = self.partitions.get(key), self.persister
        if found is None:
            return None
        start, batches = found.persisted_view()
        if persister is None:
            return None
        return persister.write(
            key,
            Snapshot(
                self._state_epochs.get(key, 0),
                self._leader_epochs.get(key, -1),
                start,
                tuple((f, last, int(s), c) for f, last, s, c in batches),
            ),
            now_ms,
        )

    def drop(self, key: SharePartitionKey) -> None:
        """Forget ``key``'s share-partition (the leadership moved, or its state was fenced)."""
        self.partitions.pop(key, None)
        self._asked_at.pop(key, None)
        self._leader_epochs.pop(key, None)
        self._state_epochs.pop(key, None)
        self._timers.cancel((SHARE_TIMERS, *key))
        if self.persister is not None:
            self.persister.forget(key)

    def led(self, key: SharePartitionKey) -> bool:
        """Whether ``key``'s partition is led here at the epoch its share-partition was read at."""
        if self._leader_epoch_of is None:
            return True
        return self._leader_epoch_of(key[1], key[2]) == self._leader_epochs.get(key)

    def poll(self, now_ms: int) -> bool:
        """Settle the persister's replies and send its retries; drop the share-partitions whose
        state failed or whose leadership moved. Whether anything moved."""
        persister = self.persister
        if persister is None:
            return False
        moved = persister.poll(now_ms)
        for key in persister.take_failed():
            if key in self.partitions:
                self.drop(key)
        if self._leader_epoch_of is not None:
            for key in [k for k in self.partitions if not self.led(k)]:
                self.drop(key)
        return moved

    def next_persist_deadline_ms(self) -> int | None:
        return None if self.persister is None else self.persister.next_deadline_ms()

    def rearm(self, key: SharePartitionKey) -> None:
        """Put the timer of ``key`` at its earliest lock deadline (none: no timer)."""
        found = self.partitions.get(key)
        deadline = None if found is None else found.next_deadline_ms()
        timer = (SHARE_TIMERS, *key)
        if deadline is None:
            self._timers.cancel(timer)
        elif self._timers.deadline_of(timer) != deadline:
            self._timers.schedule(timer, deadline)

    def run_due(self, now_ms: int) -> None:
        """Expire the locks that ran out by ``now_ms``."""
        while (due := self._timers.pop_due(now_ms, SHARE_TIMERS)) is not None:
            _, group_id, topic_id, partition = due.key
            assert (
                isinstance(group_id, str) and isinstance(topic_id, uuid.UUID) and isinstance(partition, int)
            )
            key = (group_id, topic_id, partition)
            found = self.partitions.get(key)
            if found is not None:
                if found.expire(due.deadline_ms):
                    self.persist(key, due.deadline_ms)
                self.rearm(key)

    def next_deadline_ms(self) -> int | None:
        return self._timers.next_deadline_ms(SHARE_TIMERS)

    # -- acknowledgements --------------------------------------------------------------------------

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        key: SharePartitionKey,
        batches: list[AckBatch],
        renew: bool,
        now_ms: int,
    ) -> tuple[ErrorCode, Ticket | None]:
        """One partition's acknowledgements, all or nothing; the ticket of their write."""
        ranges = ack_ranges(batches, renew)
        if ranges is None:
            return ErrorCode.INVALID_REQUEST, None
        found = self.partitions.get(key)
        if found is not None and not self.led(key):
            self.drop(key)
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        error = found.acknowledge_batches(member_id, ranges, now_ms)
        ticket = None if error else self.persist(key, now_ms)
        self.rearm(key)
        return error, ticket

    def release_session(self, session: ShareSession, now_ms: int) -> None:
        """The session ended: what its member holds on its partitions becomes available again."""
        for topic_id, partition in session.partitions:
            key = (session.group_id, topic_id, partition)
            found = self.partitions.get(key)
            if found is not None:
                if found.release_member(session.member_id, now_ms):  # nothing held: nothing written
                    self.persist(key, now_ms)
                self.rearm(key)

    def connection_closed(self, conn_id: int, now_ms: int) -> None:
        """A client's connection closed: its share sessions end and their records are released."""
        for session in self.sessions.of_connection(conn_id):
            self.sessions.remove(session.group_id, session.member_id)
            self.release_session(session, now_ms)
