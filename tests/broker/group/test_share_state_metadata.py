"""A share group's state metadata (Kafka's ShareGroupStatePartitionMetadata, key 15 of
``__consumer_offsets``) on the coordinator alone: what heartbeats mark initializing, its record's
bytes, its replay by a new coordinator, and what the share admin's calls do to it (initialized,
uninitialized, offsets deleted, the group deleted)."""

from __future__ import annotations

import uuid

from kafka_wire.broker.group.share_groups import INITIALIZE_RETRY_INTERVAL_MS, ShareGroups
from kafka_wire.broker.group.share_model import ShareGroup
from kafka_wire.broker.group.share_records import state_partitions_record
from kafka_wire.messages import DeleteGroupsRequest, DeleteGroupsResponse, ErrorCode
from tests.broker.group.harness import Harness
from tests.broker.group.test_share_groups import TOPICS, T, U, beat, harness

E = ErrorCode
KEY_15 = b"\x00\x0f\x00\x02sg"


def records_15(h: Harness) -> list[bytes | None]:
    return [value for key, value in h.log if key == KEY_15]


def write(h: Harness, call: object) -> None:
    """A share admin call on the coordinator, its writes applied as the broker applies them."""
    assert callable(call)
    _, effects = h.coord.share_write(call, h.now)
    h._apply(effects)


def metadata(h: Harness) -> tuple[object, object, object]:
    group = h.coord.share_group_view("sg")
    assert group is not None
    return group.initializing, group.initialized, group.deleting


def test_the_record_has_kafkas_layout() -> None:
    group = ShareGroup("sg")
    group.initializing = {U: ("u", frozenset({0}))}
    group.initialized = {T: ("t", frozenset({2, 0}))}
    group.deleting = {uuid.UUID(int=3): "v"}
    key, value = state_partitions_record(group)
    assert key == KEY_15  # int16 15, then the group id (a non-flexible string)
    assert value == (
        b"\x00\x00"  # value version 0, flexible
        + b"\x02" + U.bytes + b"\x02u" + b"\x02" + b"\x00\x00\x00\x00" + b"\x00"  # initializing
        + b"\x02" + T.bytes + b"\x02t" + b"\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x02" + b"\x00"  # initialized
        + b"\x02" + uuid.UUID(int=3).bytes + b"\x02v" + b"\x00"  # deleting
        + b"\x00"
    )  # fmt: skip


def test_a_heartbeat_marks_the_subscribed_partitions_initializing_once_stored() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    assert metadata(h) == ({T: ("t", frozenset({0, 1, 2}))}, {}, {})
    assert len(records_15(h)) == 1
    assert h.coord.share_groups.take_initializations() == [("sg", 1, {T: frozenset({0, 1, 2})})]
    assert h.coord.share_groups.take_initializations() == []
    # Asked for already: the next heartbeats ask nothing more, and write nothing for it.
    beat(h, "a", 1)
    assert h.coord.share_groups.take_initializations() == [] and len(records_15(h)) == 1


def test_a_refused_write_asks_for_no_initialization() -> None:
    h = harness()
    h.append_error = E.NOT_LEADER_OR_FOLLOWER
    assert beat(h, "a", 0, ["t"]).error_code == E.NOT_COORDINATOR
    assert h.coord.share_groups.take_initializations() == []
    assert h.coord.share_group_view("sg") is None


def test_initialized_partitions_are_kept_and_a_new_topic_is_asked_for() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    h.coord.share_groups.take_initializations()
    write(h, lambda share: share.initialized("sg", {T: frozenset({0, 1, 2})}))
    assert metadata(h) == ({}, {T: ("t", frozenset({0, 1, 2}))}, {})
    # Another member subscribes to u as well: only u is asked for.
    beat(h, "b", 0, ["u"])
    assert h.coord.share_groups.take_initializations() == [("sg", 2, {U: frozenset({0})})]
    assert metadata(h) == ({U: ("u", frozenset({0}))}, {T: ("t", frozenset({0, 1, 2}))}, {})


