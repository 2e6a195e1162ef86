"""ListGroups, DescribeGroups, DeleteGroups and OffsetDelete."""

from __future__ import annotations

import pytest

from kafka_wire.broker.group import GroupState
from kafka_wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
)
from tests.broker.group.harness import DELAYED, Harness, assigned, run_group, subscription

E = ErrorCode


def populated() -> tuple[Harness, list[str], int]:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "live", 2)
    h.commit("live", {("t", 0): 4, ("other", 0): 8}, generation=generation, member_id=ids[0])
    h.commit("simple", {("t", 0): 1})
    return h, ids, generation


@pytest.mark.parametrize("version", range(6))
def test_list_groups(version: int) -> None:
    h, _, _ = populated()
    response = h.call(ListGroupsRequest(), version)
    assert isinstance(response, ListGroupsResponse) and response.error_code == E.NONE
    assert [(g.group_id, g.protocol_type) for g in response.groups] == [("live", "consumer"), ("simple", "")]
    if version >= 4:
        assert [g.group_state for g in response.groups] == ["Stable", "Empty"]
        only = h.call(ListGroupsRequest(states_filter=[" EMPTY "]), version)
        assert isinstance(only, ListGroupsResponse) and [g.group_id for g in only.groups] == ["simple"]
    if version >= 5:
        assert {g.group_type for g in response.groups} == {"classic"}
        none = h.call(ListGroupsRequest(types_filter=["consumer"]), version)
        assert isinstance(none, ListGroupsResponse) and none.groups == []
        some = h.call(ListGroupsRequest(types_filter=["Classic"]), version)
        assert isinstance(some, ListGroupsResponse) and len(some.groups) == 2


@pytest.mark.parametrize("version", range(7))
def test_describe_groups(version: int) -> None:
    h, ids, _ = populated()
    response = h.call(DescribeGroupsRequest(groups=["live", "simple", "absent"]), version)
    assert isinstance(response, DescribeGroupsResponse)
    live, simple, absent = response.groups
    assert (live.group_state, live.protocol_type, live.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.client_host) for m in live.members] == [
        (ids[0], "client", "/10.0.0.1"),
        (ids[1], "client", "/10.0.0.1"),
    ]
    assert all(m.member_metadata == subscription("t") for m in live.members)
    assert assigned(live.members[1].member_assignment) == {"t": [3, 4, 5]}
    assert (simple.group_state, simple.members) == ("Empty", [])
    assert absent.group_state == "Dead"
    assert absent.error_code == (E.GROUP_ID_NOT_FOUND if version >= 6 else E.NONE)


def test_describe_during_a_rebalance_hides_member_metadata() -> None:
    h, ids, _ = populated()
    h.join("live", ids[0], topics=("t", "z"))
    response = h.call(DescribeGroupsRequest(groups=["live"]), 5)
    assert isinstance(response, DescribeGroupsResponse)
    [live] = response.groups
    assert live.group_state == "PreparingRebalance" and live.protocol_data == ""
    assert all(m.member_metadata == b"" for m in live.members)


@pytest.mark.parametrize("version", range(4))
def test_delete_groups(version: int) -> None:
    h, ids, _ = populated()
    response = h.call(DeleteGroupsRequest(groups_names=["live", "simple", "absent", ""]), version)
    assert isinstance(response, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("live", E.NON_EMPTY_GROUP),
        ("simple", E.NONE),
        ("absent", E.GROUP_ID_NOT_FOUND),
        ("", E.INVALID_GROUP_ID),
    ]
    assert h.coord.group("simple") is None
    assert h.fetch("simple", {"t": [0]})[1] == {("t", 0): (-1, "", 0)}
    tombstones = [key for key, value in h.log if value is None]
    assert len(tombstones) == 2, "one offset and the group metadata"
    # Once empty, the live group can be deleted too, with its offsets.
    h.leave("live", (ids[0], None), (ids[1], None))
    assert h.coord.state_of("live") is GroupState.EMPTY
    again = h.call(DeleteGroupsRequest(groups_names=["live"]), version)
    assert isinstance(again, DeleteGroupsResponse) and again.results[0].error_code == E.NONE
    assert h.coord.groups() == []
    assert h.fetch("live", None) == (E.NONE, {})


def offset_delete(h: Harness, group: str, topics: dict[str, list[int]]) -> OffsetDeleteResponse:
    request = OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in topics.items()
        ],
    )
    response = h.call(request, 0)
    assert isinstance(response, OffsetDeleteResponse)
    return response


def test_offset_delete_refuses_subscribed_topics_of_a_consumer_group() -> None:
    h, _, _ = populated()
    response = offset_delete(h, "live", {"t": [0], "other": [0, 1]})
    assert response.error_code == E.NONE
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        ("t", [(0, E.GROUP_SUBSCRIBED_TO_TOPIC)]),
        ("other", [(0, E.NONE), (1, E.NONE)]),
    ]
    assert h.fetch("live", None)[1] == {("t", 0): (4, "", 0)}
    assert h.log[-1][1] is None


def test_offset_delete_group_errors() -> None:
    h, _, _ = populated()
    assert offset_delete(h, "absent", {"t": [0]}).error_code == E.GROUP_ID_NOT_FOUND
    assert offset_delete(h, "", {"t": [0]}).error_code == E.INVALID_GROUP_ID
    assert offset_delete(h, "simple", {"t": [0]}).topics[0].partitions[0].error_code == E.NONE
    assert h.fetch("simple", None)[1] == {}
    # A non-consumer group with members: NON_EMPTY_GROUP.
    _, token = h.join_new("connect", protocol_type="connect", protocols=[("v1", b"")])
    h.advance(200)
    assert h.answer(token) is not None
    assert offset_delete(h, "connect", {"t": [0]}).error_code == E.NON_EMPTY_GROUP
