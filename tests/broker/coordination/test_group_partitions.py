"""The group coordinator of a replicated cluster: groups served per __consumer_offsets leadership,
loaded from the log at failover, dropped when leadership goes, writes answered once replicated."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from kafka_wire.broker import offsets_topic
from kafka_wire.broker.group import partition_for_group
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerProtocolSubscription,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from kafka_wire.testing.memory_storage import MemoryStorage

from .fakes import DATA_TOPIC, PARTITIONS, FakeCluster, Node, follower_fetched, node_state

E = ErrorCode


def group_in(partition: int, prefix: str = "g") -> str:
    n = 0
    while partition_for_group(f"{prefix}{n}", PARTITIONS) != partition:
        n += 1
    return f"{prefix}{n}"


MINE = 0  # the offsets partition led by node 1 in these tests
G = group_in(MINE)
ELSEWHERE = group_in(1)


def cluster_node(storage: MemoryStorage | None = None) -> Node:
    cluster = FakeCluster()
    cluster.lead_offsets({MINE: 1})
    return Node(node_state(cluster, storage or MemoryStorage()))


def join(node: Node, group: str, member_id: str = "") -> int:
    subscription = b"\x00\x00" + ConsumerProtocolSubscription(topics=[DATA_TOPIC]).encode(0)
    return node.send(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription)],
        ),
        3,
    )


def stable_member(node: Node, group: str) -> tuple[str, int]:
    """One member joined and synced: (member id, generation)."""
    token = join(node, group)
    node.advance(1)
    joined = node.answers.pop(token)
    assert isinstance(joined, JoinGroupResponse) and joined.error_code == E.NONE
    synced = node.call(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"assigned")],
        ),
        3,
    )
    assert isinstance(synced, SyncGroupResponse) and synced.error_code == E.NONE
    return joined.member_id, joined.generation_id


def commit_request(group: str, offset: int, member: str = "", generation: int = -1) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            OffsetCommitRequestTopic(
                name=DATA_TOPIC,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=offset + p)
                    for p in (0, 1)
                ],
            )
        ],
    )


def commit_errors(answer: object) -> list[int]:
    assert isinstance(answer, OffsetCommitResponse)
    return [p.error_code for t in answer.topics for p in t.partitions]


def fetched(node: Node, group: str) -> tuple[int, dict[int, int]]:
    answer = node.call(
        OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name=DATA_TOPIC, partition_indexes=[0, 1])]
        ),
        7,
    )
    assert isinstance(answer, OffsetFetchResponse)
    return answer.error_code, {
        p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions
    }


def test_groups_of_partitions_led_elsewhere_get_not_coordinator() -> None:
    node = cluster_node()
    # Nothing is served before the node is told what it leads.
    assert commit_errors(node.call(commit_request(G, 10), 8)) == [E.NOT_COORDINATOR] * 2
    node.take(node.link.partition_led(MINE, node.now))
    assert node.link.coordinator.served_partitions == frozenset({MINE})
    assert commit_errors(node.call(commit_request(G, 10), 8)) == [E.NONE, E.NONE]
    assert commit_errors(node.call(commit_request(ELSEWHERE, 10), 8)) == [E.NOT_COORDINATOR] * 2
    refused = node.answers.pop(join(node, ELSEWHERE))
    assert isinstance(refused, JoinGroupResponse) and refused.error_code == E.NOT_COORDINATOR
    heartbeat = node.call(HeartbeatRequest(group_id=ELSEWHERE, generation_id=1, member_id="m"), 3)
    assert isinstance(heartbeat, HeartbeatResponse) and heartbeat.error_code == E.NOT_COORDINATOR
    assert fetched(node, ELSEWHERE)[0] == E.NOT_COORDINATOR
    assert fetched(node, G) == (E.NONE, {0: 10, 1: 11})
    # Requests naming several groups carry the error per group.
    batch = node.call(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=G, topics=[OffsetFetchRequestTopics(name=DATA_TOPIC, partition_indexes=[0])]
                ),
                OffsetFetchRequestGroup(group_id=ELSEWHERE, topics=None),
            ]
        ),
        8,
    )
    assert isinstance(batch, OffsetFetchResponse)
    assert [(g.group_id, g.error_code) for g in batch.groups] == [(G, E.NONE), (ELSEWHERE, E.NOT_COORDINATOR)]
    assert batch.groups[0].topics[0].partitions[0].committed_offset == 10
    described = node.call(DescribeGroupsRequest(groups=[G, ELSEWHERE]), 5)
    assert isinstance(described, DescribeGroupsResponse)
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        (G, E.NONE),
        (ELSEWHERE, E.NOT_COORDINATOR),
    ]
    deleted = node.call(DeleteGroupsRequest(groups_names=[G, ELSEWHERE]), 2)
    assert isinstance(deleted, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        (G, E.NONE),
        (ELSEWHERE, E.NOT_COORDINATOR),
    ]


def test_failover_loads_the_groups_another_coordinator_wrote() -> None:
    storage = MemoryStorage()  # the replicated log: what node A wrote is what node B holds
    a = cluster_node(storage)
    a.take(a.link.partition_led(MINE, a.now))
    member, generation = stable_member(a, G)
    assert commit_errors(a.call(commit_request(G, 40, member, generation), 8)) == [E.NONE, E.NONE]
    assert commit_errors(a.call(commit_request(G, 50, member, generation), 8)) == [E.NONE, E.NONE]
    simple = group_in(MINE, "simple")
    assert commit_errors(a.call(commit_request(simple, 7), 8)) == [E.NONE, E.NONE]

    b = cluster_node(storage)  # the new leader opens the same log
    b.now = a.now + 1000
    assert fetched(b, G)[0] == E.NOT_COORDINATOR
    b.take(b.link.partition_led(MINE, b.now))
    assert fetched(b, G) == (E.NONE, {0: 50, 1: 51})
    assert fetched(b, simple) == (E.NONE, {0: 7, 1: 8})
    snapshot = b.link.coordinator.group(G)
    assert snapshot is not None and snapshot.generation == generation
    assert [m.member_id for m in snapshot.members] == [member]
    # The loaded member goes on heartbeating in its generation.
    heartbeat = b.call(HeartbeatRequest(group_id=G, generation_id=generation, member_id=member), 3)
    assert isinstance(heartbeat, HeartbeatResponse) and heartbeat.error_code == E.NONE
    # ...and expires after its session timeout when it stops.
    b.advance(10_001)
    after = b.link.coordinator.group(G)
    assert after is not None and not after.members


def test_a_load_in_steps_answers_coordinator_load_in_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = MemoryStorage()
    a = cluster_node(storage)
    a.take(a.link.partition_led(MINE, a.now))
    for offset in range(5):
        assert commit_errors(a.call(commit_request(G, offset), 8)) == [E.NONE, E.NONE]
    monkeypatch.setattr(offsets_topic, "LOAD_READ_BYTES", 1)  # one batch per step
    b = cluster_node(storage)
    b.state.budget.left = 0  # an engine call whose work budget is spent: one step only
    b.take(b.link.partition_led(MINE, b.now))
    assert b.link.loading == {MINE}
    assert b.link.coordinator.loading_partitions == {MINE}
    assert commit_errors(b.call(commit_request(G, 99), 8)) == [E.COORDINATOR_LOAD_IN_PROGRESS] * 2
    listed = b.call(ListGroupsRequest(), 4)
    assert isinstance(listed, ListGroupsResponse) and listed.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert b.link.next_deadline_ms() == b.now  # the load goes on at once
    b.poll()  # a fresh budget: the rest of the load
    assert not b.link.loading and b.link.coordinator.served_partitions == frozenset({MINE})
    assert fetched(b, G) == (E.NONE, {0: 4, 1: 5})


def test_partition_lost_drops_its_groups_and_answers_their_waiting_requests() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    member, generation = stable_member(node, G)
    node.call(commit_request(G, 5, member, generation), 8)
    # A second member starts a rebalance: its JoinGroup waits for the first member to rejoin.
    newcomer = join(node, G)
    assert newcomer not in node.answers
    node.take(node.link.partition_lost(MINE, node.now))
    answer = node.answers.pop(newcomer)
    assert isinstance(answer, JoinGroupResponse) and answer.error_code == E.NOT_COORDINATOR
    assert not node.answers
    assert node.link.coordinator.groups() == []
    assert node.link.coordinator.served_partitions == frozenset()
    assert fetched(node, G)[0] == E.NOT_COORDINATOR
    deadline = node.link.next_deadline_ms()
    assert deadline is None or deadline > node.now + 60_000  # no member timers: only retention


def test_an_offset_commit_is_answered_once_the_high_watermark_passes_it() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)  # node 2 in the ISR, caught up
    token = node.send(commit_request(G, 30), 8)
    assert token not in node.answers and node.link.replicating == 1
    end = replica.log_end_offset
    assert replica.high_watermark < end
    node.poll()
    assert token not in node.answers
    follower_fetched(replica, node.now, end - 1)  # not yet
    node.poll()
    assert token not in node.answers
    follower_fetched(replica, node.now, end)  # the follower has it: the HW passes the write
    node.poll()
    assert commit_errors(node.answers.pop(token)) == [E.NONE, E.NONE]
    assert fetched(node, G) == (E.NONE, {0: 30, 1: 31})


def test_a_write_not_replicated_in_time_is_coordinator_not_available_and_kept() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    assert commit_errors(node.call(commit_request(G, 1), 8)) == [E.NONE, E.NONE]
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)
    token = node.send(commit_request(G, 2), 8)
    assert node.link.next_deadline_ms() == node.now + node.state.config.offsets_commit_timeout_ms
    node.advance(node.state.config.offsets_commit_timeout_ms - 1)
    assert token not in node.answers
    node.advance(1)
    assert commit_errors(node.answers.pop(token)) == [E.COORDINATOR_NOT_AVAILABLE] * 2
    # The commit is in the log, not replicated: reads do not see it yet, and it is not taken
    # back (Kafka's coordinator reverts only what an append refused).
    assert fetched(node, G) == (E.NONE, {0: 1, 1: 2})
    group = node.link.coordinator.group(G)
    assert group is not None and [v.offset for _, _, v in group.offsets] == [2, 3]
    follower_fetched(replica, node.now, replica.log_end_offset)  # replicated after all
    node.poll()
    assert fetched(node, G) == (E.NONE, {0: 2, 1: 3})


def stable_fetch(node: Node, group: str) -> int:
    return node.send(
        OffsetFetchRequest(
            group_id=group,
            topics=[OffsetFetchRequestTopic(name=DATA_TOPIC, partition_indexes=[0, 1])],
            require_stable=True,
        ),
        7,
    )


def test_an_unreplicated_commit_is_not_read_and_a_stable_read_waits_for_it() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    assert commit_errors(node.call(commit_request(G, 1), 8)) == [E.NONE, E.NONE]
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)  # node 2 in the ISR, caught up
    token = node.send(commit_request(G, 2), 8)
    simple = group_in(MINE, "simple")
    first = node.send(commit_request(simple, 7), 8)
    end = replica.log_end_offset
    assert fetched(node, G) == (E.NONE, {0: 1, 1: 2}), "the value replicated before"
    assert fetched(node, simple) == (E.NONE, {0: -1, 1: -1}), "none replicated yet"
    stable = stable_fetch(node, G)
    assert stable not in node.answers and replica.log_end_offset == end  # it appends nothing
    follower_fetched(replica, node.now, end)
    node.poll()
    assert commit_errors(node.answers.pop(token)) == commit_errors(node.answers.pop(first)) == [E.NONE] * 2
    answer = node.answers.pop(stable)
    assert isinstance(answer, OffsetFetchResponse) and answer.error_code == E.NONE
    assert [p.committed_offset for t in answer.topics for p in t.partitions] == [2, 3]
    assert fetched(node, G) == (E.NONE, {0: 2, 1: 3})
    assert fetched(node, simple) == (E.NONE, {0: 7, 1: 8})


def test_a_stable_read_not_replicated_in_time_is_not_coordinator() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)
    node.send(commit_request(G, 2), 8)
    stable = stable_fetch(node, G)
    node.advance(node.state.config.offsets_commit_timeout_ms)
    answer = node.answers.pop(stable)
    assert isinstance(answer, OffsetFetchResponse) and answer.error_code == E.NOT_COORDINATOR


def test_a_coordinator_move_after_a_timed_out_commit_shows_what_the_log_holds() -> None:
    storage = MemoryStorage()
    a = cluster_node(storage)
    a.take(a.link.partition_led(MINE, a.now))
    assert commit_errors(a.call(commit_request(G, 1), 8)) == [E.NONE, E.NONE]
    replica = a.replica(MINE)
    follower_fetched(replica, a.now, replica.log_end_offset)
    follower_log = copy.deepcopy(storage)  # node 2's log: it never fetches what follows
    token = a.send(commit_request(G, 2), 8)
    assert fetched(a, G) == (E.NONE, {0: 1, 1: 2})
    a.advance(a.state.config.offsets_commit_timeout_ms)
    assert commit_errors(a.answers.pop(token)) == [E.COORDINATOR_NOT_AVAILABLE] * 2
    assert fetched(a, G) == (E.NONE, {0: 1, 1: 2})
    a.take(a.link.partition_lost(MINE, a.now))
    assert fetched(a, G)[0] == E.NOT_COORDINATOR
    # A new leader whose log lacks the commit loads the value before it...
    b = cluster_node(follower_log)
    b.now = a.now
    b.take(b.link.partition_led(MINE, b.now))
    assert fetched(b, G) == (E.NONE, {0: 1, 1: 2})
    # ...and the old one, led again with the commit in its log, loads the commit.
    a.take(a.link.partition_led(MINE, a.now))
    assert fetched(a, G) == (E.NONE, {0: 2, 1: 3})


def test_min_insync_replicas_refuses_group_writes_before_the_append() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    topic = node.state.metadata.topics["__consumer_offsets"]
    node.state.update_topic_configs(topic, {**topic.configs, "min.insync.replicas": "2"})
    end = node.replica(MINE).log_end_offset
    assert commit_errors(node.call(commit_request(G, 1), 8)) == [E.COORDINATOR_NOT_AVAILABLE] * 2
    assert node.replica(MINE).log_end_offset == end  # nothing appended
    follower_fetched(node.replica(MINE), node.now, end)  # two in the ISR now
    token = node.send(commit_request(G, 1), 8)
    follower_fetched(node.replica(MINE), node.now, node.replica(MINE).log_end_offset)
    node.poll()
    assert commit_errors(node.answers.pop(token)) == [E.NONE, E.NONE]


def test_partition_lost_fails_writes_awaiting_replication_with_not_coordinator() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)
    token = node.send(commit_request(G, 9), 8)
    node.take(node.link.partition_lost(MINE, node.now))
    assert commit_errors(node.answers.pop(token)) == [E.NOT_COORDINATOR] * 2
    assert node.link.replicating == 0 and node.link.coordinator.groups() == []


def test_a_sync_group_assignment_is_given_out_once_replicated() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)
    token = join(node, G)
    node.advance(1)
    follower_fetched(replica, node.now, replica.log_end_offset)  # the group's creation replicated
    node.poll()
    joined = node.answers.pop(token)
    assert isinstance(joined, JoinGroupResponse) and joined.error_code == E.NONE
    sync = node.send(
        SyncGroupRequest(
            group_id=G,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a")],
        ),
        3,
    )
    assert sync not in node.answers and node.link.replicating == 1
    follower_fetched(replica, node.now, replica.log_end_offset)
    node.poll()
    synced = node.answers.pop(sync)
    assert isinstance(synced, SyncGroupResponse) and (synced.error_code, synced.assignment) == (E.NONE, b"a")


def consumer_heartbeat(group: str, member: str, epoch: int) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[DATA_TOPIC],
        topic_partitions=[],
    )


def share_heartbeat(group: str, member: str, epoch: int) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=[DATA_TOPIC]
    )


def beat_answer(node: Node, token: int) -> tuple[int, int, list[int]]:
    answer = node.answers.pop(token)
    assert isinstance(answer, ConsumerGroupHeartbeatResponse | ShareGroupHeartbeatResponse)
    owned = (
        []
        if answer.assignment is None
        else [p for t in answer.assignment.topic_partitions for p in t.partitions]
    )
    return answer.error_code, answer.member_epoch, sorted(owned)


@pytest.mark.parametrize("heartbeat", [consumer_heartbeat, share_heartbeat])
def test_a_heartbeat_that_writes_nothing_waits_for_the_writes_before_it(
    heartbeat: Callable[[str, str, int], Message],
) -> None:
    # Seed 3212 of the simulator: answered at once, such a heartbeat showed a member's assignment
    # that no replica stored, and the next coordinator gave it to another member.
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)  # node 2 in the ISR, caught up
    joined = node.send(heartbeat(G, "m1", 0), 1)
    end = replica.log_end_offset
    again = node.send(heartbeat(G, "m1", 0), 1)  # the same join again: nothing to write
    assert joined not in node.answers and again not in node.answers
    assert node.link.replicating == 2 and replica.log_end_offset == end  # the second appended nothing
    follower_fetched(replica, node.now, end)
    node.poll()
    assert beat_answer(node, joined) == beat_answer(node, again) == (E.NONE, 1, [0, 1, 2])


def test_a_consumer_group_write_not_replicated_in_time_is_kept_as_it_may_yet_be_stored() -> None:
    node = cluster_node()
    node.take(node.link.partition_led(MINE, node.now))
    replica = node.replica(MINE)
    follower_fetched(replica, node.now, replica.log_end_offset)
    joined = node.send(consumer_heartbeat(G, "m1", 0), 1)
    node.advance(node.state.config.offsets_commit_timeout_ms)
    assert beat_answer(node, joined) == (E.COORDINATOR_NOT_AVAILABLE, 0, [])
    # The records are in the log, uncommitted: the member stays, and an answer drawn from it waits
    # for them to be stored (Kafka's coordinator reverts only what an append refused).
    end = replica.log_end_offset
    again = node.send(consumer_heartbeat(G, "m1", 0), 1)
    assert again not in node.answers and replica.log_end_offset == end
    follower_fetched(replica, node.now, end)
    node.poll()
    assert beat_answer(node, again) == (E.NONE, 1, [0, 1, 2])
