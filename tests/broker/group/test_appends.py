"""Group writes whose append the log refuses (``GroupCoordinator.persisted`` with an error code):
nothing changes in memory, the requests that depended on the write get the error Kafka's
coordinator maps the log's error to, and the group recovers once writes succeed again."""

from __future__ import annotations

import pytest

from kafka_wire.broker.group import (
    APPEND_ERRORS,
    GroupConfig,
    GroupCoordinator,
    GroupEffect,
    GroupState,
    Persist,
    Respond,
    client_error,
)
from kafka_wire.errors import DecodeError, LocalProtocolError
from kafka_wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ErrorCode,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from tests.broker.group.harness import CONFIG, DELAYED, REBALANCE_MS, Harness, range_assign, run_group
from tests.broker.group.test_admin import offset_delete, populated
from tests.broker.group.test_static import static_group

E = ErrorCode


@pytest.mark.parametrize(
    ("append_error", "client_sees"),
    [
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.INVALID_FETCH_SIZE, E.UNKNOWN_SERVER_ERROR),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),  # any other code reaches the client as it is
    ],
)
def test_a_refused_commit_changes_nothing_and_fails_every_partition(
    append_error: int, client_sees: int
) -> None:
    assert client_error(append_error) == client_sees
    h = Harness()
    assert h.commit("g", {("t", 0): 5}) == {("t", 0): E.NONE}
    log = list(h.log)
    h.append_error = append_error
    answer = h.commit("g", {("t", 0): 6, ("t", 1): 7})
    assert answer == {("t", 0): client_sees, ("t", 1): client_sees}
    assert h.fetch("g", {"t": [0, 1]})[1] == {("t", 0): (5, "", 0), ("t", 1): (-1, "", 0)}
    assert h.log == log and h.coord.pending_writes() == 0
    # A simple group created by a refused commit is forgotten.
    assert h.commit("new", {("t", 0): 1}) == {("t", 0): client_sees}
    assert h.coord.group("new") is None
    h.append_error = 0
    assert h.commit("g", {("t", 0): 6}) == {("t", 0): E.NONE}
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (6, "", 0)}


def test_the_error_table_is_kafkas() -> None:
    assert APPEND_ERRORS == {
        E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
        # Kafka 3's mapping (Kafka 4's coordinator appends with acks=1 and never meets it).
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
        E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
        E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
        E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
        E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
        E.INVALID_FETCH_SIZE: E.UNKNOWN_SERVER_ERROR,
    }


def test_a_refused_assignment_fails_every_waiting_sync_and_rebalances() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    h.leave("g", (ids[1], None))  # back to a rebalance, then a new generation of one... and a rejoin
    token = h.join("g", ids[0])
    h.advance(200)
    joined = h.answer(token)
    assert isinstance(joined, JoinGroupResponse) and joined.error_code == E.NONE
    generation = joined.generation_id
    before = list(h.log)
    h.append_error = E.MESSAGE_TOO_LARGE
    sync = h.answer(h.sync("g", ids[0], generation, range_assign([ids[0]], "t", 3)))
    assert isinstance(sync, SyncGroupResponse)
    assert (sync.error_code, sync.assignment) == (E.UNKNOWN_SERVER_ERROR, b"")
    assert h.log == before
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    snapshot = h.coord.group("g")
    assert snapshot is not None and all(m.assignment == b"" for m in snapshot.members)
    h.append_error = 0
    token = h.join("g", ids[0])
    h.advance(200)
    again = h.answer(token)
    assert isinstance(again, JoinGroupResponse) and again.generation_id == generation + 1
    stored = h.answer(h.sync("g", ids[0], again.generation_id, range_assign([ids[0]], "t", 3)))
    assert isinstance(stored, SyncGroupResponse) and stored.error_code == E.NONE and stored.assignment
    assert h.coord.state_of("g") is GroupState.STABLE


def test_a_refused_assignment_answers_followers_that_wait() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    token = h.join("g", ids[0])  # the leader rejoins: a new generation for both
    follower_join = h.join("g", ids[1])
    h.advance(200)
    leader, follower = h.answer(token), h.answer(follower_join)
    assert isinstance(leader, JoinGroupResponse) and isinstance(follower, JoinGroupResponse)
    generation = leader.generation_id
    waiting = h.sync("g", ids[1], generation)
    assert h.answer(waiting) is None
    h.append_error = E.NOT_LEADER_OR_FOLLOWER
    led = h.answer(h.sync("g", ids[0], generation, range_assign(ids, "t", 4)))
    followed = h.answer(waiting)
    assert isinstance(led, SyncGroupResponse) and isinstance(followed, SyncGroupResponse)
    assert led.error_code == followed.error_code == E.NOT_COORDINATOR


