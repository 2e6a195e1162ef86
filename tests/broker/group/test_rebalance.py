"""Scripted JoinGroup / SyncGroup / Heartbeat / LeaveGroup sequences on a virtual clock."""

from __future__ import annotations

import pytest

from kafka_wire.broker.group import GroupConfig, GroupCoordinator, GroupState
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    JoinGroupResponse,
    SyncGroupResponse,
)
from tests.broker.group.harness import (
    CONFIG,
    DELAYED,
    SESSION_MS,
    Harness,
    assigned,
    range_assign,
    run_group,
    subscription,
)

E = ErrorCode


def joined(h: Harness, token: int) -> JoinGroupResponse:
    response = h.answer(token)
    assert isinstance(response, JoinGroupResponse), f"join {token} is still pending"
    return response


def synced(h: Harness, token: int) -> SyncGroupResponse:
    response = h.answer(token)
    assert isinstance(response, SyncGroupResponse), f"sync {token} is still pending"
    return response


def test_three_members_join_sync_heartbeat_then_one_leaves() -> None:
    h = Harness(DELAYED)
    ids, tokens = [], []
    for _ in range(3):
        member_id, token = h.join_new("g")
        ids.append(member_id)
        tokens.append(token)
    assert len(set(ids)) == 3
    assert not h.answers, "the initial delay holds every join"
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    h.advance(100)  # new members arrived during the delay: it runs once more
    assert not h.answers
    h.advance(100)
    responses = [joined(h, t) for t in tokens]
    assert {r.generation_id for r in responses} == {1}
    assert {r.leader for r in responses} == {ids[0]}
    assert {r.protocol_name for r in responses} == {"range"}
    leader, followers = responses[0], responses[1:]
    assert [m.member_id for m in leader.members] == ids
    assert all(m.metadata == subscription("t") for m in leader.members)
    assert all(r.members == [] for r in followers)
    assert h.coord.state_of("g") is GroupState.COMPLETING_REBALANCE

    # Followers wait for the leader's assignment.
    waiting = [h.sync("g", m, 1) for m in ids[1:]]
    assert not h.answers
    assert h.heartbeat("g", ids[1], 1) == E.NONE  # CompletingRebalance heartbeats are fine
    plan = range_assign(ids, "t", 6)
    mine = synced(h, h.sync("g", ids[0], 1, plan))
    assert mine.error_code == E.NONE and mine.assignment == plan[ids[0]]
    assert mine.protocol_type == "consumer" and mine.protocol_name == "range"
    for member_id, token in zip(ids[1:], waiting, strict=True):
        assert synced(h, token).assignment == plan[member_id]
    assert h.coord.state_of("g") is GroupState.STABLE
    for member_id in ids:
        assert h.heartbeat("g", member_id, 1) == E.NONE

    # The third leaves: the other two learn it from their heartbeats and rejoin.
    left = h.leave("g", (ids[2], None))
    assert left.error_code == E.NONE and [(m.member_id, m.error_code) for m in left.members] == [(ids[2], 0)]
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", ids[0], 1) == E.REBALANCE_IN_PROGRESS
    assert h.heartbeat("g", ids[2], 1) == E.UNKNOWN_MEMBER_ID
    first = h.join("g", ids[1])
    assert not h.answers, "waits for the other known member"
    second = h.join("g", ids[0])
    r1, r0 = joined(h, first), joined(h, second)
    assert r0.generation_id == r1.generation_id == 2
    assert r0.leader == ids[0] and [m.member_id for m in r0.members] == ids[:2]
    plan = range_assign(ids[:2], "t", 6)
    follower = h.sync("g", ids[1], 2)
    h.answer(h.sync("g", ids[0], 2, plan))
    got = {ids[0]: assigned(plan[ids[0]]), ids[1]: assigned(synced(h, follower).assignment)}
    assert sorted(p for a in got.values() for p in a["t"]) == list(range(6))
    assert all(len(a["t"]) == 3 for a in got.values())


def test_rejoin_is_held_until_the_rebalance_timeout_then_laggards_are_dropped() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 3)
    # A member changes its subscription: a rebalance starts; only two of three rejoin.
    token_a = h.join("g", ids[0], topics=("t", "u"))
    token_b = h.join("g", ids[1])
    for _ in range(5):  # the third keeps its session alive but does not rejoin
        h.advance(5_000)
        assert h.heartbeat("g", ids[2], generation) == E.REBALANCE_IN_PROGRESS
    h.advance(4_999)
    assert token_a not in h.answers and token_b not in h.answers
    h.advance(1)  # the rebalance timeout (30 s) passes: the third is removed
    a, b = joined(h, token_a), joined(h, token_b)
    assert a.generation_id == b.generation_id == generation + 1
    assert [m.member_id for m in a.members] == ids[:2]
    assert h.heartbeat("g", ids[2], generation) == E.UNKNOWN_MEMBER_ID


