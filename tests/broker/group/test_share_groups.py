"""KIP-932 share groups on the coordinator alone: ShareGroupHeartbeat (join, epochs, leave,
fencing, session expiry, the ``simple`` assignor) and ShareGroupDescribe, ListGroups."""

from __future__ import annotations

import uuid

from kafka_wire.broker.group import GroupCoordinator
from kafka_wire.broker.group.share_groups import simple_assignment
from kafka_wire.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.broker.group.harness import CONFIG, Harness

E = ErrorCode
T, U = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t": (T, 3), "u": (U, 1)}


def harness(topics: dict[str, tuple[uuid.UUID, int]] = TOPICS) -> Harness:
    coordinator = GroupCoordinator(
        CONFIG, topics=lambda: [(name, topic_id, n) for name, (topic_id, n) in topics.items()]
    )
    return Harness(CONFIG, coordinator)


def beat(
    h: Harness, member: str, epoch: int, topics: list[str] | None = None, group: str = "sg"
) -> ShareGroupHeartbeatResponse:
    response = h.call(
        ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
        ),
        1,
    )
    assert isinstance(response, ShareGroupHeartbeatResponse)
    return response


def owned(response: ShareGroupHeartbeatResponse) -> dict[uuid.UUID, list[int]]:
    assert response.assignment is not None
    return {tp.topic_id: tp.partitions for tp in response.assignment.topic_partitions}


def test_members_join_share_partitions_and_leave() -> None:
    h = harness()
    a = beat(h, "a", 0, ["t", "u"])
    assert (a.error_code, a.member_id, a.member_epoch, a.heartbeat_interval_ms) == (E.NONE, "a", 1, 5000)
    assert owned(a) == {T: [0, 1, 2], U: [0]}
    b = beat(h, "b", 0, ["t", "u"])
    assert b.member_epoch == 2
    # Two members, one partition of u: both get it (a share-partition has many consumers).
    assert owned(b) == {T: [1], U: [0]}
    a2 = beat(h, "a", 1)
    assert a2.member_epoch == 2 and owned(a2) == {T: [0, 2], U: [0]}
    same = beat(h, "a", 2)
    assert same.error_code == E.NONE and same.assignment is None  # nothing changed: no assignment
    left = beat(h, "b", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (E.NONE, "b", -1)
    back = beat(h, "a", 2)
    assert back.member_epoch == 3 and owned(back) == {T: [0, 1, 2], U: [0]}


def test_errors_as_kafka_gives_them() -> None:
    h = harness()
    assert beat(h, "", 0, ["t"]).error_code == E.INVALID_REQUEST
    assert beat(h, "a", 0, None).error_message == "SubscribedTopicNames must be set in first request."
    assert beat(h, "a", -2).error_code == E.INVALID_REQUEST
    assert beat(h, "a", 1).error_code == E.GROUP_ID_NOT_FOUND  # no group yet
    beat(h, "a", 0, ["t"])
    assert beat(h, "x", 3).error_code == E.UNKNOWN_MEMBER_ID
    assert beat(h, "x", -1).error_code == E.UNKNOWN_MEMBER_ID
    assert beat(h, "a", 7).error_code == E.FENCED_MEMBER_EPOCH
    beat(h, "b", 0, ["t"])
    assert beat(h, "a", 1).member_epoch == 2  # a's epoch moves to 2 (previous: 1)
    lost = beat(h, "a", 1)  # the previous epoch: the answer that moved it was lost
    assert (lost.error_code, lost.member_epoch) == (E.NONE, 2) and lost.assignment is not None
    stale = beat(h, "a", 0, ["t"])
    assert (stale.error_code, stale.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        "The share group member has a smaller member epoch (0) than the one known by the group "
        "coordinator (2), and it does not match the previous member epoch (1). The member must "
        "abandon all its partitions and rejoin.",
    )
    # A group id held by a consumer group is not a share group.
    joined = h.call(
        ConsumerGroupHeartbeatRequest(
            group_id="cg",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        ),
        1,
    )
    assert isinstance(joined, ConsumerGroupHeartbeatResponse) and joined.error_code == E.NONE
    refused = beat(h, "a", 0, ["t"], group="cg")
    assert (refused.error_code, refused.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group cg is not a share group.",
    )


def test_session_timeout_fences_a_silent_member() -> None:
    h = harness()
    epoch = beat(h, "a", 0, ["t"]).member_epoch
    beat(h, "b", 0, ["t"])
    for _ in range(10):  # 50 s: b's session (45 s) runs out, a keeps heartbeating
        h.advance(5000)
        a = beat(h, "a", epoch)
        assert a.error_code == E.NONE
        epoch = a.member_epoch
    assert epoch == 3  # b joined (2), then was fenced (3)
    group = h.coord.share_group_view("sg")
    assert group is not None and list(group.members) == ["a"]
    assert beat(h, "b", 2).error_code == E.UNKNOWN_MEMBER_ID


def test_describe_and_list() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    described = h.call(ShareGroupDescribeRequest(group_ids=["sg", "nope"]), 1)
    assert isinstance(described, ShareGroupDescribeResponse)
    found, missing = described.groups
    assert (found.group_state, found.group_epoch, found.assignment_epoch, found.assignor_name) == (
        "Stable",
        1,
        1,
        "simple",
    )
    member = found.members[0]
    assert member.subscribed_topic_names == ["t"]
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] == [("t", [0, 1, 2])]
    assert missing.error_code == E.GROUP_ID_NOT_FOUND
    listed = h.call(ListGroupsRequest(types_filter=["share"]), 5)
    assert isinstance(listed, ListGroupsResponse)
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed.groups] == [
        ("sg", "share", "Stable", "share")
    ]
    beat(h, "a", -1)
    listed = h.call(ListGroupsRequest(), 5)
    assert isinstance(listed, ListGroupsResponse)
    assert [(g.group_id, g.group_state) for g in listed.groups] == [("sg", "Empty")]
    classic = h.call(DescribeGroupsRequest(groups=["sg"]), 6)
    assert (
        isinstance(classic, DescribeGroupsResponse) and classic.groups[0].error_code == E.GROUP_ID_NOT_FOUND
    )