def test_a_refused_static_rejoin_restores_the_old_member_id() -> None:
    h = Harness(DELAYED)
    ids, generation, plan = static_group(h)
    h.append_error = E.MESSAGE_TOO_LARGE
    response = h.answer(h.join("g", instance="b", version=9))
    assert isinstance(response, JoinGroupResponse)
    assert (response.error_code, response.member_id, response.generation_id) == (
        E.UNKNOWN_SERVER_ERROR,
        "",
        generation,
    )
    assert response.leader == ids["a"]
    h.append_error = 0
    # The old incarnation is still the member, with its assignment.
    snapshot = h.coord.group("g")
    assert snapshot is not None and [m.member_id for m in snapshot.members] == [ids["a"], ids["b"]]
    sync = h.answer(h.sync("g", ids["b"], generation, instance="b"))
    assert isinstance(sync, SyncGroupResponse) and sync.assignment == plan[ids["b"]]
    assert h.coord.state_of("g") is GroupState.STABLE
    # Its session timer runs again (the rejoin had cancelled it): silent for longer than its
    # session timeout, it is removed.
    for _ in range(4):
        h.advance(3_000)
        h.heartbeat("g", ids["a"], generation, instance="a")
    snapshot = h.coord.group("g")
    assert snapshot is not None and [m.member_id for m in snapshot.members] == [ids["a"]]


def test_a_refused_first_record_fails_the_join_that_created_the_group() -> None:
    h = Harness(DELAYED)
    h.append_error = E.MESSAGE_TOO_LARGE
    answer = h.answer(h.join("g", version=3))  # v3: the member is added at once, its join waits
    assert isinstance(answer, JoinGroupResponse)
    assert (answer.error_code, answer.member_id) == (E.UNKNOWN_SERVER_ERROR, "")
    assert h.coord.group("g") is None
    h.advance(10_000)  # no timer of the forgotten group fires
    assert h.coord.groups() == []
    h.append_error = 0
    token = h.join("g", version=3)
    h.advance(100)
    joined = h.answer(token)
    assert isinstance(joined, JoinGroupResponse) and joined.error_code == E.NONE


def test_refused_deletions_leave_the_group() -> None:
    h, _, _ = populated()
    h.append_error = E.NOT_ENOUGH_REPLICAS
    response = h.call(DeleteGroupsRequest(groups_names=["simple", "live", "absent"]), 2)
    assert isinstance(response, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("simple", E.COORDINATOR_NOT_AVAILABLE),
        ("live", E.NON_EMPTY_GROUP),
        ("absent", E.GROUP_ID_NOT_FOUND),
    ]
    assert h.fetch("simple", {"t": [0]})[1] == {("t", 0): (1, "", 0)}
    assert offset_delete(h, "live", {"other": [0]}).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.fetch("live", {"other": [0]})[1] == {("other", 0): (8, "", 0)}
    h.append_error = 0
    response = h.call(DeleteGroupsRequest(groups_names=["simple"]), 2)
    assert isinstance(response, DeleteGroupsResponse) and response.results[0].error_code == E.NONE
    assert h.coord.group("simple") is None


def test_a_refused_expiry_keeps_the_offsets_until_a_later_check() -> None:
    h = Harness(CONFIG)
    h.commit("g", {("t", 0): 1}, version=2, retention_ms=5_000)
    h.append_error = E.KAFKA_STORAGE_ERROR
    h.advance(CONFIG.offsets_retention_check_interval_ms)
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (1, "", 0)}, "tombstones not stored: still committed"
    h.append_error = 0
    h.advance(CONFIG.offsets_retention_check_interval_ms)
    assert h.coord.group("g") is None
    assert h.log[-1][1] is None


def test_outcomes_must_name_a_write_in_flight() -> None:
    coordinator = GroupCoordinator(CONFIG)
    with pytest.raises(LocalProtocolError):
        coordinator.persisted(1, 0, 0)


def test_replay_refuses_unknown_key_versions_and_skips_kafkas_other_record_types() -> None:
    coordinator = GroupCoordinator(CONFIG)
    coordinator.replay(b"\x00\x09\x00\x01g", b"\x00\x00")  # a streams group record: skipped
    with pytest.raises(DecodeError):  # a KIP-848 consumer group record is read, and this is short
        coordinator.replay(b"\x00\x03\x00\x01g", b"\x00\x00")
    for key in (b"\x7f\x00\x00\x01g", b"\xff\xff", b"\x00\x01\xff\xff\xff", b"\x00"):
        with pytest.raises(DecodeError):
            coordinator.replay(key, b"")
    assert coordinator.groups() == []


def test_a_group_loaded_over_its_max_size_rebalances_and_refuses_the_extra_members() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 3)
    smaller = Harness(
        GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=1000, max_group_size=2)
    )
    smaller.coord.load(h.log)
    smaller.advance(0)
    assert smaller.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    assert smaller.heartbeat("g", ids[0], generation) == E.REBALANCE_IN_PROGRESS
    tokens = [smaller.join("g", member_id) for member_id in ids]
    extra = smaller.answer(tokens[2])
    assert isinstance(extra, JoinGroupResponse) and extra.error_code == E.GROUP_MAX_SIZE_REACHED
    smaller.advance(REBALANCE_MS)  # the join phase ends at the rebalance timeout, as in Kafka
    joined = [smaller.answer(t) for t in tokens[:2]]
    assert all(isinstance(j, JoinGroupResponse) and j.error_code == E.NONE for j in joined)
    snapshot = smaller.coord.group("g")
    assert snapshot is not None and [m.member_id for m in snapshot.members] == ids[:2]


