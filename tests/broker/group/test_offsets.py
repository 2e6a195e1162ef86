"""OffsetCommit / OffsetFetch: simple and group commits, generations, every version, retention."""

from __future__ import annotations

import uuid

import pytest

from kafka_wire.broker.group import GroupConfig, GroupCoordinator, GroupState
from kafka_wire.messages import (
    ErrorCode,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from tests.broker.group.harness import CONFIG, DELAYED, Harness, run_group

E = ErrorCode


def test_simple_consumer_commit_and_fetch_round_trip() -> None:
    h = Harness()
    assert h.commit("solo", {("t", 0): 42, ("t", 1): 7, ("u", 0): 1}, metadata="m") == {
        ("t", 0): 0,
        ("t", 1): 0,
        ("u", 0): 0,
    }
    error, found = h.fetch("solo", {"t": [0, 1, 2]})
    assert error == E.NONE
    assert found == {("t", 0): (42, "m", 0), ("t", 1): (7, "m", 0), ("t", 2): (-1, "", 0)}
    error, everything = h.fetch("solo", None)
    assert sorted(everything) == [("t", 0), ("t", 1), ("u", 0)]
    # A group nobody ever committed for: nothing, no error (Kafka's answer).
    assert h.fetch("never", {"t": [0]}) == (E.NONE, {("t", 0): (-1, "", 0)})
    assert h.fetch("never", None) == (E.NONE, {})
    assert h.coord.state_of("solo") is GroupState.EMPTY


def test_group_commit_checks_member_and_generation() -> None:
    h = Harness(DELAYED)
    ids, generation = run_group(h, "g", 2)
    ok = h.commit("g", {("t", 0): 10}, generation=generation, member_id=ids[0])
    assert ok == {("t", 0): E.NONE}
    stale = h.commit("g", {("t", 0): 99}, generation=generation - 1, member_id=ids[0])
    assert stale == {("t", 0): E.ILLEGAL_GENERATION}
    assert h.commit("g", {("t", 0): 99}, generation=generation, member_id="x") == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    # A standalone commit into a group with members is refused.
    assert h.commit("g", {("t", 0): 99}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (10, "", 0)}
    # A rebalance starts: commits of the current generation still count (onPartitionsRevoked).
    token = h.join("g", ids[0], topics=("t", "v"))
    assert h.coord.state_of("g") is GroupState.PREPARING_REBALANCE
    assert h.commit("g", {("t", 0): 11}, generation=generation, member_id=ids[1]) == {("t", 0): E.NONE}
    h.join("g", ids[1])
    assert isinstance(h.answer(token), JoinGroupResponse)
    assert h.coord.state_of("g") is GroupState.COMPLETING_REBALANCE
    # Between the join and sync phases: the new generation cannot commit yet, the old one is stale.
    assert h.commit("g", {("t", 0): 12}, generation=generation + 1, member_id=ids[1]) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS
    }
    assert h.commit("g", {("t", 0): 12}, generation=generation, member_id=ids[1]) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (11, "", 0)}, "the rebalance kept the last good commit"


def test_commit_to_a_missing_group_with_a_generation() -> None:
    h = Harness()
    assert h.commit("ghost", {("t", 0): 1}, generation=3, member_id="m", version=8) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    assert h.commit("ghost", {("t", 0): 1}, generation=3, member_id="m", version=9) == {
        ("t", 0): E.GROUP_ID_NOT_FOUND
    }
    assert h.coord.group("ghost") is None
    assert h.commit("", {("t", 0): 1}) == {("t", 0): E.INVALID_GROUP_ID}


def test_metadata_too_large_fails_that_partition_only() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0, offset_metadata_max_bytes=4))
    request = OffsetCommitRequest(
        group_id="g",
        topics=[
            OffsetCommitRequestTopic(
                name="t",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=1, committed_metadata="12345"
                    ),
                    OffsetCommitRequestPartition(
                        partition_index=1, committed_offset=2, committed_metadata=None
                    ),
                ],
            )
        ],
    )
    response = h.call(request, 8)
    assert isinstance(response, OffsetCommitResponse)
    assert [p.error_code for p in response.topics[0].partitions] == [E.OFFSET_METADATA_TOO_LARGE, E.NONE]
    assert h.fetch("g", {"t": [0, 1]})[1] == {("t", 0): (-1, "", 0), ("t", 1): (2, "", 0)}


@pytest.mark.parametrize("version", range(10))
def test_commit_and_fetch_at_every_name_version(version: int) -> None:
    h = Harness()
    assert h.commit("g", {("t", 0): 5, ("t", 3): 6}, version=version, metadata="md") == {
        ("t", 0): 0,
        ("t", 3): 0,
    }
    fetch_version = min(version, 7)
    error, found = h.fetch("g", {"t": [0, 3]}, version=fetch_version)
    assert error == E.NONE and found == {("t", 0): (5, "md", 0), ("t", 3): (6, "md", 0)}
    snapshot = h.coord.group("g")
    assert snapshot is not None
    epochs = {value.leader_epoch for _, _, value in snapshot.offsets}
    assert epochs == ({5} if version >= 6 else {-1})


