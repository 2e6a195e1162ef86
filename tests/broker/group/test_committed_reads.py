"""What Kafka 4.4's coordinator runtime does with writes that are appended but not stored in time,
and what OffsetFetch reads (the coordinator alone, writes held as a replicated log holds them
until its high watermark passes):

* a write appended but not replicated within ``offsets.commit.timeout.ms`` (REQUEST_TIMED_OUT) or
  whose ISR shrank (NOT_ENOUGH_REPLICAS_AFTER_APPEND) fails its request, but what it changed
  stays (``CoordinatorRuntime`` reverts its state only when the append itself fails);
* OffsetFetch without ``require_stable`` reads the state as of the last stored write
  (``GroupCoordinatorService.fetchOffsets``: a read at the last committed offset);
* with ``require_stable`` it reads the latest state and is answered once everything written
  before it is stored (a write operation without records), NOT_COORDINATOR if that times out.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_wire.broker.group import GroupConfig, GroupCoordinator, Persist
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseDescribedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ErrorCode,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from tests.broker.group.harness import CONFIG, DELAYED, Harness
from tests.broker.group.test_consumer_groups import Consumer, converge, harness

E = ErrorCode


def held(config: GroupConfig = CONFIG, coordinator: GroupCoordinator | None = None) -> Harness:
    """A harness whose writes wait for :meth:`Harness.report`, after one stored commit of g."""
    h = Harness(config, coordinator)
    assert h.commit("g", {("t", 0): 5}) == {("t", 0): E.NONE}
    h.held = []
    return h


def hold_commit(h: Harness, group: str, offsets: dict[tuple[str, int], int]) -> tuple[int, Persist]:
    """An OffsetCommit (v8, a simple consumer's) whose write is appended and awaits its outcome:
    (token, the write)."""
    assert h.held is not None
    before = len(h.held)
    request = OffsetCommitRequest(
        group_id=group,
        topics=[
            OffsetCommitRequestTopic(
                name="t",
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                    for (_, p), o in offsets.items()
                ],
            )
        ],
    )
    token = h.send(request, 8)
    assert token not in h.answers and len(h.held) == before + 1
    return token, h.held[-1]


def errors_of(answer: Message) -> list[int]:
    """The partition errors of an OffsetCommit or TxnOffsetCommit answer, in order."""
    assert isinstance(answer, OffsetCommitResponse | TxnOffsetCommitResponse)
    return [p.error_code for t in answer.topics for p in t.partitions]


def offsets_of(h: Harness, group: str = "g") -> dict[tuple[str, int], int]:
    """The group's offsets in memory (its latest state)."""
    snapshot = h.coord.group(group)
    return {} if snapshot is None else {(t, p): v.offset for t, p, v in snapshot.offsets}


def read(h: Harness, group: str = "g", partitions: list[int] | None = None) -> dict[int, int]:
    """What an OffsetFetch v7 without require_stable answers for topic t (all topics: None)."""
    topics = None if partitions is None else [OffsetFetchRequestTopic(name="t", partition_indexes=partitions)]
    answer = h.call(OffsetFetchRequest(group_id=group, topics=topics), 7)
    assert isinstance(answer, OffsetFetchResponse) and answer.error_code == E.NONE
    return {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}


@pytest.mark.parametrize("error", [E.REQUEST_TIMED_OUT, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND])
def test_a_commit_appended_but_not_stored_in_time_stays(error: int) -> None:
    h = held()
    token, write = hold_commit(h, "g", {("t", 0): 6, ("t", 1): 7})
    h.report(write, error)
    assert errors_of(h.answers.pop(token)) == [E.COORDINATOR_NOT_AVAILABLE] * 2
    assert offsets_of(h) == {("t", 0): 6, ("t", 1): 7}, "not taken back: its records are in the log"
    if error == E.REQUEST_TIMED_OUT:
        assert read(h, partitions=[0, 1]) == {0: 5, 1: -1}, "not stored yet: not seen"
        h.replicated(write)  # the high watermark passes it after all
    assert read(h, partitions=[0, 1]) == {0: 6, 1: 7}
    # A "simple" group that a timed-out commit created stays too.
    token, write = hold_commit(h, "new", {("t", 0): 1})
    h.report(write, E.REQUEST_TIMED_OUT)
    h.answers.pop(token)
    assert offsets_of(h, "new") == {("t", 0): 1}


def test_a_read_sees_the_committed_value_while_a_commit_is_in_flight() -> None:
    h = held()
    token, write = hold_commit(h, "g", {("t", 0): 6, ("t", 1): 7})
    assert read(h, partitions=[0, 1, 2]) == {0: 5, 1: -1, 2: -1}
    assert read(h) == {0: 5}, "the fetch of all topics too"
    assert read(h, "absent") == {}
    _, other = hold_commit(h, "g", {("t", 1): 8})  # a second write behind the first
    assert read(h, partitions=[0, 1]) == {0: 5, 1: -1}
    h.report(write)
    assert errors_of(h.answers.pop(token)) == [E.NONE, E.NONE]
    assert read(h, partitions=[0, 1]) == {0: 6, 1: 7}
    h.report(other)
    assert read(h, partitions=[0, 1]) == {0: 6, 1: 8}


@pytest.mark.parametrize("version", [1, 7, 8, 9])
def test_every_version_reads_the_committed_state(version: int) -> None:
    h = held()
    hold_commit(h, "g", {("t", 0): 6})
    if version >= 8:
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0])]
                ),
                OffsetFetchRequestGroup(group_id="g", topics=None),
            ]
        )
        answer = h.call(request, version)
        assert isinstance(answer, OffsetFetchResponse)
        seen = [p.committed_offset for g in answer.groups for t in g.topics for p in t.partitions]
        assert seen == [5, 5]
    else:
        answer = h.call(
            OffsetFetchRequest(
                group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
            ),
            version,
        )
        assert isinstance(answer, OffsetFetchResponse)
        assert [p.committed_offset for t in answer.topics for p in t.partitions] == [5]