# -- outcomes reported late (a cluster: a write waits for its replication) ------------------------


def _commit_held(coordinator: GroupCoordinator, token: int, offsets: dict[int, int]) -> int:
    """Send a simple group's commit of topic ``t`` and return the append id of its write, whose
    outcome is not reported yet."""
    request = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequestTopic(
                name="t",
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata="")
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    effects = coordinator.handle(token, request, 8, 0)
    (persist,) = effects
    assert isinstance(persist, Persist)
    return persist.append_id


def _committed(coordinator: GroupCoordinator, partitions: list[int]) -> dict[int, int]:
    request = OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=partitions)]
    )
    (answer,) = coordinator.handle(0, request, 7, 0)
    assert isinstance(answer, Respond) and isinstance(answer.body, OffsetFetchResponse)
    return {p.partition_index: p.committed_offset for t in answer.body.topics for p in t.partitions}


def _errors(effects: list[GroupEffect]) -> dict[int, int]:
    (answer,) = effects
    assert isinstance(answer, Respond) and isinstance(answer.body, OffsetCommitResponse)
    return {p.partition_index: p.error_code for t in answer.body.topics for p in t.partitions}


def _latest(coordinator: GroupCoordinator) -> dict[int, int]:
    """The group's offsets in memory, the writes not stored yet included."""
    snapshot = coordinator.group("g")
    return {} if snapshot is None else {p: v.offset for _, p, v in snapshot.offsets}


def test_a_commit_that_fails_after_a_later_one_does_not_take_the_later_one_back() -> None:
    # Seed 2600 of the simulator: a commit failed after a later commit of the same partition was
    # appended; taking the first back put the offset before it over the later commit, which was
    # then acknowledged, and OffsetFetch answered the older one. (Its failure was then a timeout,
    # which takes nothing back now; a partition lost fails writes in flight in order too.)
    coordinator = GroupCoordinator(CONFIG)
    first = _commit_held(coordinator, 1, {0: 1})
    assert _errors(coordinator.persisted(first, 0, 0)) == {0: E.NONE}
    failed = _commit_held(coordinator, 2, {0: 2})
    later = _commit_held(coordinator, 3, {0: 2, 1: 2})
    assert _errors(coordinator.persisted(failed, E.NOT_LEADER_OR_FOLLOWER, 0)) == {0: E.NOT_COORDINATOR}
    assert _latest(coordinator) == {0: 2, 1: 2}
    assert _committed(coordinator, [0, 1]) == {0: 1, 1: -1}, "reads see what is stored"
    assert _errors(coordinator.persisted(later, 0, 0)) == {0: E.NONE, 1: E.NONE}
    assert _committed(coordinator, [0, 1]) == {0: 2, 1: 2}


def test_refused_commits_out_of_order_leave_the_latest_write_that_did_not_fail() -> None:
    coordinator = GroupCoordinator(CONFIG)
    stored = _commit_held(coordinator, 1, {0: 1})
    coordinator.persisted(stored, 0, 0)
    # The earlier of two commits fails first, then the later one: back to what was stored.
    a = _commit_held(coordinator, 2, {0: 2})
    b = _commit_held(coordinator, 3, {0: 3})
    coordinator.persisted(a, E.NOT_LEADER_OR_FOLLOWER, 0)
    assert (_latest(coordinator), _committed(coordinator, [0])) == ({0: 3}, {0: 1})
    coordinator.persisted(b, E.NOT_LEADER_OR_FOLLOWER, 0)
    assert (_latest(coordinator), _committed(coordinator, [0])) == ({0: 1}, {0: 1})
    # The later fails first: the earlier one, still in flight, is kept; then it is stored.
    c = _commit_held(coordinator, 4, {0: 4})
    d = _commit_held(coordinator, 5, {0: 5})
    coordinator.persisted(d, E.NOT_LEADER_OR_FOLLOWER, 0)
    assert (_latest(coordinator), _committed(coordinator, [0])) == ({0: 4}, {0: 1})
    coordinator.persisted(c, 0, 0)
    assert (_latest(coordinator), _committed(coordinator, [0])) == ({0: 4}, {0: 4})
    # An earlier commit stored after a later one does not put its value back (the later one
    # stored means the earlier one is: the high watermark passed both).
    e = _commit_held(coordinator, 6, {0: 6})
    f = _commit_held(coordinator, 7, {0: 7})
    coordinator.persisted(f, 0, 0)
    assert _committed(coordinator, [0]) == {0: 7}
    coordinator.persisted(e, 0, 0)
    assert (_latest(coordinator), _committed(coordinator, [0])) == ({0: 7}, {0: 7})
    assert coordinator.pending_writes() == 0