def test_offset_fetch_v8_many_groups_and_null_topics() -> None:
    h = Harness()
    h.commit("a", {("t", 0): 1})
    h.commit("b", {("u", 2): 3})
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(group_id="a", topics=None),
            OffsetFetchRequestGroup(
                group_id="b", topics=[OffsetFetchRequestTopics(name="u", partition_indexes=[2, 5])]
            ),
            OffsetFetchRequestGroup(group_id="", topics=None),
        ],
        require_stable=True,
    )
    response = h.call(request, 9)
    assert isinstance(response, OffsetFetchResponse)
    a, b, bad = response.groups
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in a.topics] == [
        ("t", [(0, 1)])
    ]
    assert [(p.partition_index, p.committed_offset) for p in b.topics[0].partitions] == [(2, 3), (5, -1)]
    assert bad.error_code == E.INVALID_GROUP_ID


def test_offset_fetch_v0_and_v1_put_group_errors_on_partitions() -> None:
    h = Harness()
    for version, top in ((1, E.NONE), (2, E.INVALID_GROUP_ID)):
        error, found = h.fetch("", {"t": [0]}, version=version)
        assert error == top
        assert found == ({("t", 0): (-1, "", E.INVALID_GROUP_ID)} if version < 2 else {})


def test_topic_ids_from_version_10() -> None:
    known = uuid.UUID(int=7)
    coordinator = GroupCoordinator(
        CONFIG,
        topic_name_of=lambda topic_id: "t" if topic_id == known else None,
        topic_id_of=lambda name: known if name == "t" else None,
    )
    h = Harness(coordinator=coordinator)
    request = OffsetCommitRequest(
        group_id="g",
        topics=[
            OffsetCommitRequestTopic(
                topic_id=known,
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=9)],
            ),
            OffsetCommitRequestTopic(
                topic_id=uuid.UUID(int=8),
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=9)],
            ),
        ],
    )
    response = h.call(request, 10)
    assert isinstance(response, OffsetCommitResponse)
    assert [(t.topic_id, t.partitions[0].error_code) for t in response.topics] == [
        (known, E.NONE),
        (uuid.UUID(int=8), E.UNKNOWN_TOPIC_ID),
    ]
    # With a catalogue, unknown topic names are refused at older versions too.
    assert h.commit("g", {("nope", 0): 1}) == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    fetch = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id="g",
                topics=[
                    OffsetFetchRequestTopics(topic_id=known, partition_indexes=[0]),
                    OffsetFetchRequestTopics(topic_id=uuid.UUID(int=8), partition_indexes=[0]),
                ],
            ),
            OffsetFetchRequestGroup(group_id="g", topics=None),
        ]
    )
    answer = h.call(fetch, 10)
    assert isinstance(answer, OffsetFetchResponse)
    asked, everything = answer.groups
    assert [(t.topic_id, p.committed_offset, p.error_code) for t in asked.topics for p in t.partitions] == [
        (known, 9, E.NONE),
        (uuid.UUID(int=8), -1, E.UNKNOWN_TOPIC_ID),
    ]
    assert [t.topic_id for t in everything.topics] == [known]


def test_explicit_retention_expires_offsets() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_check_interval_ms=1_000))
    h.commit("g", {("t", 0): 1}, version=2, retention_ms=5_000)
    h.commit("g", {("t", 1): 2}, version=2)
    h.advance(4_000)
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (1, "", 0)}
    h.advance(1_000)
    assert h.fetch("g", {"t": [0, 1]})[1] == {("t", 0): (-1, "", 0), ("t", 1): (2, "", 0)}
    assert h.log[-1][1] is None, "the expired offset was tombstoned"


def test_empty_group_offsets_expire_then_the_group_goes() -> None:
    config = GroupConfig(
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=1000,
        offsets_retention_ms=60_000,
        offsets_retention_check_interval_ms=10_000,
    )
    h = Harness(config)
    ids, generation = run_group(h, "g", 1)
    h.commit("g", {("t", 0): 3}, generation=generation, member_id=ids[0])
    # While the member is there, nothing expires (its subscription covers "t").
    for _ in range(10):
        h.advance(9_000)
        h.heartbeat("g", ids[0], generation)
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (3, "", 0)}
    h.leave("g", (ids[0], None))
    assert h.coord.state_of("g") is GroupState.EMPTY
    h.advance(50_000)
    assert h.coord.group("g") is not None
    h.advance(20_000)
    assert h.coord.group("g") is None, (
        "offsets expired 60 s after the group emptied, then the group was deleted"
    )
    assert h.fetch("g", {"t": [0]})[1] == {("t", 0): (-1, "", 0)}
