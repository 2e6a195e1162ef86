"""The share-partition state machine (KIP-932): scripted cases, then a Hypothesis state machine
with the simulator's share invariants: a record is held by at most one member, never acquired
again once acknowledged or archived, delivery counts never decrease nor pass the limit, the start
offset only passes records done with, and the in-flight window stays within its limit."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.broker.group.share_partition import (
    RECORD_TRANSITIONS,
    AcknowledgeType,
    Acquired,
    RecordState,
    SharePartition,
)
from kafka_wire.messages import ErrorCode

A = AcknowledgeType
E = ErrorCode


def test_acquire_acknowledge_and_the_start_offset() -> None:
    sp = SharePartition(10, lock_duration_ms=1000)
    assert sp.acquire("a", high_watermark=15, max_records=3, now_ms=0) == [Acquired(10, 12, 1)]
    assert sp.acquire("b", high_watermark=15, max_records=10, now_ms=0) == [Acquired(13, 14, 1)]
    assert sp.acknowledge("b", 10, 10, A.ACCEPT, 1) == E.INVALID_RECORD_STATE  # a's record
    assert sp.acknowledge("a", 10, 11, A.ACCEPT, 1) == E.NONE
    assert sp.start_offset == 12
    assert sp.acknowledge("a", 12, 20, A.ACCEPT, 1) == E.INVALID_REQUEST  # past the acquired records
    assert sp.acknowledge("a", 10, 10, A.ACCEPT, 1) == E.INVALID_RECORD_STATE  # done with
    assert sp.acknowledge("a", 12, 12, A.RELEASE, 1) == E.NONE
    assert sp.acquire("b", 15, 10, 2) == [Acquired(12, 12, 2)]  # the redelivery comes first


def test_locks_expire_renew_and_poison_records_are_archived() -> None:
    sp = SharePartition(0, lock_duration_ms=100, delivery_limit=2)
    sp.acquire("a", 2, 2, now_ms=0)
    assert sp.next_deadline_ms() == 100
    assert sp.acknowledge("a", 1, 1, A.RENEW, 50) == E.NONE
    assert sp.expire(100) == [0]  # 1 was renewed
    assert sp.acquire("b", 2, 5, 100) == [Acquired(0, 0, 2)]
    assert sp.expire(150) == [1]
    assert sp.expire(200) == [0]  # its second delivery: archived, never delivered again
    assert sp.start_offset == 1 and 0 not in sp.records
    assert sp.acquire("b", 2, 5, 200) == [Acquired(1, 1, 2)]
    assert sp.acknowledge("b", 1, 1, A.REJECT, 210) == E.NONE
    assert sp.start_offset == 2 and sp.acquire("a", 2, 5, 220) == []


def test_aborted_batches_are_archived_not_delivered() -> None:
    """read_committed (Kafka 4.4's ``SharePartition``): the acquired records of the batches of an
    aborted transaction are archived and left out of the acquisition; the others (its ABORT marker
    among them) stay acquired; the start offset moves past the archived ones at the next
    acknowledgement."""
    sp = SharePartition(0, lock_duration_ms=1000)
    acquired = sp.acquire("a", high_watermark=8, max_records=10, now_ms=0)
    assert acquired == [Acquired(0, 7, 1)]
    # 0-2 aborted, 3 its marker, 4-5 committed, 6 their marker, 7 aborted again
    assert sp.archive_aborted(acquired, [(0, 2), (7, 7)]) == [Acquired(3, 6, 1)]
    assert [sp.records[o].state for o in (0, 2, 3, 7)] == [
        RecordState.ARCHIVED,
        RecordState.ARCHIVED,
        RecordState.ACQUIRED,
        RecordState.ARCHIVED,
    ]
    assert sp.records[0].member_id == "" and sp.records[0].delivery_count == 1
    assert sp.start_offset == 0
    assert sp.acknowledge("a", 0, 0, A.ACCEPT, 1) == E.INVALID_RECORD_STATE  # not the member's
    assert sp.acknowledge("a", 3, 3, A.GAP, 1) == E.NONE
    assert sp.start_offset == 4
    assert sp.acknowledge("a", 4, 6, A.ACCEPT, 1) == E.NONE
    assert sp.start_offset == 8 and sp.records == {}
    assert sp.archive_aborted([Acquired(8, 9, 1)], []) == [Acquired(8, 9, 1)]


def test_the_in_flight_window_bounds_acquisition() -> None:
    sp = SharePartition(0, max_in_flight=4)
    assert sp.acquire("a", 100, 10, 0) == [Acquired(0, 3, 1)]
    assert sp.acquire("a", 100, 10, 0) == []
    sp.acknowledge("a", 0, 1, A.ACCEPT, 0)
    assert sp.acquire("a", 100, 10, 0) == [Acquired(4, 5, 1)]


def test_a_leaving_member_gives_its_records_back() -> None:
    sp = SharePartition(0)
    sp.acquire("a", 3, 3, 0)
    sp.release_member("a", 1)
    assert sp.acquire("b", 3, 3, 2) == [Acquired(0, 2, 2)]


def test_done_records_never_move_again() -> None:
    for (state, _), _target in RECORD_TRANSITIONS.items():
        assert state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


MEMBERS = ("a", "b", "c")
LIMIT, WINDOW = 3, 8


class ShareRecords(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sp = SharePartition(0, lock_duration_ms=100, delivery_limit=LIMIT, max_in_flight=WINDOW)
        self.now = 0
        self.hw = 0
        self.counts: dict[int, int] = {}
        self.done: set[int] = set()

    @rule(grow=st.integers(0, 5))
    def produce(self, grow: int) -> None:
        self.hw += grow

    @rule(member=st.sampled_from(MEMBERS), n=st.integers(1, 6))
    def acquire(self, member: str, n: int) -> None:
        for batch in self.sp.acquire(member, self.hw, n, self.now):
            for offset in range(batch.first, batch.last + 1):
                assert offset not in self.done, f"{offset} acquired after it was done with"
                assert batch.delivery_count > self.counts.get(offset, 0)
                self.counts[offset] = batch.delivery_count

    @rule(
        member=st.sampled_from(MEMBERS),
        first=st.integers(0, 40),
        span=st.integers(0, 3),
        kind=st.sampled_from(list(AcknowledgeType)),
    )
    def acknowledge(self, member: str, first: int, span: int, kind: AcknowledgeType) -> None:
        held = {
            o
            for o in range(first, first + span + 1)
            if (r := self.sp.records.get(o)) is not None
            and r.state is RecordState.ACQUIRED
            and r.member_id == member
            and r.deadline_ms > self.now
        }
        error = self.sp.acknowledge(member, first, first + span, kind, self.now)
        if error == E.NONE:
            assert len(held) == span + 1, "an acknowledgement of records the member does not hold"
            if kind in (A.ACCEPT, A.REJECT, A.GAP):
                self.done.update(held)
        else:
            assert len(held) < span + 1 or first + span >= self.sp.end_offset

    @rule(ms=st.integers(1, 120))
    def tick(self, ms: int) -> None:
        self.now += ms
        self.sp.expire(self.now)

    @invariant()
    def consistent(self) -> None:
        sp = self.sp
        assert sp.end_offset - sp.start_offset <= WINDOW
        for offset, record in sp.records.items():
            assert sp.start_offset <= offset < sp.end_offset
            assert (record.state is RecordState.ACQUIRED) == bool(record.member_id)
            assert record.delivery_count <= LIMIT
            assert record.delivery_count == self.counts.get(offset, 0)
            if record.state is RecordState.ARCHIVED:
                self.done.add(offset)
        for offset in range(sp.start_offset):
            # Passed only once done with: acknowledged, rejected, or archived at the limit.
            assert offset in self.done or self.counts[offset] >= LIMIT


TestShareRecords = ShareRecords.TestCase


def test_a_restored_state_is_kept_to_the_in_flight_window() -> None:
    """A kept batch spanning more offsets than can be in flight (a corrupt or foreign state)
    restores only the window."""
    partition = SharePartition(100, max_in_flight=10)
    partition.restore([(0, 1 << 60, int(RecordState.AVAILABLE), 2)])
    assert sorted(partition.records) == list(range(100, 110)) and partition.end_offset == 110