def test_a_failed_initialization_is_asked_for_again() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    h.coord.share_groups.take_initializations()
    write(h, lambda share: share.initialized("sg", {T: frozenset({0})}))
    write(h, lambda share: share.uninitialized("sg", {T: frozenset({1, 2})}))
    assert metadata(h) == ({}, {T: ("t", frozenset({0}))}, {})
    beat(h, "a", 1)
    assert h.coord.share_groups.take_initializations() == [("sg", 1, {T: frozenset({1, 2})})]


def test_an_initialization_not_done_in_time_is_asked_for_again() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    h.coord.share_groups.take_initializations()
    h.advance(INITIALIZE_RETRY_INTERVAL_MS - 1)
    beat(h, "a", 1)
    assert h.coord.share_groups.take_initializations() == []
    h.advance(1)
    beat(h, "a", 1)
    assert h.coord.share_groups.take_initializations() == [("sg", 1, {T: frozenset({0, 1, 2})})]


def test_the_metadata_is_replayed_by_a_new_coordinator() -> None:
    h = harness()
    beat(h, "a", 0, ["t", "u"])
    write(h, lambda share: share.initialized("sg", {T: frozenset({0, 1, 2})}))
    beat(h, "a", -1)
    deleted: list[object] = []
    write(h, lambda share: deleted.append(share.begin_offsets_delete("sg", {T: ("t", 3)})))
    assert deleted == [{T: frozenset({0, 1, 2})}]
    kept = metadata(h)
    assert kept == ({U: ("u", frozenset({0}))}, {}, {T: "t"})
    fresh = harness()
    fresh.coord.load(h.log)
    assert metadata(fresh) == kept
    # What a DeleteGroups deletes: the initializing partitions and all of the topic being deleted.
    assert fresh.coord.share_groups.state_partitions("sg", initialized_only=False) == {
        U: frozenset({0}),
        T: frozenset({0, 1, 2}),
    }
    assert fresh.coord.share_groups.state_partitions("sg", initialized_only=True) == {}


def test_offsets_delete_takes_only_initialized_or_deleting_topics() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    beat(h, "a", -1)
    share: ShareGroups = h.coord.share_groups
    asked = {T: ("t", 3), U: ("u", 1)}
    found: list[object] = []
    write(h, lambda s: found.append(s.begin_offsets_delete("sg", asked)))
    assert found == [{}]  # nothing initialized yet (t is initializing): no offset information
    write(h, lambda s: s.initialized("sg", {T: frozenset({1})}))
    write(h, lambda s: found.append(s.begin_offsets_delete("sg", asked)))
    assert found[-1] == {T: frozenset({1})}
    assert metadata(h) == ({T: ("t", frozenset({0, 2}))}, {}, {T: "t"})
    # Asked again while t is being deleted: every partition of it.
    write(h, lambda s: found.append(s.begin_offsets_delete("sg", asked)))
    assert found[-1] == {T: frozenset({0, 1, 2})}
    write(h, lambda s: s.offsets_deleted("sg", {T}))
    assert metadata(h) == ({T: ("t", frozenset({0, 2}))}, {}, {})
    assert share.state_partitions("sg", initialized_only=True) == {}


def test_deleted_topics_leave_the_metadata() -> None:
    topics = dict(TOPICS)
    h = harness(topics)
    beat(h, "a", 0, ["t", "u"])
    write(h, lambda s: s.initialized("sg", {T: frozenset({0, 1, 2})}))
    del topics["t"]
    h._apply(h.coord.topics_deleted(["t"], h.now))
    assert metadata(h) == ({U: ("u", frozenset({0}))}, {}, {})


def test_deleting_the_group_tombstones_its_metadata() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    beat(h, "a", -1)
    reply = h.call(DeleteGroupsRequest(groups_names=["sg"]), 2)
    assert isinstance(reply, DeleteGroupsResponse) and reply.results[0].error_code == E.NONE
    assert records_15(h)[-1] is None
    fresh = harness()
    fresh.coord.load(h.log)
    assert fresh.coord.share_group_view("sg") is None