def test_session_timeout_expiry_triggers_a_rebalance() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    for _ in range(2):
        h.advance(SESSION_MS * 2 // 5)
        assert h.heartbeat("g", ids[0], generation) == E.NONE
    h.advance(SESSION_MS // 5 - 1)
    assert h.coord.state_of("g") is GroupState.STABLE
    h.advance(1)
    # ids[1] has not heartbeaten for the session timeout (10 s): gone, and the group rebalances.
    snapshot = h.coord.group("g")
    assert snapshot is not None and [m.member_id for m in snapshot.members] == [ids[0]]
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", ids[0], generation) == E.REBALANCE_IN_PROGRESS
    again = joined(h, h.join("g", ids[0]))
    assert again.generation_id == generation + 1 and again.leader == ids[0]
    assert [m.member_id for m in again.members] == [ids[0]]


def test_a_leader_that_never_syncs_is_dropped_and_waiting_followers_told_to_rejoin() -> None:
    h = Harness(DELAYED)
    ids, tokens = [], []
    for _ in range(2):
        member_id, token = h.join_new("g", session_ms=60_000)  # sessions outlast the rebalance timeout
        ids.append(member_id)
        tokens.append(token)
    h.advance(100)
    h.advance(100)
    generation = joined(h, tokens[0]).generation_id
    joined(h, tokens[1])
    waiting = h.sync("g", ids[1], generation)
    h.advance(29_999)
    assert waiting not in h.answers
    h.advance(1)  # the rebalance timeout after the join phase: the leader never synced
    assert synced(h, waiting).error_code == E.REBALANCE_IN_PROGRESS
    snapshot = h.coord.group("g")
    assert snapshot is not None and [m.member_id for m in snapshot.members] == [ids[1]]


def test_member_id_required_handshake_and_version_3_joins_at_once() -> None:
    h = Harness()
    token = h.join("g", version=4, client_id="app")
    first = joined(h, token)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("app-") and first.generation_id == -1
    assert h.coord.state_of("g") is GroupState.EMPTY
    assert joined(h, h.join("g", first.member_id, version=4)).generation_id == 1

    # v3 has no handshake: the first join is a member already.
    old = joined(h, h.join("h", version=3))
    assert old.error_code == E.NONE and old.generation_id == 1 and old.leader == old.member_id


def test_a_pending_member_that_never_rejoins_expires_and_stops_blocking_the_rebalance() -> None:
    h = Harness()
    ids, generation = run_group(h, "g", 1)
    pending = joined(h, h.join("g"))
    assert pending.error_code == E.MEMBER_ID_REQUIRED
    # A real member rejoins (metadata change); the pending one blocks completion until it expires.
    token = h.join("g", ids[0], topics=("u",))
    assert token not in h.answers
    h.advance(SESSION_MS)
    response = joined(h, token)
    assert response.generation_id == generation + 1
    assert h.heartbeat("g", pending.member_id, generation + 1) == E.UNKNOWN_MEMBER_ID
    late = joined(h, h.join("g", pending.member_id))
    assert late.error_code == E.UNKNOWN_MEMBER_ID  # an expired pending id is unknown


def test_unknown_member_and_illegal_generation() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    assert h.heartbeat("g", "nobody", generation) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("nope", ids[0], generation) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", ids[0], generation - 1) == E.ILLEGAL_GENERATION
    assert synced(h, h.sync("g", ids[0], generation + 5)).error_code == E.ILLEGAL_GENERATION
    assert synced(h, h.sync("g", "nobody", generation)).error_code == E.UNKNOWN_MEMBER_ID
    wrong = synced(h, h.sync("g", ids[1], generation, protocol_name="roundrobin"))
    assert wrong.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # A stable member's SyncGroup is answered from the stored assignment.
    again = synced(h, h.sync("g", ids[1], generation))
    assert again.error_code == E.NONE and assigned(again.assignment) == {"t": [3, 4, 5]}
    assert joined(h, h.join("g", "nobody")).error_code == E.UNKNOWN_MEMBER_ID
    assert joined(h, h.join("absent", "someone")).error_code == E.UNKNOWN_MEMBER_ID


def test_join_validation_errors() -> None:
    h = Harness()
    assert joined(h, h.join("")).error_code == E.INVALID_GROUP_ID
    assert joined(h, h.join("g", session_ms=10)).error_code == E.INVALID_SESSION_TIMEOUT
    assert joined(h, h.join("g", session_ms=1_800_001)).error_code == E.INVALID_SESSION_TIMEOUT
    assert joined(h, h.join("g", protocols=[])).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert joined(h, h.join("g", protocol_type="")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    run_group(h, "k", 1)
    other = joined(h, h.join("k", protocols=[("roundrobin", b"")]))
    assert other.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    other = joined(h, h.join("k", protocol_type="connect"))
    assert other.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    # v0-v6 cannot carry a null protocol name: errors send "".
    assert joined(h, h.join("", version=0)).protocol_name == ""
    assert joined(h, h.join("", version=7)).protocol_name is None


def test_protocol_selection_prefers_the_most_voted_common_protocol() -> None:
    h = Harness(DELAYED)
    both = [("cooperative-sticky", b"c"), ("range", b"r")]
    tokens = [
        h.join_new("g", protocols=both)[1],
        h.join_new("g", protocols=[("range", b"r2"), ("cooperative-sticky", b"c2")])[1],
        h.join_new("g", protocols=both)[1],
    ]
    h.advance(100)
    h.advance(100)
    responses = [joined(h, t) for t in tokens]
    assert {r.protocol_name for r in responses} == {"cooperative-sticky"}
    assert [m.metadata for m in responses[0].members] == [b"c", b"c2", b"c"]
    # A newcomer must support a protocol every member supports.
    assert joined(h, h.join("g", protocols=[("roundrobin", b"")])).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000, max_group_size=1))
    run_group(h, "g", 1)
    full = joined(h, h.join("g"))
    assert full.error_code == E.GROUP_MAX_SIZE_REACHED and full.member_id == ""


def test_duplicate_join_is_answered_and_replaced() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    first = h.join("g", ids[0], topics=("x",))
    second = h.join("g", ids[0], topics=("x",))
    assert joined(h, first).error_code == E.REBALANCE_IN_PROGRESS
    third = h.join("g", ids[1])
    assert joined(h, second).generation_id == joined(h, third).generation_id == generation + 1


def test_leave_group_versions_and_batch() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 3)
    old = h.leave("g", (ids[0], None), version=0)
    assert old.error_code == E.NONE
    unknown = h.leave("g", ("nobody", None), version=1)
    assert unknown.error_code == E.UNKNOWN_MEMBER_ID
    batch = h.leave("g", (ids[1], None), ("nobody", None), ("", "no-such-instance"), version=3)
    assert batch.error_code == E.NONE
    assert [m.error_code for m in batch.members] == [E.NONE, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
    assert h.leave("absent", (ids[2], None)).error_code == E.UNKNOWN_MEMBER_ID
    h.leave("g", (ids[2], None))
    assert h.coord.state_of("g") is GroupState.EMPTY
    snapshot = h.coord.group("g")
    assert snapshot is not None and snapshot.generation == generation + 1 and snapshot.members == ()


def test_rebalance_with_zero_delay_cascades_member_by_member() -> None:
    h = Harness(CONFIG)
    a, token_a = h.join_new("g")
    first = joined(h, token_a)  # no delay: generation 1 with one member at once
    assert first.generation_id == 1 and first.leader == a
    _, token_b = h.join_new("g")
    assert token_b not in h.answers
    # a learns of the rebalance when it syncs, then rejoins.
    assert synced(h, h.sync("g", a, 1)).error_code == E.REBALANCE_IN_PROGRESS
    token_a = h.join("g", a)
    ra, rb = joined(h, token_a), joined(h, token_b)
    assert ra.generation_id == rb.generation_id == 2 and ra.leader == a and len(ra.members) == 2


def test_handle_rejects_other_apis_and_unknown_versions() -> None:
    coordinator = GroupCoordinator(CONFIG)
    with pytest.raises(LocalProtocolError):
        coordinator.handle(1, FindCoordinatorRequest(key="g"), 0, 0)
    h = Harness()
    with pytest.raises(LocalProtocolError):
        h.join("g", version=99)


def test_next_deadline_and_time_never_goes_back() -> None:
    coordinator = GroupCoordinator(DELAYED)
    assert coordinator.next_deadline_ms() == 0  # before any time was seen: tick at once
    assert coordinator.tick(1_000) == []
    assert coordinator.next_deadline_ms() == 1_000 + DELAYED.offsets_retention_check_interval_ms
    h = Harness(DELAYED, coordinator=coordinator)
    h.now = 1_000
    _, token = h.join_new("g")
    assert coordinator.next_deadline_ms() == 1_100
    h.now = 500  # a late caller: acts at the latest time seen
    h.advance(0)
    assert token not in h.answers
    h.now = 1_100
    h.advance(0)
    assert token in h.answers