def stable_read(h: Harness, version: int = 7) -> int:
    """Send an OffsetFetch with require_stable for g's t-0 and t-1: its token."""
    if version >= 8:
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])]
                )
            ],
            require_stable=True,
        )
    else:
        request = OffsetFetchRequest(
            group_id="g",
            topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
            require_stable=True,
        )
    return h.send(request, version)


def stable_answer(h: Harness, token: int) -> tuple[int, dict[int, int]]:
    answer = h.answers.pop(token)
    assert isinstance(answer, OffsetFetchResponse)
    if answer.groups:
        (group,) = answer.groups
        return group.error_code, {
            p.partition_index: p.committed_offset for t in group.topics for p in t.partitions
        }
    return answer.error_code, {
        p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions
    }


@pytest.mark.parametrize("version", [7, 8])
def test_a_stable_read_waits_for_the_writes_before_it_and_sees_them(version: int) -> None:
    h = held()
    _, write = hold_commit(h, "g", {("t", 0): 6, ("t", 1): 7})
    assert h.held is not None
    fetch = stable_read(h, version)
    assert fetch not in h.answers
    (wait,) = h.held[1:]
    assert wait.records == [], "a write without records"
    h.report(write)
    h.report(wait)
    assert stable_answer(h, fetch) == (E.NONE, {0: 6, 1: 7})
    # Nothing in flight: it still waits for its own turn, and is answered once that is stored.
    fetch = stable_read(h, version)
    (wait,) = h.held
    h.report(wait)
    assert stable_answer(h, fetch) == (E.NONE, {0: 6, 1: 7})


@pytest.mark.parametrize("version", [7, 8])
def test_a_stable_read_not_stored_in_time_is_not_coordinator(version: int) -> None:
    h = held()
    fetch = stable_read(h, version)
    assert h.held is not None
    (wait,) = h.held
    h.report(wait, E.REQUEST_TIMED_OUT)
    assert stable_answer(h, fetch) == (E.NOT_COORDINATOR, {})