def test_describe_reads_the_stored_group() -> None:
    """ShareGroupDescribe reads at the last stored write (Kafka's read at the last committed
    offset): a group whose first records are not stored does not exist yet, a member whose join
    is not stored is not listed."""
    h = harness()
    h.held = []

    def described() -> list[str] | int:
        answer = h.call(ShareGroupDescribeRequest(group_ids=["sg"]), 1)
        assert isinstance(answer, ShareGroupDescribeResponse)
        (group,) = answer.groups
        return group.error_code or sorted(m.member_id for m in group.members)

    h.send(
        ShareGroupHeartbeatRequest(
            group_id="sg", member_id="a", member_epoch=0, subscribed_topic_names=["t"]
        ),
        1,
    )
    assert h.held and described() == E.GROUP_ID_NOT_FOUND
    for write in list(h.held):
        h.report(write)
    assert described() == ["a"]
    h.send(
        ShareGroupHeartbeatRequest(
            group_id="sg", member_id="b", member_epoch=0, subscribed_topic_names=["t"]
        ),
        1,
    )
    assert h.held and described() == ["a"]
    for write in list(h.held):
        h.report(write)
    assert described() == ["a", "b"]


def test_simple_assignor_gives_every_member_partitions() -> None:
    topics = {T: 2}
    members = {m: frozenset({T}) for m in ("a", "b", "c", "d", "e")}
    out = simple_assignment(members, topics)
    assert all(out[m][T] for m in members)
    assert {p for m in members for p in out[m][T]} == {0, 1}
    assert simple_assignment({"a": frozenset({T}), "b": frozenset()}, topics) == {"a": {T: (0, 1)}, "b": {}}


def test_share_groups_are_written_and_loaded_back() -> None:
    """Every change is written to ``__consumer_offsets`` in Kafka's share group records; a new
    coordinator that loads them has the same groups, members, epochs and assignments."""
    h = harness()
    beat(h, "a", 0, ["t", "u"])
    beat(h, "b", 0, ["t"])
    a = beat(h, "a", 1)
    beat(h, "c", 0, ["u"])
    beat(h, "c", -1)  # c's records are tombstoned
    versions = {int.from_bytes(k[:2], "big") for k, _ in h.log}
    assert versions == {10, 11, 12, 13, 14, 15}
    fresh = harness()
    fresh.coord.load(h.log)
    before, after = h.coord.share_group_view("sg"), fresh.coord.share_group_view("sg")
    assert after is not None and before is not None
    assert (after.group_epoch, after.assignment_epoch, after.topics_hash) == (
        before.group_epoch,
        before.assignment_epoch,
        before.topics_hash,
    )
    assert after.members == before.members and after.targets == before.targets
    assert after.state is before.state
    # A loaded member goes on at its epoch as it would have; its session runs from the first time
    # seen.
    again, there = beat(fresh, "a", a.member_epoch), beat(h, "a", a.member_epoch)
    assert (again.error_code, again.member_epoch, again.assignment) == (
        E.NONE,
        there.member_epoch,
        there.assignment,
    )
    fresh.advance(46_000)
    group = fresh.coord.share_group_view("sg")
    assert group is not None and list(group.members) == []  # nobody heartbeat for 46 s


def test_a_refused_write_puts_the_group_back() -> None:
    h = harness()
    beat(h, "a", 0, ["t"])
    h.append_error = E.NOT_ENOUGH_REPLICAS
    refused = beat(h, "b", 0, ["t"])
    assert refused.error_code == E.COORDINATOR_NOT_AVAILABLE  # Kafka's mapping of the append error
    group = h.coord.share_group_view("sg")
    assert group is not None and list(group.members) == ["a"] and group.group_epoch == 1


def test_other_protocols_and_deletion_as_kafka_answers() -> None:
    """Kafka 4.4's answers (seen on it): a consumer heartbeat for a share group's id is
    GROUP_ID_NOT_FOUND, a JoinGroup INCONSISTENT_GROUP_PROTOCOL; DeleteGroups refuses a share
    group with members (NON_EMPTY_GROUP) and deletes an empty one, its records tombstoned."""
    h = harness()
    beat(h, "a", 0, ["t"])
    cgh = h.call(
        ConsumerGroupHeartbeatRequest(
            group_id="sg",
            member_id="c",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        ),
        1,
    )
    assert isinstance(cgh, ConsumerGroupHeartbeatResponse)
    assert (cgh.error_code, cgh.error_message) == (E.GROUP_ID_NOT_FOUND, "Group sg is not a consumer group.")
    join = h.call(
        JoinGroupRequest(
            group_id="sg",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        9,
    )
    assert isinstance(join, JoinGroupResponse) and join.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    busy = h.call(DeleteGroupsRequest(groups_names=["sg"]), 2)
    assert isinstance(busy, DeleteGroupsResponse) and busy.results[0].error_code == E.NON_EMPTY_GROUP
    beat(h, "a", -1)
    gone = h.call(DeleteGroupsRequest(groups_names=["sg"]), 2)
    assert isinstance(gone, DeleteGroupsResponse) and gone.results[0].error_code == E.NONE
    assert h.coord.share_group_view("sg") is None
    fresh = harness()
    fresh.coord.load(h.log)
    assert fresh.coord.share_group_view("sg") is None
