"""Static membership (KIP-345): rejoin without rebalance, fencing, KIP-814 skip_assignment."""

from __future__ import annotations

from kafka_wire.broker.group import GroupState
from kafka_wire.messages import ErrorCode, JoinGroupResponse, SyncGroupResponse
from tests.broker.group.harness import DELAYED, Harness, assigned, range_assign

E = ErrorCode


def static_group(h: Harness, version: int = 9) -> tuple[dict[str, str], int, dict[str, bytes]]:
    """Instances "a" and "b" in a stable group; returns ({instance: member id}, generation, plan)."""
    tokens = {i: h.join("g", instance=i, version=version, client_id=f"app-{i}") for i in ("a", "b")}
    h.advance(100)
    h.advance(100)
    answers = {i: h.answer(t) for i, t in tokens.items()}
    ids = {}
    for instance, response in answers.items():
        assert isinstance(response, JoinGroupResponse) and response.error_code == E.NONE
        assert response.member_id.startswith(f"{instance}-"), "static ids start with the instance id"
        ids[instance] = response.member_id
    leader = answers["a"]
    assert isinstance(leader, JoinGroupResponse)
    assert [(m.member_id, m.group_instance_id) for m in leader.members] == [(ids["a"], "a"), (ids["b"], "b")]
    generation = leader.generation_id
    plan = range_assign(list(ids.values()), "t", 4)
    follower = h.sync("g", ids["b"], generation, instance="b")
    h.answer(h.sync("g", ids["a"], generation, plan, instance="a"))
    assert isinstance(h.answer(follower), SyncGroupResponse)
    return ids, generation, plan


def test_static_follower_restarts_without_a_rebalance() -> None:
    h = Harness(DELAYED)
    ids, generation, plan = static_group(h)
    before = len(h.log)
    response = h.answer(h.join("g", instance="b", version=9))  # a restarted process: no member id
    assert isinstance(response, JoinGroupResponse)
    assert response.error_code == E.NONE and response.generation_id == generation
    assert response.member_id != ids["b"] and response.member_id.startswith("b-")
    assert response.leader == ids["a"] and response.members == [] and not response.skip_assignment
    assert h.coord.state_of("g") is GroupState.STABLE
    assert len(h.log) == before + 1, "the new member id is stored"
    # The old incarnation is fenced; the new one gets the same assignment without a rebalance.
    assert h.heartbeat("g", ids["b"], generation, instance="b") == E.FENCED_INSTANCE_ID
    assert h.heartbeat("g", response.member_id, generation, instance="b") == E.NONE
    sync = h.answer(h.sync("g", response.member_id, generation, instance="b"))
    assert isinstance(sync, SyncGroupResponse) and sync.assignment == plan[ids["b"]]
    assert h.heartbeat("g", ids["a"], generation, instance="a") == E.NONE


def test_static_leader_rejoin_gets_members_and_skip_assignment_from_v9() -> None:
    h = Harness(DELAYED)
    _ids, _generation, _ = static_group(h)
    response = h.answer(h.join("g", instance="a", version=9))
    assert isinstance(response, JoinGroupResponse)
    assert response.skip_assignment and response.leader == response.member_id
    assert sorted(m.group_instance_id or "" for m in response.members) == ["a", "b"]
    assert h.coord.state_of("g") is GroupState.STABLE