def test_an_offset_delete_in_flight_is_not_seen_and_a_timed_out_one_stays() -> None:
    h = held()
    assert h.held is not None
    request = OffsetDeleteRequest(
        group_id="g",
        topics=[
            OffsetDeleteRequestTopic(name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])
        ],
    )
    token = h.send(request, 0)
    (write,) = h.held
    assert offsets_of(h) == {} and read(h, partitions=[0]) == {0: 5}
    h.report(write, E.REQUEST_TIMED_OUT)
    answer = h.answers.pop(token)
    assert isinstance(answer, OffsetDeleteResponse) and answer.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert offsets_of(h) == {}, "the tombstone is in the log: the offset stays deleted"
    assert read(h, partitions=[0]) == {0: 5}
    h.replicated(write)
    assert read(h, partitions=[0]) == {0: -1}


def test_a_group_deletion_in_flight_shows_the_group_and_a_timed_out_one_stays() -> None:
    h = held()
    assert h.held is not None
    token = h.send(DeleteGroupsRequest(groups_names=["g"]), 2)
    (write,) = h.held
    assert h.coord.group("g") is None and read(h, partitions=[0]) == {0: 5}
    h.report(write, E.REQUEST_TIMED_OUT)
    answer = h.answers.pop(token)
    assert isinstance(answer, DeleteGroupsResponse)
    assert answer.results[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.coord.group("g") is None, "its tombstones are in the log: it stays deleted"
    h.replicated(write)
    assert read(h, partitions=[0]) == {0: -1}


def test_expiry_tombstones_not_stored_in_time_stay() -> None:
    h = Harness(CONFIG)
    h.commit("g", {("t", 0): 1}, version=2, retention_ms=5_000)
    h.commit("g", {("t", 1): 2})
    h.held = []
    h.advance(CONFIG.offsets_retention_check_interval_ms)
    (write,) = h.held
    assert offsets_of(h) == {("t", 1): 2} and read(h, partitions=[0, 1]) == {0: 1, 1: 2}
    h.report(write, E.REQUEST_TIMED_OUT)
    assert offsets_of(h) == {("t", 1): 2}, "not tried again: the tombstone is in the log"
    h.advance(CONFIG.offsets_retention_check_interval_ms)
    assert len(h.held) == 0


def test_a_timed_out_group_creation_answers_the_join_and_keeps_the_group() -> None:
    h = Harness(DELAYED)
    h.held = []
    token = h.join("g", version=3)  # v3: the member is added at once, its join waits
    (write,) = h.held
    h.report(write, E.REQUEST_TIMED_OUT)
    answer = h.answers.pop(token)
    assert isinstance(answer, JoinGroupResponse) and answer.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.coord.group("g") is not None, "its record is in the log: the group stays"


def txn_commit(h: Harness, offset: int) -> int:
    return h.send(
        TxnOffsetCommitRequest(
            transactional_id="tx",
            group_id="g",
            producer_id=40,
            producer_epoch=0,
            generation_id_or_member_epoch=-1,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name="t",
                    partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
                )
            ],
        ),
        3,
    )


def test_transactional_offsets_are_pending_from_their_append_and_kept_when_timed_out() -> None:
    h = held()
    assert h.held is not None
    token = txn_commit(h, 9)
    (write,) = h.held
    fetch = stable_read(h)  # the transaction's offset is in the log, not yet stored
    assert h.held[-1].records == []
    h.report(h.held[-1])
    assert unstable(h, fetch) == [E.UNSTABLE_OFFSET_COMMIT, E.NONE]
    h.report(write, E.REQUEST_TIMED_OUT)
    assert errors_of(h.answers.pop(token)) == [E.COORDINATOR_NOT_AVAILABLE]
    fetch = stable_read(h)
    h.report(h.held[-1])
    assert unstable(h, fetch) == [E.UNSTABLE_OFFSET_COMMIT, E.NONE], "kept pending: it is in the log"
    h.coord.transactions_ended([(write.partition, 40, True)], h.now)
    assert read(h, partitions=[0]) == {0: 9}


