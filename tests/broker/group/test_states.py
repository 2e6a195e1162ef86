"""The transition table, a random-walk state machine with invariants, and determinism."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.broker.group import (
    GROUP_TRANSITIONS,
    GroupConfig,
    GroupCoordinator,
    GroupEffect,
    GroupInput,
    GroupSnapshot,
    GroupState,
    KeyValue,
    Persist,
    Respond,
)
from kafka_wire.broker.group.records import GroupMetadataKey, decode_group_metadata_value, decode_key
from kafka_wire.broker.group.states import can_rebalance, transition
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import (
    DeleteGroupsRequest,
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from tests.broker.group.harness import Harness, subscription

E = ErrorCode


@pytest.mark.parametrize("state", list(GroupState))
@pytest.mark.parametrize("move", list(GroupInput))
def test_every_state_and_input_pair(state: GroupState, move: GroupInput) -> None:
    if (state, move) in GROUP_TRANSITIONS:
        assert transition(state, move) is GROUP_TRANSITIONS[state, move]
    else:
        with pytest.raises(LocalProtocolError):
            transition(state, move)
    assert can_rebalance(state) == ((state, GroupInput.PREPARE_REBALANCE) in GROUP_TRANSITIONS)


def test_dead_is_final_and_every_live_state_is_reachable() -> None:
    assert not [move for (state, move) in GROUP_TRANSITIONS if state is GroupState.DEAD]
    assert {target for target in GROUP_TRANSITIONS.values()} | {GroupState.EMPTY} == set(GroupState)


# -- the random walk ----------------------------------------------------------------------------

REBALANCE_MS = 8_000
MACHINE_CONFIG = GroupConfig(
    initial_rebalance_delay_ms=50,
    min_session_timeout_ms=1_000,
    offsets_retention_ms=30_000,
    offsets_retention_check_interval_ms=7_000,
)
GROUPS = ("g", "h")
#: Slots 0-1 are static members ("s0", "s1"), 2-4 dynamic.
SLOTS = 5


@dataclass
class Client:
    instance: str | None
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    members: tuple[str, ...] = ()
    synced: bool = False


class GroupMachine(RuleBasedStateMachine):
    """Random member actions and time steps against one coordinator."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(MACHINE_CONFIG)
        self.clients = {(g, i): Client(f"s{i}" if i < 2 else None) for g in GROUPS for i in range(SLOTS)}
        self.sent_at: dict[int, tuple[int, str, int]] = {}  # token -> (time, group, slot)
        self.leaders: dict[tuple[str, int, int], set[str]] = {}  # (group, incarnation, generation) -> leaders
        self.incarnation = dict.fromkeys(GROUPS, 0)
        self.last_generation = dict.fromkeys(GROUPS, 0)
        self.seen = 0
        #: Groups whose log is behind memory by design: the metadata of a join phase that ended
        #: empty was refused (Kafka only logs that failure); cleared by the group's next stored metadata.
        self.behind: set[str] = set()
        self.effects_seen = 0
        self.h.advance(0)  # show the coordinator a time: it arms its retention timer

    # -- plumbing -------------------------------------------------------------------------------

    def _send(self, group: str, slot: int, request: object, version: int) -> None:
        assert isinstance(request, JoinGroupRequest | SyncGroupRequest)
        token = self.h.send(request, version)
        self.sent_at[token] = (self.h.now, group, slot)
        self._collect()

    def _collect(self) -> None:
        for effect in self.h.effects[self.seen :]:
            if isinstance(effect, Respond) and isinstance(effect.token, int) and effect.token in self.sent_at:
                _, group, slot = self.sent_at.pop(effect.token)
                body = self.h.answers.pop(effect.token)
                client = self.clients[group, slot]
                if isinstance(body, JoinGroupResponse):
                    self._joined(group, slot, body)
                    continue
                assert isinstance(body, SyncGroupResponse)
                if body.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
                    client.member_id, client.generation = "", -1
                else:
                    client.synced = body.error_code == E.NONE
        self.seen = len(self.h.effects)
        for group in GROUPS:
            if self.h.coord.group(group) is None:
                self.incarnation[group] += 1
                self.last_generation[group] = 0

    def _joined(self, group: str, slot: int, body: JoinGroupResponse) -> None:
        client = self.clients[group, slot]
        if body.error_code == E.MEMBER_ID_REQUIRED:
            client.member_id = body.member_id
        elif body.error_code == E.NONE:
            client.member_id = body.member_id
            client.generation = body.generation_id
            client.leader = body.leader == body.member_id and not body.skip_assignment
            client.members = tuple(m.member_id for m in body.members)
            client.synced = False
            if client.leader:
                key = (group, self.incarnation[group], body.generation_id)
                self.leaders.setdefault(key, set()).add(body.member_id)
        elif body.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            client.member_id = ""
            client.generation = -1

    def _tick(self) -> None:
        self.h.advance(0)
        self._collect()

    # -- rules ----------------------------------------------------------------------------------

    @rule(
        group=st.sampled_from(GROUPS),
        slot=st.integers(0, SLOTS - 1),
        version=st.sampled_from([3, 5, 7, 9]),
        protocol=st.sampled_from(["range", "roundrobin"]),
        fresh=st.booleans(),
    )
    def join(self, group: str, slot: int, version: int, protocol: str, fresh: bool) -> None:
        client = self.clients[group, slot]
        if fresh:
            client.member_id = ""  # a restarted process
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=3_000 + 1_000 * slot,
            rebalance_timeout_ms=REBALANCE_MS,
            member_id=client.member_id,
            group_instance_id=client.instance if version >= 5 else None,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(name=protocol, metadata=subscription("t")),
                JoinGroupRequestProtocol(name="range", metadata=subscription("t")),
            ],
        )
        self._send(group, slot, request, version)

    @rule(group=st.sampled_from(GROUPS), slot=st.integers(0, SLOTS - 1), version=st.sampled_from([0, 3, 5]))
    def sync(self, group: str, slot: int, version: int) -> None:
        client = self.clients[group, slot]
        assignments = []
        if client.leader:
            assignments = [
                SyncGroupRequestAssignment(member_id=m, assignment=m.encode()) for m in client.members
            ]
        request = SyncGroupRequest(
            group_id=group,
            generation_id=client.generation,
            member_id=client.member_id,
            group_instance_id=client.instance if version >= 3 else None,
            assignments=assignments,
        )
        self._send(group, slot, request, version)

    @rule(group=st.sampled_from(GROUPS), slot=st.integers(0, SLOTS - 1))
    def heartbeat(self, group: str, slot: int) -> None:
        client = self.clients[group, slot]
        request = HeartbeatRequest(
            group_id=group,
            generation_id=client.generation,
            member_id=client.member_id,
            group_instance_id=client.instance,
        )
        response = self.h.call(request, 4)
        assert isinstance(response, HeartbeatResponse)
        if response.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            client.member_id, client.generation = "", -1
        elif response.error_code == E.REBALANCE_IN_PROGRESS:
            client.synced = False
        self._collect()

    @rule(group=st.sampled_from(GROUPS), slot=st.integers(0, SLOTS - 1))
    def behave(self, group: str, slot: int) -> None:
        """What a well-behaved client does next: join, sync, or heartbeat."""
        client = self.clients[group, slot]
        pending = any(g == group and s == slot for _, g, s in self.sent_at.values())
        if pending:
            self.advance(50)
        elif client.generation < 0 or not client.member_id:
            self.join(group, slot, 9, "range", False)
        elif not client.synced:
            self.sync(group, slot, 5)
        else:
            self.heartbeat(group, slot)
            if client.generation < 0 or not client.synced:
                self.join(group, slot, 9, "range", False)

    @rule(group=st.sampled_from(GROUPS), slot=st.integers(0, SLOTS - 1))
    def leave(self, group: str, slot: int) -> None:
        client = self.clients[group, slot]
        identity = LeaveGroupRequestMemberIdentity(
            member_id=client.member_id, group_instance_id=client.instance
        )
        self.h.call(LeaveGroupRequest(group_id=group, members=[identity]), 5)
        self._collect()

    @rule(
        group=st.sampled_from(GROUPS),
        slot=st.integers(0, SLOTS - 1),
        offset=st.integers(0, 1000),
        simple=st.booleans(),
    )
    def commit(self, group: str, slot: int, offset: int, simple: bool) -> None:
        client = self.clients[group, slot]
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1 if simple else client.generation,
            member_id="" if simple else client.member_id,
            topics=[
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=[OffsetCommitRequestPartition(partition_index=slot, committed_offset=offset)],
                )
            ],
        )
        before = self.h.coord.group(group)
        self.h.call(request, 8)
        self._collect()
        after = self.h.coord.group(group)
        # A commit never loses or duplicates other partitions' offsets.
        if before is not None and after is not None:
            others_before = [(t, p, v) for t, p, v in before.offsets if p != slot]
            others_after = [(t, p, v) for t, p, v in after.offsets if p != slot]
            assert others_before == others_after

    @rule(group=st.sampled_from(GROUPS))
    def fetch(self, group: str) -> None:
        self.h.call(OffsetFetchRequest(group_id=group, topics=None), 7)

    @rule(group=st.sampled_from(GROUPS))
    def delete(self, group: str) -> None:
        self.h.call(DeleteGroupsRequest(groups_names=[group]), 2)
        self._collect()

    @rule(error=st.sampled_from([0, 0, E.MESSAGE_TOO_LARGE, E.NOT_LEADER_OR_FOLLOWER]))
    def writes_fail(self, error: int) -> None:
        """From now on the log refuses every write with ``error`` (0: it takes them again)."""
        self.h.append_error = error

    @rule(ms=st.sampled_from([0, 50, 200, 1_000, 2_500, 9_000]))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        self._collect()

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def pending_requests_are_answered_by_their_deadline(self) -> None:
        for sent, _, _ in self.sent_at.values():
            assert self.h.now <= sent + REBALANCE_MS, (
                "a held JoinGroup/SyncGroup outlived the rebalance timeout"
            )

    @invariant()
    def at_most_one_leader_per_generation(self) -> None:
        for leaders in self.leaders.values():
            assert len(leaders) <= 1, leaders

    @invariant()
    def generations_only_increase(self) -> None:
        for group in GROUPS:
            snapshot = self.h.coord.group(group)
            if snapshot is not None:
                assert snapshot.generation >= self.last_generation[group]
                self.last_generation[group] = snapshot.generation

    @invariant()
    def the_log_restores_settled_groups(self) -> None:
        self._track_groups_behind_their_log()
        fresh = GroupCoordinator(MACHINE_CONFIG)
        fresh.load(self.h.log)
        for snapshot in self.h.coord.groups():
            if (
                snapshot.state in (GroupState.STABLE, GroupState.EMPTY)
                and snapshot.group_id not in self.behind
            ):
                assert fresh.group(snapshot.group_id) == snapshot
        for group in GROUPS:
            if self.h.coord.group(group) is None:
                assert fresh.group(group) is None

    def _track_groups_behind_their_log(self) -> None:
        refused = {id(write) for write in self.h.refused}
        for effect in self.h.effects[self.effects_seen :]:
            if not isinstance(effect, Persist):
                continue
            metadata = [v for k, v in effect.records if isinstance(decode_key(k), GroupMetadataKey)]
            if not metadata:
                continue
            if id(effect) not in refused:
                self.behind.discard(effect.group_id)
            elif metadata[-1] is not None and not decode_group_metadata_value(metadata[-1]).members:
                self.behind.add(effect.group_id)
        self.effects_seen = len(self.h.effects)

    @invariant()
    def no_timer_is_overdue(self) -> None:
        deadline = self.h.coord.next_deadline_ms()
        assert deadline is None or deadline > self.h.now


GroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestGroupMachine = GroupMachine.TestCase


# -- determinism --------------------------------------------------------------------------------


def random_script(seed: int, steps: int = 400) -> tuple[list[GroupEffect], list[tuple[bytes, bytes | None]]]:
    rng = random.Random(seed)
    machine = GroupMachine()
    for _ in range(steps):
        group, slot = rng.choice(GROUPS), rng.randrange(SLOTS)
        action = rng.randrange(14)
        if action >= 7:
            machine.behave(group, slot)
            if action == 13:
                machine.advance(rng.choice([50, 200, 1_000]))
        elif action == 0:
            machine.join(
                group, slot, rng.choice([3, 5, 7, 9]), rng.choice(["range", "roundrobin"]), rng.random() < 0.1
            )
        elif action == 1:
            machine.sync(group, slot, rng.choice([0, 3, 5]))
        elif action == 2:
            machine.heartbeat(group, slot)
        elif action == 3:
            machine.commit(group, slot, rng.randrange(1000), rng.random() < 0.3)
        elif action == 4 and rng.random() < 0.2:
            machine.leave(group, slot)
        else:
            machine.advance(rng.choice([0, 50, 200, 1_000, 2_500, 9_000]))
        machine.pending_requests_are_answered_by_their_deadline()
        machine.at_most_one_leader_per_generation()
        machine.generations_only_increase()
        machine.no_timer_is_overdue()
        machine.the_log_restores_settled_groups()
    return machine.h.effects, machine.h.log


def test_same_inputs_give_identical_effects() -> None:
    first = random_script(7)
    second = random_script(7)
    assert first == second
    assert any(
        isinstance(e, Respond) and isinstance(e.body, JoinGroupResponse) and e.body.generation_id > 2
        for e in first[0]
    )
    assert random_script(8) != first


def test_a_late_tick_has_the_same_outcome_as_ticking_on_time() -> None:
    def script(step_ms: int) -> tuple[list[tuple[int, Message | None]], list[GroupSnapshot], list[KeyValue]]:
        h = Harness(MACHINE_CONFIG)
        tokens = [
            h.join("g", version=3, session_ms=4_000 + 1_000 * i, rebalance_ms=REBALANCE_MS) for i in range(3)
        ]
        for _ in range(20_000 // step_ms):
            h.advance(step_ms)
        answers = [(t, h.answers.get(t)) for t in tokens]
        return answers, h.coord.groups(), h.log

    on_time, late = script(50), script(20_000)
    assert on_time == late
    assert on_time[1] == [] or on_time[1][0].state is GroupState.EMPTY  # everyone's session ran out