def test_static_leader_rejoin_before_v9_is_told_the_old_leader_id() -> None:
    h = Harness(DELAYED)
    ids, generation, plan = static_group(h, version=7)
    response = h.answer(h.join("g", instance="a", version=7))
    assert isinstance(response, JoinGroupResponse)
    assert response.leader == ids["a"] != response.member_id, "an old client must not think it leads"
    assert response.members == []
    sync = h.answer(h.sync("g", response.member_id, generation, instance="a"))
    assert isinstance(sync, SyncGroupResponse) and assigned(sync.assignment) == assigned(plan[ids["a"]])


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    h = Harness(DELAYED)
    token = h.join("g", instance="a", version=9)
    h.advance(100)
    first = h.answer(token)
    assert isinstance(first, JoinGroupResponse)
    h.answer(h.sync("g", first.member_id, first.generation_id, {first.member_id: b"x"}, instance="a"))
    assert h.coord.state_of("g") is GroupState.STABLE
    # Same selected protocol (only the metadata changed): answered at once, no rebalance.
    same = h.answer(h.join("g", instance="a", protocols=[("range", b"new")], version=9))
    assert isinstance(same, JoinGroupResponse) and same.generation_id == first.generation_id
    # Preferring a protocol every member now supports changes the selection: a rebalance.
    token = h.join("g", instance="a", protocols=[("roundrobin", b""), ("range", b"")], version=9)
    assert h.coord.state_of("g") is not GroupState.STABLE
    h.advance(0)
    changed = h.answer(token)
    assert isinstance(changed, JoinGroupResponse)
    assert changed.generation_id == first.generation_id + 1 and changed.protocol_name == "roundrobin"


def test_fencing_of_a_known_member_id_with_another_instance_mapping() -> None:
    h = Harness(DELAYED)
    ids, generation, _ = static_group(h)
    assert h.heartbeat("g", ids["a"], generation, instance="b") == E.FENCED_INSTANCE_ID
    assert h.heartbeat("g", ids["a"], generation, instance="zzz") == E.UNKNOWN_MEMBER_ID
    fenced = h.answer(h.join("g", ids["a"], instance="b", version=9))
    assert isinstance(fenced, JoinGroupResponse) and fenced.error_code == E.FENCED_INSTANCE_ID
    assert h.commit("g", {("t", 0): 1}, generation=generation, member_id=ids["a"], instance="b") == {
        ("t", 0): E.FENCED_INSTANCE_ID
    }


def test_a_pending_join_of_the_old_incarnation_is_fenced() -> None:
    h = Harness(DELAYED)
    ids, generation, _ = static_group(h)
    # a triggers a rebalance; b's old incarnation rejoins, then b restarts and rejoins without id.
    h.join("g", ids["a"], instance="a", version=9)
    old = h.join("g", ids["b"], instance="b", version=9)
    # Both known members rejoined: the join phase completed at once.
    first = h.answer(old)
    assert isinstance(first, JoinGroupResponse) and first.generation_id == generation + 1
    # Now in CompletingRebalance, b restarts: its old id is replaced and a new rebalance starts.
    waiting = h.sync("g", ids["b"], generation + 1, instance="b")
    new = h.join("g", instance="b", version=9)
    fenced = h.answer(waiting)
    assert isinstance(fenced, SyncGroupResponse) and fenced.error_code == E.FENCED_INSTANCE_ID
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    assert new not in h.answers


def test_static_members_that_do_not_rejoin_stay_in_the_group() -> None:
    h = Harness(DELAYED)
    ids, generation, _ = static_group(h)
    token = h.join("g", ids["a"], instance="a", protocols=[("range", b"changed")], version=9)
    # b keeps heartbeating but does not rejoin: at the rebalance timeout, a's join completes and
    # b, being static, is kept as a member (it gets no JoinGroup answer).
    for _ in range(6):
        h.advance(5_000)
        h.heartbeat("g", ids["b"], generation, instance="b")
    response = h.answer(token)
    assert isinstance(response, JoinGroupResponse) and response.generation_id == generation + 1
    assert [m.member_id for m in response.members] == [ids["a"], ids["b"]]


def test_static_member_leaves_by_instance_id() -> None:
    h = Harness(DELAYED)
    _ids, _generation, _ = static_group(h)
    left = h.leave("g", ("", "b"))
    assert [(m.group_instance_id, m.error_code) for m in left.members] == [("b", E.NONE)]
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    snapshot = h.coord.group("g")
    assert snapshot is not None and [m.group_instance_id for m in snapshot.members] == ["a"]
