"""Transactional offsets (TxnOffsetCommit) against the other offset writes, as Kafka 4.4's
``OffsetMetadataManager`` orders them:

* at the producer's COMMIT marker, a pending offset becomes the partition's committed offset only
  if its record comes after the record of the committed offset in the log
  (``replayEndTransactionMarker`` compares the two records' offsets): an OffsetCommit written
  after the TxnOffsetCommit, before the marker, stays;
* an offset tombstone (OffsetDelete, DeleteGroups, a deleted topic) drops the partition's pending
  offsets of every producer (``replay`` of a tombstone); OffsetDelete and DeleteGroups write one
  for a partition that only a transaction holds, and retention does not delete a group with an
  open transaction (``cleanupExpiredOffsets``);
* replaying ``__consumer_offsets`` gives the state the live coordinator had, also when the
  coordinator that loaded it goes on writing.
"""

from __future__ import annotations

from kafka_wire.broker.group import GroupCoordinator, Persist
from kafka_wire.broker.group.records import OffsetCommitKey, decode_key
from kafka_wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ErrorCode,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from tests.broker.group.harness import CONFIG, Harness
from tests.broker.group.test_committed_reads import hold_commit

E = ErrorCode

#: The partitions of topic t the tests look at.
PARTITIONS = [0, 1, 2, 3]


def txn_commit(h: Harness, producer_id: int, offsets: dict[int, int], group: str = "g") -> None:
    """A TxnOffsetCommit (v3, a simple consumer's) of ``offsets`` (partition of t -> offset)."""
    answer = h.call(
        TxnOffsetCommitRequest(
            transactional_id=f"tx-{producer_id}",
            group_id=group,
            producer_id=producer_id,
            producer_epoch=0,
            generation_id_or_member_epoch=-1,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                        for p, o in offsets.items()
                    ],
                )
            ],
        ),
        3,
    )
    assert isinstance(answer, TxnOffsetCommitResponse)
    assert [p.error_code for t in answer.topics for p in t.partitions] == [E.NONE] * len(offsets)


def commit(h: Harness, offsets: dict[int, int], group: str = "g") -> None:
    assert h.commit(group, {("t", p): o for p, o in offsets.items()}) == dict.fromkeys(
        (("t", p) for p in offsets), E.NONE
    )


def offsets_of(coordinator: GroupCoordinator, group: str = "g") -> dict[int, int]:
    """The group's committed offsets of t in memory."""
    snapshot = coordinator.group(group)
    return {} if snapshot is None else {p: v.offset for t, p, v in snapshot.offsets if t == "t"}


def unstable(h: Harness, group: str = "g") -> list[int]:
    """The partitions of t a stable OffsetFetch answers UNSTABLE_OFFSET_COMMIT: those a
    transaction holds an offset of."""
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequestTopic(name="t", partition_indexes=PARTITIONS)],
        require_stable=True,
    )
    answer = h.call(request, 7)
    assert isinstance(answer, OffsetFetchResponse) and answer.error_code == E.NONE
    return [p.partition_index for t in answer.topics for p in t.partitions if p.error_code]


def offset_delete(h: Harness, *partitions: int, group: str = "g") -> None:
    request = OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequestTopic(
                name="t", partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in partitions]
            )
        ],
    )
    answer = h.call(request, 0)
    assert isinstance(answer, OffsetDeleteResponse) and answer.error_code == E.NONE
    assert [p.error_code for t in answer.topics for p in t.partitions] == [E.NONE] * len(partitions)


def tombstoned(write: Persist) -> list[int]:
    """The partitions of t whose offset tombstones ``write`` holds."""
    keys = [decode_key(key) for key, value in write.records if value is None]
    return [k.partition for k in keys if isinstance(k, OffsetCommitKey) and k.topic == "t"]


def last_write(h: Harness) -> Persist:
    written = [w for w in h.written if isinstance(w, Persist)]
    return written[-1]


def assert_replay_gives_the_live_state(h: Harness) -> Harness:
    """A coordinator loading what ``h`` wrote holds the same groups, offsets and pending
    transactional offsets; returned in a harness, to go on writing."""
    fresh = Harness(CONFIG, h.replay_into(GroupCoordinator(CONFIG)))
    fresh.now = h.now
    assert fresh.coord.groups() == h.coord.groups()
    for group in {g.group_id for g in h.coord.groups()} | {"g"}:
        assert unstable(fresh, group) == unstable(h, group), group
    fresh.written = list(h.written)
    return fresh


# -- the order of the records at the COMMIT marker -------------------------------------------------


def test_a_commit_marker_keeps_an_offset_committed_after_the_transactions_record() -> None:
    h = Harness(CONFIG)
    commit(h, {2: 3})  # before the transaction's record: the transaction's offset replaces it
    txn_commit(h, 40, {0: 9, 1: 4, 2: 8})
    commit(h, {0: 7})  # after it, before the marker: the latest record, it stays
    assert unstable(h) == [0, 1, 2]
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {0: 7, 1: 4, 2: 8}
    assert unstable(h) == []
    assert_replay_gives_the_live_state(h)


def test_two_transactions_commit_in_the_order_of_their_records() -> None:
    h = Harness(CONFIG)
    txn_commit(h, 40, {0: 10})
    txn_commit(h, 41, {0: 20})
    h.end_transaction(41, commit=True)
    assert offsets_of(h.coord) == {0: 20}
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {0: 20}, "40's record is older than the committed one (41's)"
    assert_replay_gives_the_live_state(h)