def unstable(h: Harness, token: int) -> list[int]:
    answer = h.answers.pop(token)
    assert isinstance(answer, OffsetFetchResponse)
    return [p.error_code for t in answer.topics for p in t.partitions]


def test_a_consumer_group_member_is_checked_against_the_stored_state() -> None:
    h = harness()
    a = Consumer(h, "a")
    converge([a])
    assert h.commit("g", {("t", 0): 7}, generation=a.epoch, member_id="a", version=9) == {("t", 0): 0}
    h.held = []
    b = Consumer(h, "b")
    h.send(b.request(), 1)  # b joins: the group epoch moves, in a write not stored yet
    (write,) = h.held
    request = OffsetFetchRequest(
        groups=[OffsetFetchRequestGroup(group_id="g", member_id="a", member_epoch=a.epoch, topics=None)]
    )
    answer = h.call(request, 9)
    assert isinstance(answer, OffsetFetchResponse)
    assert answer.groups[0].error_code == E.NONE
    assert answer.groups[0].topics[0].partitions[0].committed_offset == 7
    unknown = h.call(
        OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", member_id="b", member_epoch=1, topics=None)]
        ),
        9,
    )
    assert isinstance(unknown, OffsetFetchResponse)
    assert unknown.groups[0].error_code == E.UNKNOWN_MEMBER_ID, "b is not a member of the stored group yet"
    h.report(write)
    view = h.coord.consumer_group_view("g")
    assert view is not None
    epoch = view.members["b"].member_epoch
    known = h.call(
        OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", member_id="b", member_epoch=epoch, topics=None)]
        ),
        9,
    )
    assert isinstance(known, OffsetFetchResponse) and known.groups[0].error_code == E.NONE


def test_consumer_group_describe_reads_the_stored_group() -> None:
    """ConsumerGroupDescribe reads at the last stored write (Kafka 4.4's ``consumerGroupDescribe``
    is a read at the partition's last committed offset): a group whose first records are not
    stored does not exist yet, a member whose join is not stored is not listed."""
    h = harness()
    h.held = []
    a = Consumer(h, "a")
    h.send(a.request(), 1)  # the group is made, in a write not stored yet

    def described() -> ConsumerGroupDescribeResponseDescribedGroup:
        answer = h.call(ConsumerGroupDescribeRequest(group_ids=["g"]), 0)
        assert isinstance(answer, ConsumerGroupDescribeResponse)
        (group,) = answer.groups
        return group

    assert described().error_code == E.GROUP_ID_NOT_FOUND
    for write in list(h.held):
        h.report(write)
    assert described().error_code == E.NONE and [m.member_id for m in described().members] == ["a"]
    h.held = None  # writes stored at once
    converge([a])
    epoch = described().group_epoch
    h.held = []
    b = Consumer(h, "b")
    h.send(b.request(), 1)  # b joins: not stored yet
    assert h.held
    seen = described()
    assert [m.member_id for m in seen.members] == ["a"] and seen.group_epoch == epoch
    for write in list(h.held):
        h.report(write)
    seen = described()
    assert sorted(m.member_id for m in seen.members) == ["a", "b"] and seen.group_epoch > epoch


def test_ids_name_topics_from_version_10() -> None:
    known = uuid.UUID(int=7)
    coordinator = GroupCoordinator(
        CONFIG,
        topic_name_of=lambda topic_id: "t" if topic_id == known else None,
        topic_id_of=lambda name: known if name == "t" else None,
    )
    h = held(CONFIG, coordinator)
    hold_commit(h, "g", {("t", 0): 6})
    answer = h.call(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id="g", topics=[OffsetFetchRequestTopics(topic_id=known, partition_indexes=[0])]
                )
            ]
        ),
        10,
    )
    assert isinstance(answer, OffsetFetchResponse)
    assert answer.groups[0].topics[0].partitions[0].committed_offset == 5
