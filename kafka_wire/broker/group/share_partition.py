"""One share-partition of a KIP-932 share group: which records are in flight, who holds them and
how often they were delivered (Kafka's ``SharePartition``), as a pure state machine.

The share-partition start offset (SPSO) is the first record not yet done with; records before
it were acknowledged or archived. From it, at most ``max_in_flight`` records are in flight
(``group.share.partition.max.record.locks``), each with a state (:class:`RecordState`, moved only
through :data:`RECORD_TRANSITIONS`) and a delivery count:

* a share fetch **acquires** available records for a member (redeliveries first, then records
  past the end of the in-flight window, up to the high watermark), each for
  ``lock_duration_ms`` (``group.share.record.lock.duration.ms``), and counts a delivery;
* the member **acknowledges** acquired records: accept (done), release (available again), reject
  (archived: never delivered again), renew (held for another lock duration), or gap (no record
  at that offset: archived);
* a lock that **expires** makes its record available again;
* a record released or expired after ``delivery_limit`` deliveries
  (``group.share.delivery.count.limit``) is archived instead: a poison record is delivered at
  most that many times.

An acknowledgement is checked whole before anything moves (INVALID_RECORD_STATE for a record not
acquired by the member, INVALID_REQUEST for offsets past the in-flight records), as Kafka rolls a
refused batch back. Time comes in as ``now_ms``; :meth:`SharePartition.next_deadline_ms` says when
a lock expires next.
"""

from __future__ import annotations

import enum
from typing import Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.group.share_defaults import (
    DEFAULT_DELIVERY_LIMIT,
    DEFAULT_LOCK_DURATION_MS,
    DEFAULT_MAX_IN_FLIGHT,
)
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.machine import step
from kafka_wire.quick_dataclass import dataclass


