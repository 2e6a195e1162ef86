"""KIP-848 consumer groups on the coordinator alone: heartbeats of scripted members that behave as
a consumer does (they give up what the assignment no longer holds at once, and report what they
own on every heartbeat), checked after every step for one owner per partition."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest

from kafka_wire.broker.group import GroupConfig, GroupCoordinator
from kafka_wire.broker.group.consumer_model import ConsumerGroupState
from kafka_wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
    ErrorCode,
    JoinGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from tests.broker.group.harness import CONFIG, Harness, run_group

E = ErrorCode
TOPICS = {"t": (uuid.UUID(int=1), 6), "u": (uuid.UUID(int=2), 3), "other": (uuid.UUID(int=3), 2)}
BY_ID = {topic_id: name for name, (topic_id, _) in TOPICS.items()}
SESSION = 45_000


def harness(config: GroupConfig = CONFIG, topics: dict[str, tuple[uuid.UUID, int]] = TOPICS) -> Harness:
    coordinator = GroupCoordinator(
        config,
        topics=lambda: [(name, topic_id, n) for name, (topic_id, n) in topics.items()],
        topic_name_of=lambda topic_id: next((n for n, (i, _) in topics.items() if i == topic_id), None),
        topic_id_of=lambda name: topics[name][0] if name in topics else None,
    )
    return Harness(config, coordinator)


class Consumer:
    """A KIP-848 consumer as the clients behave: it owns what its last assignment said."""

    def __init__(
        self,
        h: Harness,
        member_id: str,
        *,
        group: str = "g",
        topics: Iterable[str] = ("t",),
        regex: str | None = None,
        instance: str | None = None,
        assignor: str | None = None,
    ) -> None:
        self.h, self.group, self.member_id, self.instance = h, group, member_id, instance
        self.topics, self.regex, self.assignor = list(topics), regex, assignor
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}

    def request(self, epoch: int | None = None) -> ConsumerGroupHeartbeatRequest:
        joining = self.epoch == 0
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch,
            instance_id=self.instance,
            rebalance_timeout_ms=30_000 if joining else -1,
            subscribed_topic_names=self.topics if joining and self.regex is None else None,
            subscribed_topic_regex=self.regex if joining else None,
            server_assignor=self.assignor if joining else None,
            topic_partitions=[
                ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(self.owned.items())
                if ps
            ],
        )

    def beat(self, epoch: int | None = None) -> ConsumerGroupHeartbeatResponse:
        response = self.h.call(self.request(epoch), 1)
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        if response.error_code == 0:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.owned = {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}
        return response

    def leave(self, epoch: int = -1) -> ConsumerGroupHeartbeatResponse:
        response = self.h.call(
            ConsumerGroupHeartbeatRequest(
                group_id=self.group, member_id=self.member_id, member_epoch=epoch, instance_id=self.instance
            ),
            1,
        )
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        self.owned = {}
        return response

    def named(self) -> dict[str, list[int]]:
        return {BY_ID[t]: sorted(ps) for t, ps in sorted(self.owned.items()) if ps}


def check_single_owner(consumers: Iterable[Consumer]) -> None:
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for c in consumers:
        for topic_id, partitions in c.owned.items():
            for p in partitions:
                assert (topic_id, p) not in seen, (
                    f"{topic_id}/{p} owned by {seen[topic_id, p]} and {c.member_id}"
                )
                seen[topic_id, p] = c.member_id


def converge(consumers: list[Consumer], rounds: int = 10) -> None:
    """Heartbeat round after round, checking one owner per partition after every heartbeat."""
    for _ in range(rounds):
        for c in consumers:
            assert c.beat().error_code == 0
            check_single_owner(consumers)
    h = consumers[0].h
    assert h.coord.consumer_group_state(consumers[0].group) is ConsumerGroupState.STABLE


def test_three_members_split_the_partitions_and_a_leave_moves_only_its_own() -> None:
    h = harness()
    consumers = [Consumer(h, f"m{i}") for i in range(3)]
    converge(consumers)
    owned = [c.named() for c in consumers]
    assert sorted(p for o in owned for p in o["t"]) == list(range(6))
    assert all(len(o["t"]) == 2 for o in owned)
    kept = {c.member_id: c.named()["t"] for c in consumers[:2]}
    assert consumers[2].leave().error_code == 0
    survivors = consumers[:2]
    for _ in range(5):
        for c in survivors:
            c.beat()
            check_single_owner(survivors)
            # The survivors never lose a partition they had: no stop-the-world revocation.
            assert set(kept[c.member_id]) <= set(c.named()["t"])
    assert sorted(p for c in survivors for p in c.named()["t"]) == list(range(6))


def test_a_moving_partition_is_revoked_before_it_is_given_away() -> None:
    h = harness()
    first = Consumer(h, "a")
    converge([first])
    assert first.named() == {"t": [0, 1, 2, 3, 4, 5]}
    second = Consumer(h, "b")
    second.beat()
    assert second.owned == {}, "nothing is given before the first member revoked it"
    epoch_before = first.epoch
    response = first.beat()
    assert response.member_epoch == epoch_before, "the revoking member keeps its epoch"
    assert len(first.named()["t"]) == 3
    second.beat()
    assert second.owned == {}, "nor before the first member said it no longer owns it"
    first.beat()
    second.beat()
    check_single_owner([first, second])
    assert len(second.named()["t"]) == 3


def test_session_timeout_fences_a_silent_member() -> None:
    h = harness()
    a, b = Consumer(h, "a"), Consumer(h, "b")
    converge([a, b])
    for _ in range(3):
        h.advance(SESSION // 3)
        a.beat()
    h.advance(1)  # b was silent for the whole session timeout
    response = b.beat()
    assert response.error_code == E.UNKNOWN_MEMBER_ID
    converge([a])
    assert a.named() == {"t": [0, 1, 2, 3, 4, 5]}


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = harness()
    a = Consumer(h, "a")
    converge([a])
    b = Consumer(h, "b")
    b.beat()
    # a is told to revoke, then keeps reporting what it owned before.
    owned = {t: set(ps) for t, ps in a.owned.items()}
    a.beat()
    a.owned = owned
    h.advance(30_000)
    assert a.beat().error_code == E.UNKNOWN_MEMBER_ID


def test_stale_and_future_epochs_are_fenced_and_a_lost_answer_is_forgiven() -> None:
    h = harness()
    a = Consumer(h, "a")
    converge([a])
    assert a.beat(epoch=a.epoch + 1).error_code == E.FENCED_MEMBER_EPOCH
    previous = a.epoch
    Consumer(h, "b").beat()  # a new target: a is moved to a new epoch by its next heartbeat
    a.beat()
    a.beat()
    assert a.epoch > previous
    # The previous epoch with a subset of the assignment: the bump's answer may have been lost.
    assert a.beat(epoch=previous).error_code in (0, E.FENCED_MEMBER_EPOCH)
    assert a.beat(epoch=0 if previous > 1 else -5).error_code in (E.FENCED_MEMBER_EPOCH, E.INVALID_REQUEST)
    unknown = Consumer(h, "nobody")
    unknown.epoch = 3
    assert unknown.beat().error_code == E.UNKNOWN_MEMBER_ID


def test_static_member_leaves_for_a_while_and_its_successor_takes_its_partitions() -> None:
    h = harness()
    a, b = Consumer(h, "a", instance="i-a"), Consumer(h, "b", instance="i-b")
    converge([a, b])
    had = a.named()
    assert a.leave(epoch=-2).member_epoch == -2
    b.beat()
    assert b.named() != {"t": list(range(6))}, "a static member's partitions wait for it"
    again = Consumer(h, "a2", instance="i-a")
    converge([again, b])
    assert again.named() == had
    intruder = Consumer(h, "a3", instance="i-a")
    assert intruder.beat().error_code == E.UNRELEASED_INSTANCE_ID
    stale = Consumer(h, "a", instance="i-a")
    stale.epoch = 5
    assert stale.beat().error_code == E.FENCED_INSTANCE_ID


def test_range_assignor_and_regex_subscription() -> None:
    h = harness()
    a = Consumer(h, "a", topics=(), regex="t|u", assignor="range")
    b = Consumer(h, "b", topics=("t", "u"), assignor="range")
    converge([a, b])
    assert a.named() == {"t": [0, 1, 2], "u": [0, 1]}
    assert b.named() == {"t": [3, 4, 5], "u": [2]}
    described = h.call(ConsumerGroupDescribeRequest(group_ids=["g", "missing"]), 1)
    assert isinstance(described, ConsumerGroupDescribeResponse)
    group, missing = described.groups
    assert (group.group_state, group.assignor_name, len(group.members)) == ("Stable", "range", 2)
    assert group.members[0].subscribed_topic_regex == "t|u"
    assert missing.error_code == E.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"subscribed_topic_regex": "("}, E.INVALID_REGULAR_EXPRESSION),
        ({"server_assignor": "sticky"}, E.UNSUPPORTED_ASSIGNOR),
        ({"rebalance_timeout_ms": -1}, E.INVALID_REQUEST),
        ({"member_id": ""}, E.INVALID_REQUEST),
        ({"topic_partitions": None}, E.INVALID_REQUEST),
        ({"member_epoch": -3}, E.INVALID_REQUEST),
        ({"group_id": ""}, E.INVALID_REQUEST),
    ],
)
def test_bad_heartbeats_get_kafkas_errors(change: dict[str, object], error: int) -> None:
    h = harness()
    request = Consumer(h, "a").request()
    for name, value in change.items():
        setattr(request, name, value)
    response = h.call(request, 1)
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    assert response.error_code == error
    assert response.error_message


def test_offsets_are_committed_at_the_member_epoch() -> None:
    h = harness()
    a = Consumer(h, "a")
    converge([a])
    assert h.commit("g", {("t", 0): 7}, generation=a.epoch, member_id="a", version=9) == {("t", 0): 0}
    assert h.commit("g", {("t", 0): 8}, generation=a.epoch - 1, member_id="a", version=9) == {
        ("t", 0): E.STALE_MEMBER_EPOCH
    }
    assert h.commit("g", {("t", 0): 8}, generation=a.epoch, member_id="a", version=8) == {
        ("t", 0): E.UNSUPPORTED_VERSION
    }
    assert h.commit("g", {("t", 0): 8}, generation=a.epoch, member_id="x", version=9) == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    fetched = h.call(
        OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", member_id="a", member_epoch=a.epoch, topics=None)]
        ),
        9,
    )
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == 7
    stale = h.call(
        OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id="g", member_id="a", member_epoch=0, topics=None)]
        ),
        9,
    )
    assert isinstance(stale, OffsetFetchResponse)
    assert stale.groups[0].error_code == E.STALE_MEMBER_EPOCH


def test_records_replay_into_the_same_groups() -> None:
    h = harness()
    consumers = [Consumer(h, "a", instance="s"), Consumer(h, "b"), Consumer(h, "c", topics=("t", "u"))]
    converge(consumers)
    h.commit("g", {("t", 1): 3}, generation=consumers[0].epoch, member_id="a", version=9)
    consumers[1].leave()
    consumers[0].beat()
    again = harness()
    again.coord.load(h.log)
    assert again.coord.consumer_group_view("g") == h.coord.consumer_group_view("g")
    assert again.fetch("g", {"t": [1]})[1][("t", 1)][0] == 3
    # The loaded members heartbeat on at their epochs.
    for c in (consumers[0], consumers[2]):
        c.h = again
        assert c.beat().error_code == 0


def test_list_groups_shows_types_and_states() -> None:
    h = harness()
    run_group(h, "classic", 1)
    converge([Consumer(h, "a")])
    listed = h.call(ListGroupsRequest(), 5)
    assert isinstance(listed, ListGroupsResponse)
    assert {(g.group_id, g.group_type, g.group_state) for g in listed.groups} == {
        ("classic", "classic", "Stable"),
        ("g", "consumer", "Stable"),
    }
    only = h.call(ListGroupsRequest(types_filter=["consumer"], states_filter=["stable"]), 5)
    assert isinstance(only, ListGroupsResponse)
    assert [g.group_id for g in only.groups] == ["g"]


def test_an_empty_classic_group_is_upgraded_and_an_empty_consumer_group_downgraded() -> None:
    h = harness()
    h.commit("g", {("t", 0): 5})  # an empty classic ("simple") group with an offset
    a = Consumer(h, "a")
    converge([a])
    assert h.fetch("g", {"t": [0]})[1][("t", 0)][0] == 5
    a.leave()
    member_id, token = h.join_new("g")
    joined = h.answer(token)
    assert isinstance(joined, JoinGroupResponse) and joined.error_code == 0 and member_id
    assert h.fetch("g", {"t": [0]})[1][("t", 0)][0] == 5
    # A classic member in a consumer group with members (mixed membership) is refused.
    converge([Consumer(h, "b", group="busy")])
    answer = h.answer(h.join("busy"))
    assert isinstance(answer, JoinGroupResponse) and answer.error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_a_refused_write_puts_the_group_back() -> None:
    h = harness()
    a = Consumer(h, "a")
    converge([a])
    view = h.coord.consumer_group_view("g")
    h.append_error = E.NOT_LEADER_OR_FOLLOWER
    response = Consumer(h, "b").beat()
    assert response.error_code == E.NOT_COORDINATOR
    assert h.coord.consumer_group_view("g") == view
