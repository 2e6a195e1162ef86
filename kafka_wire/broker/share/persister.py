"""The partition leader's side of the share coordinator (Kafka's ``DefaultStatePersister`` and
``PersisterStateManager``): a share-partition's state read from, and written to, the leader of its
``__share_group_state`` partition with ReadShareGroupState and WriteShareGroupState, over the
node's links to its peers (to itself in-process, through the loopback).

One :class:`_Entry` per share-partition key. A **read** (:meth:`StatePersister.read`) goes out once
and its outcome is kept until taken; a **write** (:meth:`StatePersister.write`) hands the whole
state (a snapshot: start offset and every in-flight batch) and gets a :class:`Ticket` for it.
Writes of one key go out one at a time, the newest state each time (a state written replaces the
states before it, so those handed meanwhile are written by it: their tickets are settled
together). The coordinator is found as FindCoordinator's key type 2 finds it: the leader of
partition ``abs(hash("group:topic id:partition")) % n`` of ``__share_group_state``.

Errors, as Kafka's persister handles them: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION (the coordinator's metadata may trail
this node's), REQUEST_TIMED_OUT and no answer at all are retried after :data:`RETRY_BACKOFF_MS`
(the coordinator looked up again); a write not stored within :data:`WRITE_TIMEOUT_MS` fails with
REQUEST_TIMED_OUT. Any other error (FENCED_LEADER_EPOCH: a newer leader read the state;
FENCED_STATE_EPOCH: the state was initialized again, by an offsets reset) fails the key: its
tickets not yet settled get the error (REQUEST_TIMED_OUT for those whose write may have been
stored unknown to this node: it got no answer, or NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
REQUEST_TIMED_OUT from a coordinator that may have appended it and then lost its partition, see
:data:`AMBIGUOUS`), and the share-partition manager drops its memory
(:meth:`StatePersister.take_failed`), so that the next share fetch reads the state again.

Replies are kept until :meth:`StatePersister.poll` (after every engine call), which settles them and
sends what is due; ``next_deadline_ms`` says when a retry is due. No I/O: requests go to the
cluster view's ``send``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC
from kafka_wire.broker.share.state_records import ShareStateKey, StateBatch
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: The wait before a refused or unanswered request goes again (Kafka's persister backs off from
#: 100 ms).
RETRY_BACKOFF_MS: Final = 100
#: How long one request may wait for its answer.
REQUEST_TIMEOUT_MS: Final = 5_000
#: A state not stored within this long fails its key (Kafka's persister gives up after its
#: retries too).
WRITE_TIMEOUT_MS: Final = 15_000

#: Errors after which a request goes again.
RETRIABLE: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)

#: Answers to a write after which it may still have been stored: the coordinator appended it and
#: lost its partition before it was replicated, or the answer was lost.
AMBIGUOUS: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT}
)

#: (group id, topic id, partition).
Key = tuple[str, uuid.UUID, int]


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """A ReadShareGroupState answer: error 0 and the state (start offset -1: none kept)."""

    error_code: int
    leader_epoch: int
    state_epoch: int = 0
    start_offset: int = -1
    batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A share-partition's whole state, as a write hands it."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]


@dataclass(slots=True)
class _Entry:
    key: Key
    #: The read in flight (its leader epoch), its outcome once answered.
    reading: int | None = None
    read: ReadOutcome | None = None
    read_due_ms: int | None = None
    #: The newest state handed, its version; the newest version stored.
    newest: Snapshot | None = None
    version: int = 0
    stored: int = 0
    #: The version in flight, and when the next write may go (None: nothing waits).
    in_flight: int | None = None
    write_due_ms: int | None = None
    #: When the oldest version not yet stored was handed.
    oldest_unstored_ms: int | None = None
    #: Set once the key failed: every ticket not yet settled gets it (REQUEST_TIMED_OUT up to
    #: ``uncertain``).
    failed: int = 0
    #: The newest version a write of which got no answer or a coordinator error: the coordinator
    #: may have appended it (and lost its partition before it was replicated), so it may be stored.
    uncertain: int = 0


@dataclass(frozen=True, slots=True)
class Ticket:
    """A write handed to the persister; :meth:`outcome` says whether it is stored."""

    entry: _Entry
    version: int

    def outcome(self) -> int | None:
        """0 once stored, the error once its key failed, None while neither (a write in flight
        when its key failed settles it by its answer)."""
        entry = self.entry
        if entry.stored >= self.version:
            return ErrorCode.NONE
        if entry.in_flight is not None and self.version <= entry.in_flight:
            return None
        if entry.failed and self.version <= entry.uncertain:
            return ErrorCode.REQUEST_TIMED_OUT  # it may have been stored: its outcome is unknown
        return entry.failed or None


@dataclass(slots=True)
class _Reply:
    key: Key
    entry: _Entry
    #: The write's version (None: a read).
    version: int | None
    body: Message | None


class StatePersister:
    """See the module docstring."""

    def __init__(
        self,
        cluster: ClusterView,
        partition_of: Callable[[ShareStateKey, int], int | None],
        log: logging.Logger | None = None,
    ) -> None:
        self._cluster = cluster
        #: The ``__share_group_state`` partition of a key (None: the topic does not exist yet).
        self._partition_of = partition_of
        self._log = log or logging.getLogger(__name__)
        self._entries: dict[Key, _Entry] = {}
        #: Keys forgotten while a write of theirs was in flight: its answer settles its tickets,
        #: and the key's state is not read again before (the write may still land).
        self._detached: dict[Key, _Entry] = {}
        self._replies: list[_Reply] = []
        self._failed: list[Key] = []
        self._now_ms = 0

    # -- the share-partition manager's side --------------------------------------------------------

    def read(self, key: Key, leader_epoch: int, now_ms: int) -> ReadOutcome | None:
        """The state of ``key`` read at ``leader_epoch``, once answered (taken then); None while
        the read is on its way (sent now when none is)."""
        self._now_ms = max(self._now_ms, now_ms)
        if key in self._detached:
            return None
        entry = self._entry(key)
        if entry.read is not None:
            outcome, entry.read = entry.read, None
            if outcome.leader_epoch == leader_epoch:
                return outcome
        if entry.reading != leader_epoch:
            entry.reading = leader_epoch
            entry.read_due_ms = now_ms
            self._send_read(entry, now_ms)
        return None

    def write(self, key: Key, snapshot: Snapshot, now_ms: int) -> Ticket:
        """Hand ``key``'s whole state; its ticket settles once it (or a newer state) is stored."""
        self._now_ms = max(self._now_ms, now_ms)
        entry = self._entry(key)
        entry.newest = snapshot
        entry.version += 1
        if entry.oldest_unstored_ms is None:
            entry.oldest_unstored_ms = now_ms
        if entry.in_flight is None and entry.write_due_ms is None:
            entry.write_due_ms = now_ms
            self._send_write(entry, now_ms)
        return Ticket(entry, entry.version)

    def forget(self, key: Key, error: int = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        """``key``'s share-partition is dropped here: its unsettled tickets get ``error``; its
        requests in flight are answered to no one."""
        entry = self._entries.pop(key, None)
        if entry is not None and not entry.failed:
            entry.failed = error
            entry.write_due_ms = entry.read_due_ms = None
            if entry.in_flight is not None:
                self._detached[key] = entry

    def take_failed(self) -> list[Key]:
        """The keys that failed since the last call (their share-partitions are to be dropped)."""
        failed, self._failed = self._failed, []
        return failed

    # -- driving -----------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> bool:
        """Settle the replies received, then send the retries due; whether anything moved."""
        self._now_ms = max(self._now_ms, now_ms)
        replies, self._replies = self._replies, []
        for reply in replies:
            if self._detached.get(reply.key) is reply.entry:
                self._settle_detached(reply.entry, reply.version, reply.body)
            elif self._entries.get(reply.key) is reply.entry:
                if reply.version is None:
                    self._settle_read(reply.entry, reply.body, now_ms)
                else:
                    self._settle_write(reply.entry, reply.version, reply.body, now_ms)
        sent = False
        for entry in list(self._entries.values()):
            if entry.reading is not None and entry.read_due_ms is not None and entry.read_due_ms <= now_ms:
                sent = self._send_read(entry, now_ms) or sent
            if entry.in_flight is None and entry.write_due_ms is not None and entry.write_due_ms <= now_ms:
                sent = self._send_write(entry, now_ms) or sent
        return bool(replies) or sent

    def next_deadline_ms(self) -> int | None:
        if self._replies or self._failed:
            return self._now_ms
        due = [
            d
            for e in self._entries.values()
            for d in (
                e.read_due_ms if e.reading is not None else None,
                e.write_due_ms if e.in_flight is None else None,
            )
            if d is not None
        ]
        return min(due, default=None)

    # -- requests ----------------------------------------------------------------------------------

    def _entry(self, key: Key) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(key)
        return entry

    def _coordinator(self, key: Key) -> int | None:
        partition = self._partition_of(ShareStateKey(*key), self._now_ms)
        registration = (
            None if partition is None else self._cluster.partition(SHARE_GROUP_STATE_TOPIC, partition)
        )
        if registration is None or registration.leader < 0:
            return None
        return registration.leader

    def _send_read(self, entry: _Entry, now_ms: int) -> bool:
        leader = self._coordinator(entry.key)
        if leader is None or entry.reading is None:
            entry.read_due_ms = now_ms + RETRY_BACKOFF_MS
            return False
        entry.read_due_ms = None
        group_id, topic_id, partition = entry.key
        body = messages.ReadShareGroupStateRequest(
            group_id=group_id,
            topics=[
                messages.ReadShareGroupStateRequestReadStateData(
                    topic_id=topic_id,
                    partitions=[
                        messages.ReadShareGroupStateRequestPartitionData(
                            partition=partition, leader_epoch=entry.reading
                        )
                    ],
                )
            ],
        )
        self._send(leader, body, entry, None)
        return True

    def _send_write(self, entry: _Entry, now_ms: int) -> bool:
        snapshot = entry.newest
        if snapshot is None or entry.stored >= entry.version:
            entry.write_due_ms = None
            return False
        if entry.oldest_unstored_ms is not None and now_ms - entry.oldest_unstored_ms >= WRITE_TIMEOUT_MS:
            self._fail(entry, ErrorCode.REQUEST_TIMED_OUT)
            return False
        leader = self._coordinator(entry.key)
        if leader is None:
            entry.write_due_ms = now_ms + RETRY_BACKOFF_MS
            return False
        entry.write_due_ms = None
        entry.in_flight = entry.version
        group_id, topic_id, partition = entry.key
        body = messages.WriteShareGroupStateRequest(
            group_id=group_id,
            topics=[
                messages.WriteShareGroupStateRequestWriteStateData(
                    topic_id=topic_id,
                    partitions=[
                        messages.WriteShareGroupStateRequestPartitionData(
                            partition=partition,
                            state_epoch=snapshot.state_epoch,
                            leader_epoch=snapshot.leader_epoch,
                            start_offset=snapshot.start_offset,
                            delivery_complete_count=-1,
                            state_batches=[
                                messages.WriteShareGroupStateRequestStateBatch(
                                    first_offset=f, last_offset=last, delivery_state=s, delivery_count=c
                                )
                                for f, last, s, c in snapshot.batches
                            ],
                        )
                    ],
                )
            ],
        )
        self._send(leader, body, entry, entry.version)
        return True

    def _send(self, leader: int, body: Message, entry: _Entry, version: int | None) -> None:
        key = entry.key

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            self._replies.append(_Reply(key, entry, version, reply))
            self._now_ms = max(self._now_ms, reply_ms)

        cluster = self._cluster
        cluster.send(Outbound(leader, cluster.inter_broker_listener, body, on_reply, REQUEST_TIMEOUT_MS))

    # -- replies -----------------------------------------------------------------------------------

    def _settle_read(self, entry: _Entry, body: Message | None, now_ms: int) -> None:
        leader_epoch = entry.reading
        if leader_epoch is None:
            return
        found = _read_result(body, entry.key)
        if found is None or found.error_code in RETRIABLE:
            entry.read_due_ms = now_ms + RETRY_BACKOFF_MS
            return
        entry.reading = None
        if found.error_code:
            self._log.info(
                "share-partition %s: its state read failed (%s)", entry.key, _name(found.error_code)
            )
            entry.read = ReadOutcome(found.error_code, leader_epoch)
            return
        entry.read = ReadOutcome(
            ErrorCode.NONE,
            leader_epoch,
            found.state_epoch,
            found.start_offset,
            tuple(
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in found.state_batches
            ),
        )

    def _settle_write(self, entry: _Entry, version: int, body: Message | None, now_ms: int) -> None:
        if entry.in_flight != version:
            return
        entry.in_flight = None
        error = _write_error(body, entry.key)
        if error is None or error in AMBIGUOUS:
            entry.uncertain = max(entry.uncertain, version)
        if error is None or error in RETRIABLE:
            entry.write_due_ms = now_ms + RETRY_BACKOFF_MS
            return
        if error:
            self._log.info("share-partition %s: its state write failed (%s)", entry.key, _name(error))
            self._fail(entry, error)
            return
        entry.stored = max(entry.stored, version)
        if entry.stored >= entry.version:
            entry.oldest_unstored_ms = None
        else:  # newer states were handed meanwhile: the newest goes now
            entry.oldest_unstored_ms = (
                now_ms if entry.oldest_unstored_ms is None else entry.oldest_unstored_ms
            )
            entry.write_due_ms = now_ms
            self._send_write(entry, now_ms)

    def _settle_detached(self, entry: _Entry, version: int | None, body: Message | None) -> None:
        """The answer of the write in flight when ``entry``'s key was forgotten: it settles the
        tickets it covers. No answer, or a coordinator error (it may have appended the state and
        lost its partition before it was replicated), leaves their outcome unknown:
        REQUEST_TIMED_OUT."""
        if version is None or entry.in_flight != version:
            return
        error = _write_error(body, entry.key)
        if error == ErrorCode.NONE:
            entry.stored = max(entry.stored, version)
        elif error is None or error in AMBIGUOUS:
            entry.uncertain = max(entry.uncertain, version)
        entry.in_flight = None
        del self._detached[entry.key]

    def _fail(self, entry: _Entry, error: int) -> None:
        entry.failed = error
        entry.write_due_ms = None
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]
            self._failed.append(entry.key)


def _name(code: int) -> str:
    known = ErrorCode.lookup(code)
    return known.name if isinstance(known, ErrorCode) else str(code)


def _read_result(
    body: Message | None, key: Key
) -> messages.ReadShareGroupStateResponsePartitionResult | None:
    if not isinstance(body, messages.ReadShareGroupStateResponse):
        return None
    for topic in body.results:
        if topic.topic_id == key[1]:
            for p in topic.partitions:
                if p.partition == key[2]:
                    return p
    return None


def _write_error(body: Message | None, key: Key) -> int | None:
    if not isinstance(body, messages.WriteShareGroupStateResponse):
        return None
    for topic in body.results:
        if topic.topic_id == key[1]:
            for p in topic.partitions:
                if p.partition == key[2]:
                    return p.error_code
    return None