class RecordState(enum.IntEnum):
    """A record's state; the values are Kafka's (stored in share-group state batches)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch / ShareAcknowledge acknowledge types (RENEW: v2)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class RecordInput(enum.Enum):
    ACQUIRE = "acquire"
    ACCEPT = "accept"
    RELEASE = "release"
    REJECT = "reject"
    RENEW = "renew"
    LOCK_EXPIRED = "lock_expired"
    #: Released or expired at the delivery limit, or a gap.
    ARCHIVE = "archive"


R, I = RecordState, RecordInput  # noqa: E741

#: ``(state, input) -> state``. Acknowledged and archived records never move again.
RECORD_TRANSITIONS: Final[dict[tuple[RecordState, RecordInput], RecordState]] = {
    (R.AVAILABLE, I.ACQUIRE): R.ACQUIRED,
    (R.AVAILABLE, I.ARCHIVE): R.ARCHIVED,
    (R.ACQUIRED, I.ACCEPT): R.ACKNOWLEDGED,
    (R.ACQUIRED, I.RELEASE): R.AVAILABLE,
    (R.ACQUIRED, I.REJECT): R.ARCHIVED,
    (R.ACQUIRED, I.RENEW): R.ACQUIRED,
    (R.ACQUIRED, I.LOCK_EXPIRED): R.AVAILABLE,
    (R.ACQUIRED, I.ARCHIVE): R.ARCHIVED,
}

_BY_TYPE: Final = {
    AcknowledgeType.GAP: I.ARCHIVE,
    AcknowledgeType.ACCEPT: I.ACCEPT,
    AcknowledgeType.RELEASE: I.RELEASE,
    AcknowledgeType.REJECT: I.REJECT,
    AcknowledgeType.RENEW: I.RENEW,
}


@dataclass(slots=True)
class InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str = ""
    #: When the acquisition lock runs out (ACQUIRED only).
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class Acquired:
    """Records ``first..last`` acquired, each delivered ``delivery_count`` times so far."""

    first: int
    last: int
    delivery_count: int


class SharePartition:
    """See the module docstring."""

    def __init__(
        self,
        start_offset: int,
        *,
        lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS,
        delivery_limit: int = DEFAULT_DELIVERY_LIMIT,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        hooks: Hooks = OFF,
    ) -> None:
        self.hooks = hooks
        self.start_offset = start_offset
        #: The next offset never fetched: the end of the in-flight window.
        self.end_offset = start_offset
        self.lock_duration_ms = lock_duration_ms
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        self.records: dict[int, InFlight] = {}
        #: The records the start offset moved past since the last :meth:`persisted_view` (their
        #: final state and delivery count): the next state written still lists them.
        self._passed: dict[int, tuple[RecordState, int]] = {}
        #: The latest time seen (the planted ``share-lock-ignored`` reads it).
        self._now_ms = 0

    # -- acquiring ---------------------------------------------------------------------------------

    def acquire(self, member_id: str, high_watermark: int, max_records: int, now_ms: int) -> list[Acquired]:
        """Acquire up to ``max_records`` records for ``member_id``: available ones in the window
        first, then new ones, all below ``high_watermark`` (or below the end of the batches a share
        fetch read) and within the in-flight limit."""
        self.expire(now_ms)
        archived = False
        taken: list[tuple[int, int]] = []
        available = (o for o, r in self.records.items() if self._available(r, now_ms) and o < high_watermark)
        for offset in sorted(available):
            if len(taken) >= max_records:
                break
            record = self.records[offset]
            if record.state is RecordState.ACQUIRED:  # only with share-lock-ignored
                record.state = RecordState.AVAILABLE
            if record.delivery_count >= self._limit():
                # delivered as often as allowed: its last lock ended with its leader (a restart,
                # a failover: restored as available), so it is archived, not delivered again
                record.state = step(RECORD_TRANSITIONS, record.state, I.ARCHIVE, machine="share record")
                archived = True
                continue
            taken.append((offset, self._take(self.records[offset], member_id, now_ms)))
        limit = min(high_watermark, self.start_offset + self.max_in_flight)
        while len(taken) < max_records and self.end_offset < limit:
            record = self.records[self.end_offset] = InFlight()
            taken.append((self.end_offset, self._take(record, member_id, now_ms)))
            self.end_offset += 1
        if archived:
            self._advance()
        taken.sort()
        out: list[Acquired] = []
        for offset, count in taken:
            if out and out[-1].last == offset - 1 and out[-1].delivery_count == count:
                out[-1] = Acquired(out[-1].first, offset, count)
            else:
                out.append(Acquired(offset, offset, count))
        return out

    def archive_aborted(self, acquired: list[Acquired], aborted: list[tuple[int, int]]) -> list[Acquired]:
        """A read_committed fetch's acquisition without the batches of aborted transactions it
        read (``aborted``: their ``(base, last)`` offsets): their acquired records are archived,
        never delivered (Kafka 4.4's ``SharePartition`` archives them and leaves them out of the
        acquired records; the start offset moves past them at the next acknowledgement)."""
        if not aborted:
            return acquired
        dropped: set[int] = set()
        for base, last in aborted:
            for offset in range(base, last + 1):
                record = self.records.get(offset)
                if record is not None and record.state is RecordState.ACQUIRED:
                    self._settle(record, I.ARCHIVE)
                    dropped.add(offset)
        out: list[Acquired] = []
        for run in acquired:
            for offset in range(run.first, run.last + 1):
                if offset in dropped:
                    continue
                if out and out[-1].last == offset - 1 and out[-1].delivery_count == run.delivery_count:
                    out[-1] = Acquired(out[-1].first, offset, run.delivery_count)
                else:
                    out.append(Acquired(offset, offset, run.delivery_count))
        return out

    def _available(self, record: InFlight, now_ms: int) -> bool:
        if record.state is RecordState.AVAILABLE:
            return True
        # planted bug: a lock past half its duration counts as run out (the lock clock read at
        # the wrong scale), so a record another member holds is acquired again
        return (
            record.state is RecordState.ACQUIRED
            and record.deadline_ms - now_ms < self.lock_duration_ms // 2
            and self.hooks.planted("share-lock-ignored")
        )

    def next_fetch_offset(self) -> int:
        """Where a share fetch reads from: the first available record of the window, else its end."""
        available = [o for o, r in self.records.items() if self._available(r, self._now_ms)]
        return min(available, default=self.end_offset)

    def can_acquire(self, high_watermark: int, now_ms: int) -> bool:
        """Whether :meth:`acquire` would hand out a record now."""
        self.expire(now_ms)
        if any(self._available(r, now_ms) for r in self.records.values()):
            return True
        return self.end_offset < min(high_watermark, self.start_offset + self.max_in_flight)

    def _take(self, record: InFlight, member_id: str, now_ms: int) -> int:
        record.state = step(RECORD_TRANSITIONS, record.state, I.ACQUIRE, machine="share record")
        record.delivery_count += 1
        record.member_id = member_id
        record.deadline_ms = now_ms + self.lock_duration_ms
        return record.delivery_count

    # -- acknowledging -----------------------------------------------------------------------------

    def acknowledge(
        self, member_id: str, first: int, last: int, kind: AcknowledgeType, now_ms: int
    ) -> ErrorCode:
        """Acknowledge ``first..last`` for ``member_id``: all of it, or nothing and the error."""
        self.expire(now_ms)
        if last < first or first < 0:
            return ErrorCode.INVALID_REQUEST
        if last >= self.end_offset:
            return ErrorCode.INVALID_REQUEST  # past the acquired records
        for offset in range(first, last + 1):
            record = self.records.get(offset)  # None: before the start offset, done with
            if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
        for offset in range(first, last + 1):
            record = self.records[offset]
            if kind is AcknowledgeType.RENEW:
                record.deadline_ms = now_ms + self.lock_duration_ms
            else:
                self._settle(record, _BY_TYPE[kind])
        self._advance()
        return ErrorCode.NONE

    def acknowledge_batches(
        self, member_id: str, batches: list[tuple[int, int, AcknowledgeType]], now_ms: int
    ) -> ErrorCode:
        """Acknowledge several ranges (ascending, not overlapping: the caller checks) as one: all of
        them, or none and the first error (Kafka rolls a partition's refused acknowledgements back)."""
        self.expire(now_ms)
        for first, last, _ in batches:
            if last < first or first < 0 or last >= self.end_offset:
                return ErrorCode.INVALID_REQUEST
            for offset in range(first, last + 1):
                record = self.records.get(offset)
                if (
                    record is None
                    or record.state is not RecordState.ACQUIRED
                    or record.member_id != member_id
                ):
                    return ErrorCode.INVALID_RECORD_STATE
        for first, last, kind in batches:
            for offset in range(first, last + 1):
                record = self.records[offset]
                if kind is AcknowledgeType.RENEW:
                    record.deadline_ms = now_ms + self.lock_duration_ms
                else:
                    self._settle(record, _BY_TYPE[kind])
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member_id: str, now_ms: int) -> bool:
        """Everything ``member_id`` holds becomes available again (it left, or its share session
        closed), archived at the delivery limit; whether anything changed."""
        changed = bool(self.expire(now_ms))
        for record in self.records.values():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._settle(record, I.RELEASE)
                changed = True
        start = self.start_offset
        self._advance()
        return changed or self.start_offset != start

    def _settle(self, record: InFlight, move: RecordInput) -> None:
        if move in (I.RELEASE, I.LOCK_EXPIRED) and record.delivery_count >= self._limit():
            move = I.ARCHIVE  # a poison record: delivered as often as allowed
        record.state = step(RECORD_TRANSITIONS, record.state, move, machine="share record")
        if record.state is not RecordState.ACQUIRED:
            record.member_id = ""

    def _limit(self) -> int:
        """The delivery limit (one more with the planted ``share-past-delivery-limit``)."""
        return self.delivery_limit + (1 if self.hooks.planted("share-past-delivery-limit") else 0)

    def _advance(self) -> None:
        """Move the start offset past the records done with."""
        while (record := self.records.get(self.start_offset)) is not None and record.state in (
            RecordState.ACKNOWLEDGED,
            RecordState.ARCHIVED,
        ):
            self._passed[self.start_offset] = (record.state, record.delivery_count)
            del self.records[self.start_offset]
            self.start_offset += 1

    # -- time --------------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        deadlines = [r.deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines, default=None)

    def expire(self, now_ms: int) -> list[int]:
        """Release the records whose lock ran out by ``now_ms``; their offsets."""
        self._now_ms = max(self._now_ms, now_ms)
        expired = [
            o for o, r in self.records.items() if r.state is RecordState.ACQUIRED and r.deadline_ms <= now_ms
        ]
        for offset in expired:
            self._settle(self.records[offset], I.LOCK_EXPIRED)
        if self.hooks.planted("share-accepted-redelivered"):
            # planted bug: an accepted record's lock still runs, and its end makes it available
            for offset, r in self.records.items():
                if r.state is RecordState.ACKNOWLEDGED and 0 < r.deadline_ms <= now_ms:
                    r.state, r.deadline_ms = RecordState.AVAILABLE, 0
                    expired.append(offset)
        if expired:
            self._advance()
        return expired

    def restore(self, batches: list[tuple[int, int, int, int]]) -> None:
        """Take back in-flight records as the share coordinator kept them: ``(first, last, state,
        delivery count)`` runs at or after the start offset (acquired ones were stored as
        available)."""
        window_end = self.start_offset + self.max_in_flight  # nothing beyond can be in flight
        for first, last, state, count in batches:
            kept = RecordState(state) if state in RecordState._value2member_map_ else RecordState.AVAILABLE
            if kept is RecordState.ACQUIRED:
                kept = RecordState.AVAILABLE
            for offset in range(max(first, self.start_offset), min(last + 1, window_end)):
                self.records[offset] = InFlight(state=kept, delivery_count=count)
                self.end_offset = max(self.end_offset, offset + 1)
        self._advance()

    # -- views -------------------------------------------------------------------------------------

    def persisted_view(self) -> tuple[int, list[tuple[int, int, RecordState, int]]]:
        """The state to write: the start offset before the change written (Kafka's leader writes
        a change, then moves its start offset past what it finished: the state kept lags one write
        behind, the records done with listed after it) and the in-flight records as
        :meth:`state_batches`. It starts the next change."""
        passed, self._passed = self._passed, {}
        if not passed:
            return self.start_offset, self.state_batches()
        out: list[tuple[int, int, RecordState, int]] = []
        for offset in sorted(passed):
            state, count = passed[offset]
            if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
                out[-1] = (out[-1][0], offset, state, count)
            else:
                out.append((offset, offset, state, count))
        return min(passed), out + self.state_batches()

    def state_batches(self) -> list[tuple[int, int, RecordState, int]]:
        """The in-flight records as ``(first, last, state, delivery count)`` runs, as the share
        coordinator stores them (acquired records stored as available: a lock does not outlive
        the broker)."""
        out: list[tuple[int, int, RecordState, int]] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            state = RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, record.delivery_count):
                out[-1] = (out[-1][0], offset, state, record.delivery_count)
            else:
                out.append((offset, offset, state, record.delivery_count))
        return out
