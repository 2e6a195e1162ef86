"""Persist records fed to load() of a fresh coordinator give the same groups and offsets."""

from __future__ import annotations

from kafka_wire.broker.group import GroupCoordinator, GroupState, KeyValue
from kafka_wire.messages import DeleteGroupsRequest, ErrorCode, JoinGroupResponse, SyncGroupResponse
from tests.broker.group.harness import DELAYED, SESSION_MS, Harness, run_group
from tests.broker.group.test_static import static_group

E = ErrorCode


def compact(log: list[KeyValue]) -> list[KeyValue]:
    """What log compaction keeps: the last value per key, tombstones dropped."""
    last: dict[bytes, bytes | None] = {}
    for key, value in log:
        last.pop(key, None)
        last[key] = value
    return [(k, v) for k, v in last.items() if v is not None]


def busy_history() -> Harness:
    h = Harness(DELAYED)
    static_group(h)  # "g": instances a and b, stable
    ids, generation = run_group(h, "dyn", 2, topic="d")
    h.commit("dyn", {("d", 0): 100, ("d", 1): 200}, generation=generation, member_id=ids[0])
    h.commit("dyn", {("d", 0): 150}, generation=generation, member_id=ids[1])
    h.commit("solo", {("s", 0): 5}, metadata="simple")
    gone, gone_generation = run_group(h, "gone", 1)
    h.commit("gone", {("x", 0): 1}, generation=gone_generation, member_id=gone[0])
    h.leave("gone", (gone[0], None))
    h.call(DeleteGroupsRequest(groups_names=["gone"]), 2)
    left, left_generation = run_group(h, "left", 1)
    h.commit("left", {("y", 0): 9, ("y", 1): 10}, generation=left_generation, member_id=left[0])
    h.leave("left", (left[0], None))
    h.commit("left", {("y", 1): 11})  # the group is empty now: a simple commit is allowed
    return h


def test_load_restores_every_group_and_offset() -> None:
    h = busy_history()
    before = h.coord.groups()
    assert {g.group_id: g.state for g in before} == {
        "g": GroupState.STABLE,
        "dyn": GroupState.STABLE,
        "solo": GroupState.EMPTY,
        "left": GroupState.EMPTY,
    }
    for records in (h.log, compact(h.log)):
        fresh = GroupCoordinator(DELAYED)
        fresh.load(records)
        assert fresh.groups() == before


def test_a_rebalance_in_progress_is_not_persisted_until_it_ends() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    h.commit("g", {("t", 0): 1}, generation=generation, member_id=ids[0])
    stable = h.coord.group("g")
    h.join("g", ids[0], topics=("t", "z"))
    fresh = GroupCoordinator(DELAYED)
    fresh.load(h.log)
    assert fresh.group("g") == stable


def test_after_a_restart_static_members_come_back_without_a_rebalance() -> None:
    h = Harness(DELAYED)
    ids, generation, plan = static_group(h)
    restarted = Harness(DELAYED, coordinator=GroupCoordinator(DELAYED))
    restarted.coord.load(h.log)
    restarted.now = h.now + 1_000
    assert restarted.coord.state_of("g") is GroupState.STABLE
    assert restarted.heartbeat("g", ids["a"], generation, instance="a") == E.NONE
    response = restarted.answer(restarted.join("g", instance="b", version=9))
    assert isinstance(response, JoinGroupResponse)
    assert response.error_code == E.NONE and response.generation_id == generation
    sync = restarted.answer(restarted.sync("g", response.member_id, generation, instance="b"))
    assert isinstance(sync, SyncGroupResponse) and sync.assignment == plan[ids["b"]]
    assert restarted.coord.state_of("g") is GroupState.STABLE


def test_after_a_restart_silent_members_time_out_from_the_first_time_seen() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "dyn", 2)
    h.commit("dyn", {("t", 0): 7}, generation=generation, member_id=ids[0])
    fresh = GroupCoordinator(DELAYED)
    fresh.load(h.log)
    assert fresh.next_deadline_ms() == 0  # it wants a time to arm the loaded members' sessions
    later = h.now + 3_600_000
    assert fresh.tick(later) == []
    assert fresh.state_of("dyn") is GroupState.STABLE
    assert fresh.next_deadline_ms() == later + SESSION_MS
    effects = fresh.tick(later + SESSION_MS)
    assert fresh.state_of("dyn") is GroupState.EMPTY  # both expired: the group emptied itself
    assert effects, "the empty generation is persisted"
    snapshot = fresh.group("dyn")
    assert snapshot is not None and snapshot.generation == generation + 1
    assert [(t, p, v.offset) for t, p, v in snapshot.offsets] == [("t", 0, 7)], "offsets survive"


def test_deleted_groups_and_offsets_stay_deleted() -> None:
    h = busy_history()
    fresh = GroupCoordinator(DELAYED)
    fresh.load(h.log)
    assert fresh.group("gone") is None
    tombstoned = [key for key, value in h.log if value is None]
    assert len(tombstoned) == 2  # the offset of "gone" and its metadata


def test_unknown_record_types_are_skipped() -> None:
    fresh = GroupCoordinator(DELAYED)
    # A streams group's record (skipped), and a tombstone of a KIP-848 group that is not there.
    fresh.load([(b"\x00\x09\x00\x01g", b"\x00\x00whatever"), (b"\x00\x03\x00\x01g", None)])
    assert fresh.groups() == []


def test_members_loaded_after_the_first_tick_are_armed_at_the_next_one() -> None:
    h = Harness(DELAYED)
    run_group(h, "dyn", 1)
    fresh = GroupCoordinator(DELAYED)
    fresh.tick(500)
    fresh.load(h.log)
    assert fresh.next_deadline_ms() == 500
    fresh.tick(600)
    assert fresh.next_deadline_ms() == 600 + SESSION_MS