def test_an_aborted_transaction_leaves_the_committed_offsets() -> None:
    h = Harness(CONFIG)
    commit(h, {0: 5})
    txn_commit(h, 40, {0: 9, 1: 4})
    h.end_transaction(40, commit=False)
    assert offsets_of(h.coord) == {0: 5} and unstable(h) == []
    assert_replay_gives_the_live_state(h)


def test_a_coordinator_that_loaded_the_log_orders_its_own_writes_after_it() -> None:
    h = Harness(CONFIG)
    commit(h, {1: 5})
    txn_commit(h, 40, {0: 9})
    txn_commit(h, 43, {0: 1}, group="solo")  # a group only a transaction's record made
    loaded = assert_replay_gives_the_live_state(h)
    assert unstable(loaded) == [0] and unstable(loaded, "solo") == [0]
    commit(loaded, {0: 7})  # after 40's loaded record
    loaded.end_transaction(40, commit=True)
    assert offsets_of(loaded.coord) == {0: 7, 1: 5}
    txn_commit(loaded, 41, {1: 11})  # after the loaded commit of t-1
    loaded.end_transaction(41, commit=True)
    assert offsets_of(loaded.coord) == {0: 7, 1: 11}
    assert_replay_gives_the_live_state(loaded)


# -- tombstones drop pending transactional offsets -------------------------------------------------


def test_an_offset_delete_drops_the_pending_offsets_of_every_producer() -> None:
    h = Harness(CONFIG)
    commit(h, {3: 1})
    txn_commit(h, 40, {0: 9, 1: 4})
    txn_commit(h, 41, {0: 10})
    offset_delete(h, 0)
    assert tombstoned(last_write(h)) == [0], "a partition only transactions hold is tombstoned too"
    assert unstable(h) == [1]
    h.end_transaction(40, commit=True)
    h.end_transaction(41, commit=True)
    assert offsets_of(h.coord) == {1: 4, 3: 1}, "the deleted offset does not come back"
    assert_replay_gives_the_live_state(h)


def test_a_group_deletion_drops_its_pending_offsets() -> None:
    h = Harness(CONFIG)
    commit(h, {0: 5})
    txn_commit(h, 40, {1: 4})
    txn_commit(h, 41, {0: 6})
    txn_commit(h, 42, {0: 1}, group="other")
    answer = h.call(DeleteGroupsRequest(groups_names=["g"]), 2)
    assert isinstance(answer, DeleteGroupsResponse) and answer.results[0].error_code == E.NONE
    assert sorted(tombstoned(last_write(h))) == [0, 1]
    assert unstable(h) == []
    for producer in (40, 41):
        h.end_transaction(producer, commit=True)
    assert h.coord.group("g") is None, "no marker brings the deleted group back"
    h.end_transaction(42, commit=True, group="other")
    assert offsets_of(h.coord, "other") == {0: 1}
    assert_replay_gives_the_live_state(h)


def test_a_refused_tombstone_gives_the_pending_offsets_back() -> None:
    h = Harness(CONFIG)
    commit(h, {0: 5})
    txn_commit(h, 40, {0: 9, 1: 4})
    h.append_error = E.NOT_ENOUGH_REPLICAS
    request = OffsetDeleteRequest(
        group_id="g",
        topics=[
            OffsetDeleteRequestTopic(name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])
        ],
    )
    refused = h.call(request, 0)
    assert isinstance(refused, OffsetDeleteResponse) and refused.error_code != E.NONE
    deletion = h.call(DeleteGroupsRequest(groups_names=["g"]), 2)
    assert isinstance(deletion, DeleteGroupsResponse) and deletion.results[0].error_code != E.NONE
    h.append_error = E.NONE
    assert unstable(h) == [0, 1]
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {0: 9, 1: 4}
    assert_replay_gives_the_live_state(h)


def test_a_deleted_topic_drops_its_pending_offsets() -> None:
    h = Harness(CONFIG)
    txn_commit(h, 40, {0: 9})
    h._apply(h.coord.topics_deleted(["t"], h.now))
    assert tombstoned(last_write(h)) == [0]
    assert unstable(h) == []
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {}
    assert_replay_gives_the_live_state(h)


def test_retention_keeps_a_group_with_an_open_transaction() -> None:
    h = Harness(CONFIG)
    h.commit("g", {("t", 0): 1}, version=2, retention_ms=5_000)
    txn_commit(h, 40, {1: 4})
    h.advance(CONFIG.offsets_retention_check_interval_ms)
    assert tombstoned(last_write(h)) == [0], "the expired offset goes, the group stays"
    assert h.coord.group("g") is not None and unstable(h) == [1]
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {1: 4}
    assert_replay_gives_the_live_state(h)


def test_a_refused_tombstone_leaves_dropped_what_a_later_tombstone_drops() -> None:
    h = Harness(CONFIG)
    commit(h, {0: 5})
    txn_commit(h, 40, {0: 9})
    h.held = []
    delete = OffsetDeleteRequest(
        group_id="g",
        topics=[
            OffsetDeleteRequestTopic(name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])
        ],
    )
    h.send(delete, 0)  # drops 40's pending offset of t-0
    hold_commit(h, "g", {("t", 0): 6})
    h.send(delete, 0)  # a tombstone of the new commit: nothing pending left to drop
    refused, commit_6, later = h.held
    h.report(refused, E.NOT_ENOUGH_REPLICAS)
    h.written.remove(refused)  # not in the log
    h.report(commit_6)
    h.report(later)
    h.held = None
    assert unstable(h) == [], "the later tombstone, in the log after 40's record, drops it"
    h.end_transaction(40, commit=True)
    assert offsets_of(h.coord) == {}
    assert_replay_gives_the_live_state(h)
