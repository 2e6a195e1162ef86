"""Replication between brokers' partition parts, driven in memory (see cluster.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.partition.purgatory import PendingProduce
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.partition.roles import ReplicaRole
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchResponsePartitionData,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    OffsetForLeaderEpochRequestOffsetForLeaderTopic,
    OffsetForLeaderEpochResponse,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
)
from kafka_wire.records import read_records
from tests.broker.replication.cluster import TOPIC_ID, Network, Node


def produce_error(answer: object) -> int:
    assert isinstance(answer, ProduceResponse)
    return answer.responses[0].partition_responses[0].error_code


def three(min_isr: int = 1, hooks: Hooks = OFF) -> Network:
    net = Network(hooks=hooks)
    for node_id in (1, 2, 3):
        net.add(node_id, min_isr=min_isr)
    net.create((1, 2, 3))
    return net


def test_followers_catch_up_and_the_high_watermark_follows_them() -> None:
    net = three()
    leader = net.nodes[1]
    leader.produce([b"a", b"b", b"c"], net.now_ms, acks=1)
    assert leader.replica().log_end_offset == 3
    assert leader.replica().high_watermark == 0  # the followers have not fetched it yet
    net.run(100)
    for node_id in (2, 3):
        follower = net.nodes[node_id].replica()
        assert follower.leadership.role is ReplicaRole.FOLLOWER
        assert follower.log_end_offset == 3
        assert follower.high_watermark == 3
    assert leader.replica().high_watermark == 3


def test_a_follower_told_before_its_new_leader_retries_until_the_leader_knows() -> None:
    """The metadata reaches brokers at different times: a follower may fetch from a new leader
    that still answers NOT_LEADER_OR_FOLLOWER; it tries again after the backoff."""
    net = three()
    net.nodes[1].produce([b"a"], net.now_ms, acks=1)
    net.run(100)
    new = replace(net.registrations["t", 0], leader=2, leader_epoch=1, partition_epoch=1)
    net.registrations["t", 0] = new
    for node_id in (1, 3):  # node 2, the new leader, learns it last
        net.nodes[node_id].manager.apply([new], [], net.now_ms)
        net.nodes[node_id].flush()
    net.run(100)
    assert net.nodes[3].replica().leader_epoch == 1 and net.nodes[2].replica().leader_epoch == 0
    net.nodes[2].manager.apply([new], [], net.now_ms)
    net.nodes[2].flush()
    net.nodes[2].produce([b"b"], net.now_ms, acks=1)
    net.run(2_000)
    for node_id in (1, 3):
        assert net.nodes[node_id].replica().log_end_offset == 2
    assert net.nodes[2].replica().high_watermark == 2


def test_an_answer_to_a_fetch_of_an_older_epoch_does_not_stop_the_follower() -> None:
    """A new epoch reaches the leader and a follower while that follower's fetch of the old epoch
    is on its way: the leader fences it, and the follower, already at the new epoch, goes on."""
    net = three()
    net.nodes[1].produce([b"a"], net.now_ms, acks=1)
    net.run(100)  # the followers' next fetches (epoch 0) wait at the leader
    assert len(net.nodes[1].held) == 2
    newer = replace(net.registrations["t", 0], leader_epoch=1, partition_epoch=1)
    net.publish(newer)
    net.nodes[1].produce([b"b"], net.now_ms, acks=1)
    net.run(2_000)
    for node_id in (2, 3):
        assert net.nodes[node_id].replica().log_end_offset == 2
    assert net.nodes[1].replica().high_watermark == 2


def test_a_registration_older_than_the_replica_has_seen_is_ignored() -> None:
    net = three()
    net.nodes[1].produce([b"a"], net.now_ms, acks=1)
    net.run(100)
    current = net.registrations["t", 0]
    newer = net.elect(2)
    net.nodes[2].produce([b"b"], net.now_ms, acks=1)
    net.run(200)
    node = net.nodes[1]
    node.manager.apply([current], [], net.now_ms)  # a stale state (epoch 0: node 1 leads)
    node.flush()
    replica = node.replica()
    assert replica.leadership.role is ReplicaRole.FOLLOWER and replica.leader_epoch == newer.leader_epoch
    net.run(200)
    assert replica.log_end_offset == 2


def test_a_registration_of_an_older_partition_epoch_in_the_same_leader_epoch_is_ignored() -> None:
    """Seed 184: the leader learns its ISR changes from AlterPartition's answers (partition epochs
    1 then 2) before the metadata delta of the first one reaches it. Kafka's Partition.makeLeader
    and makeFollower skip a state whose partition epoch is below the one they have."""
    net = three()
    first = net.registrations["t", 0]
    leader = net.nodes[1].replica()
    leader.isr_committed((1, 2), 1, net.now_ms)
    leader.isr_committed((1, 2, 3), 2, net.now_ms)
    stale = replace(first, isr=(1, 2), partition_epoch=1)
    for node_id in (1, 2):
        node = net.nodes[node_id]
        if node_id == 2:
            node.manager.apply([replace(first, partition_epoch=2)], [], net.now_ms)
        node.manager.apply([stale], [], net.now_ms)
        node.flush()
        registration = node.replica().registration
        assert registration is not None and registration.partition_epoch == 2
    assert list(leader.isr) == [1, 2, 3]


def test_acks_all_is_answered_once_the_high_watermark_passes_the_batch() -> None:
    net = three()
    leader = net.nodes[1]
    request = leader.produce([b"a"], net.now_ms, acks=-1)
    assert request not in leader.answers  # held in the purgatory
    net.step()
    assert leader.replica().high_watermark == 0 or request in leader.answers
    net.run(200)
    assert produce_error(leader.answers[request]) == ErrorCode.NONE
    assert leader.replica().high_watermark == 1


def test_high_watermark_waits_for_the_slowest_isr_member_until_it_is_shrunk_out() -> None:
    net = three(min_isr=1)
    net.run(100)
    net.crash(3)
    leader = net.nodes[1]
    request = leader.produce([b"a", b"b"], net.now_ms, acks=-1, timeout_ms=60_000)
    net.run(1000)
    assert net.nodes[2].replica().log_end_offset == 2
    assert leader.replica().high_watermark == 0  # node 3 is in the ISR and has not fetched
    assert request not in leader.answers
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)  # lag time passes: the ISR shrinks
    assert net.registrations["t", 0].isr == (1, 2)
    assert leader.replica().isr == [1, 2]
    assert leader.replica().high_watermark == 2
    assert produce_error(leader.answers[request]) == ErrorCode.NONE


def test_isr_expands_when_a_restarted_follower_catches_up() -> None:
    net = three()
    net.crash(3)
    net.nodes[1].produce([b"x"] * 5, net.now_ms, acks=1)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    restarted = net.restart(3)
    net.run(1000)
    assert restarted.replica().log_end_offset == 5
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]
    assert sorted(net.nodes[1].replica().isr) == [1, 2, 3]


def test_min_isr_refuses_before_append_and_reports_after_append() -> None:
    net = three(min_isr=2)
    net.run(100)
    leader = net.nodes[1]
    # The ISR shrinks to the leader alone: acks=all is refused before anything is appended.
    net.publish(_with_isr(net, (1,)))
    request = leader.produce([b"a"], net.now_ms, acks=-1)
    assert produce_error(leader.answers[request]) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.replica().log_end_offset == 0
    assert produce_error(leader.answers[leader.produce([b"a"], net.now_ms, acks=1)]) == ErrorCode.NONE


def test_acks_all_times_out_while_the_isr_is_below_min_isr_and_the_hw_is_frozen() -> None:
    net = three(min_isr=2)
    net.run(100)
    leader = net.nodes[1]
    net.crash(2)
    net.crash(3)
    request = leader.produce([b"a"], net.now_ms, acks=-1)
    assert request not in leader.answers
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert leader.replica().isr == [1]
    assert leader.replica().high_watermark == 0  # frozen: the ISR is below min.insync.replicas
    net.run(10_000)
    assert produce_error(leader.answers[request]) == ErrorCode.REQUEST_TIMED_OUT


def _with_isr(net: Network, isr: tuple[int, ...]) -> PartitionState:
    old = net.registrations["t", 0]
    return replace(old, isr=isr, partition_epoch=old.partition_epoch + 1)


def test_not_enough_replicas_after_append_when_the_hw_is_reached_with_too_small_an_isr() -> None:
    net = three(min_isr=2)
    leader = net.nodes[1]
    leader.produce([b"a"], net.now_ms, acks=1)
    net.run(1000)
    replica = leader.replica()
    assert replica.high_watermark == 1
    result = ProduceResponsePartitionProduceResponse(index=0, base_offset=0)
    pending = PendingProduce(replica, replica.leader_epoch, 1, result)
    net.publish(_with_isr(net, (1,)))  # the ISR shrank before the delayed produce was checked
    assert pending.check()
    assert result.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert result.base_offset == 0  # Kafka's DelayedProduce changes only the error code


def read_all(node: Node) -> bytes:
    log = node.replica().log
    return log.read_bytes(log.read(log.log_start_offset, 1 << 30))


def values(node: Node) -> list[bytes | None]:
    return [r.value for r in read_records(read_all(node))]


def test_a_divergent_follower_truncates_after_a_double_failover() -> None:
    """KIP-101: the old leader's unreplicated suffix is replaced by the new leader's records."""
    net = Network()
    for node_id in (1, 2):
        net.add(node_id)
    net.create((1, 2))
    net.nodes[1].produce([b"m1"], net.now_ms, acks=-1)
    net.run(1000)
    assert net.nodes[2].replica().log_end_offset == 1
    net.crash(2)
    net.nodes[1].produce([b"m2"], net.now_ms, acks=1)  # never replicated
    net.crash(1)
    net.restart(2)
    net.elect(2, isr=(2,))
    assert net.nodes[2].replica().is_leader
    net.nodes[2].produce([b"m3"], net.now_ms, acks=1)
    old = net.restart(1)
    assert old.replica().log_end_offset == 2 and values(old) == [b"m1", b"m2"]
    net.run(2000)
    assert values(old) == [b"m1", b"m3"]
    assert read_all(old) == read_all(net.nodes[2])
    assert old.replica().epoch_cache.entries == [(0, 0), (1, 1)]
    assert sorted(net.registrations["t", 0].isr) == [1, 2]


def test_truncation_iterates_when_the_follower_has_an_epoch_the_leader_never_had() -> None:
    """KIP-279: the follower cuts to the end of its epoch below the leader's answer, and asks again."""
    net = Network()
    for node_id in (1, 2, 3):
        net.add(node_id)
    net.create((1, 2, 3))
    net.nodes[1].produce([b"e0"], net.now_ms, acks=-1)
    net.run(1000)
    # Node 1 leads epochs 0 and 2 alone (epoch 1 went to node 2, which node 1 never heard of).
    net.crash(2)
    net.crash(3)
    net.publish(replace(_with_isr(net, (1,)), leader_epoch=2))
    net.nodes[1].produce([b"n1-e2"], net.now_ms, acks=1)
    net.crash(1)
    # Node 2 led epoch 1 (one record) and leads epoch 3 now.
    net.registrations["t", 0] = replace(net.registrations["t", 0], leader=2, leader_epoch=1, isr=(2,))
    net.restart(2)
    net.nodes[2].produce([b"n2-e1"], net.now_ms, acks=1)
    net.publish(replace(net.registrations["t", 0], leader=2, leader_epoch=3, isr=(2,)))
    net.nodes[2].produce([b"n2-e3"], net.now_ms, acks=1)
    assert net.nodes[2].replica().epoch_cache.entries == [(0, 0), (1, 1), (3, 2)]
    old = net.restart(1)
    assert old.replica().epoch_cache.entries == [(0, 0), (2, 1)]
    net.run(3000)
    assert values(old) == [b"e0", b"n2-e1", b"n2-e3"]
    assert old.replica().epoch_cache.entries == [(0, 0), (1, 1), (3, 2)]


def test_the_epoch_cache_is_persisted_as_kafka_writes_it() -> None:
    net = three()
    net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=-1)
    net.run(1000)
    net.elect(2)
    net.nodes[2].produce([b"c"], net.now_ms, acks=-1)
    net.run(1000)
    for node in net.nodes.values():
        path = f"{node.replica().log.directory}/leader-epoch-checkpoint"
        assert node.storage.files[path] == b"0\n2\n0 0\n1 2\n"


def test_offset_for_leader_epoch_answers_from_the_leader_epoch_cache() -> None:
    net = three()
    net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=-1)
    net.run(1000)
    net.elect(2)
    leader = net.nodes[2]
    leader.produce([b"c"], net.now_ms, acks=-1)
    net.run(1000)

    def ask(node: Node, epoch: int, current: int = -1) -> tuple[int, int, int]:
        answer = node.call(
            OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                        topic="t",
                        partitions=[
                            OffsetForLeaderEpochRequestOffsetForLeaderPartition(
                                partition=0, current_leader_epoch=current, leader_epoch=epoch
                            )
                        ],
                    )
                ],
            ),
            net.now_ms,
        )
        assert isinstance(answer, OffsetForLeaderEpochResponse)
        result = answer.topics[0].partitions[0]
        return result.error_code, result.leader_epoch, result.end_offset

    assert ask(leader, 0) == (0, 0, 2)
    assert ask(leader, 1) == (0, 1, 3)
    assert ask(leader, 5) == (0, -1, -1)
    assert ask(leader, 0, current=0) == (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)
    assert ask(leader, 0, current=2) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1)
    assert ask(net.nodes[1], 0, current=1) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)
    assert ask(net.nodes[1], 0)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def client_fetch(
    node: Node, now_ms: int, *, replica_id: int = -1, current_epoch: int = -1, version: int = 12
) -> FetchResponsePartitionData:
    answer = client_fetch_response(
        node, now_ms, replica_id=replica_id, current_epoch=current_epoch, version=version
    )
    return answer.responses[0].partitions[0]


def client_fetch_response(
    node: Node, now_ms: int, *, replica_id: int = -1, current_epoch: int = -1, version: int = 12
) -> FetchResponse:
    """A Fetch of partition t-0 from offset 0 (not held), as ``node`` answers it."""
    answer = node.call(
        FetchRequest(
            replica_id=replica_id,
            max_wait_ms=0,
            topics=[
                FetchRequestTopic(
                    topic="t",
                    topic_id=TOPIC_ID,
                    partitions=[
                        FetchRequestPartition(
                            partition=0,
                            fetch_offset=0,
                            partition_max_bytes=1 << 20,
                            current_leader_epoch=current_epoch,
                        )
                    ],
                )
            ],
        ),
        now_ms,
        version=version,
    )
    assert isinstance(answer, FetchResponse)
    return answer


def test_consumers_never_see_above_the_high_watermark_and_only_read_from_the_leader() -> None:
    net = three()
    net.nodes[1].produce([b"a"], net.now_ms, acks=-1)
    net.run(1000)
    net.crash(3)
    net.nodes[1].produce([b"b", b"c"], net.now_ms, acks=1)
    net.run(1000)
    leader = net.nodes[1]
    assert leader.replica().log_end_offset == 3
    data = client_fetch(leader, net.now_ms)
    assert data.high_watermark == 1
    assert [r.value for r in read_records(bytes(data.records or b""))] == [b"a"]
    elsewhere = client_fetch(net.nodes[2], net.now_ms, version=16)
    assert elsewhere.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (elsewhere.current_leader.leader_id, elsewhere.current_leader.leader_epoch) == (1, 0)


def test_a_fetch_from_a_broker_that_is_not_a_replica_or_with_a_stale_epoch_is_refused() -> None:
    net = three()
    net.run(100)
    leader = net.nodes[1]
    assert (
        client_fetch(leader, net.now_ms, replica_id=9, current_epoch=0).error_code
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    )
    assert client_fetch(leader, net.now_ms, replica_id=9).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    net.elect(1)
    assert (
        client_fetch(leader, net.now_ms, replica_id=2, current_epoch=0).error_code
        == ErrorCode.FENCED_LEADER_EPOCH
    )
    assert (
        client_fetch(leader, net.now_ms, replica_id=2, current_epoch=5).error_code
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    )


def test_a_fetch_of_an_earlier_incarnation_of_a_follower_updates_nothing() -> None:
    """Kafka's fence in ``Replica.updateFetchStateOrThrow``: a follower's Fetch with a broker epoch
    older than the metadata's (sent before a restart, delivered late) is answered
    NOT_LEADER_OR_FOLLOWER and leaves the follower's fetch offset as its newer fetches set it
    (simulator share seed 173 with pre-vote: such a fetch moved it back below the HW)."""
    net = three()
    leader = net.nodes[1]
    leader.produce([b"a", b"b"], net.now_ms, acks=-1)
    net.run(1000)
    follower = leader.replica().followers.get(2)
    assert follower is not None and follower.log_end_offset == 2

    def fetch(broker_epoch: int) -> FetchResponsePartitionData:
        request = FetchRequest(
            max_wait_ms=0,
            replica_state=FetchRequestReplicaState(replica_id=2, replica_epoch=broker_epoch),
            topics=[
                FetchRequestTopic(
                    topic_id=TOPIC_ID,
                    partitions=[
                        FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        )
        answer = leader.call(request, net.now_ms, version=15)
        assert isinstance(answer, FetchResponse)
        return answer.responses[0].partitions[0]

    current = net.brokers[2].epoch
    assert fetch(current - 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert follower.log_end_offset == 2
    assert fetch(current).error_code == ErrorCode.NONE
    assert follower.log_end_offset == 0


def test_a_fenced_follower_is_served_but_not_taken_into_the_isr() -> None:
    net = three()
    net.crash(3)
    net.nodes[1].produce([b"x"], net.now_ms, acks=1)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    net.restart(3)
    net.brokers[3] = replace(net.brokers[3], fenced=True)
    net.run(2000)
    assert net.nodes[3].replica().log_end_offset == 1
    assert net.registrations["t", 0].isr == (1, 2)
    net.brokers[3] = replace(net.brokers[3], fenced=False)
    net.run(2000)
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]


def test_delete_records_answers_with_the_low_watermark_of_the_isr() -> None:
    net = three()
    leader = net.nodes[1]
    leader.produce([b"v"] * 5, net.now_ms, acks=-1)
    net.run(1000)
    request = leader.submit(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequestTopic(
                    name="t", partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=3)]
                )
            ],
            timeout_ms=30_000,
        ),
        net.now_ms,
    )
    assert request not in leader.answers  # the followers' log starts are still 0
    net.run(2000)
    answer = leader.answers[request]
    assert isinstance(answer, DeleteRecordsResponse)
    result = answer.topics[0].partitions[0]
    assert (result.error_code, result.low_watermark) == (ErrorCode.NONE, 3)
    for node in net.nodes.values():
        assert node.replica().log_start_offset == 3


def test_a_restarted_follower_starts_from_its_checkpointed_high_watermark() -> None:
    net = three()
    net.nodes[1].produce([b"v"] * 4, net.now_ms, acks=-1)
    net.run(6000)  # past replica.high.watermark.checkpoint.interval.ms
    storage = net.nodes[2].storage
    assert storage.files["replication-offset-checkpoint"] == b"0\n1\nt 0 4\n"
    assert storage.files["log-start-offset-checkpoint"] == b"0\n1\nt 0 0\n"
    # Nothing is fsynced yet: the segment flushes at its roll (no flush.messages / flush.ms set).
    assert storage.files["recovery-point-offset-checkpoint"] == b"0\n1\nt 0 0\n"
    net.crash(2)
    net.crash(1)
    restarted = net.restart(2)
    assert restarted.replica().high_watermark == 4
    assert restarted.replica().epoch_cache.entries == [(0, 0)]


def test_an_unclean_leader_takes_no_produce_until_it_has_recovered() -> None:
    net = three()
    net.run(100)
    net.crash(1)
    net.crash(3)
    net.elect(2, isr=(2,), unclean=True)
    leader = net.nodes[2]
    assert produce_error(leader.answers[leader.produce([b"x"], net.now_ms, acks=1)]) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    net.step()
    assert net.registrations["t", 0].leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert produce_error(leader.answers[leader.produce([b"x"], net.now_ms, acks=1)]) == ErrorCode.NONE


def test_idempotent_producer_state_survives_a_failover() -> None:
    net = three()
    first = net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=-1, producer_id=7, sequence=0)
    net.run(1000)
    assert produce_error(net.nodes[1].answers[first]) == ErrorCode.NONE
    net.crash(1)
    net.elect(2, isr=(2, 3))
    retry = net.nodes[2].produce([b"a", b"b"], net.now_ms, acks=1, producer_id=7, sequence=0)
    answer = net.nodes[2].answers[retry]
    assert isinstance(answer, ProduceResponse)
    assert (
        answer.responses[0].partition_responses[0].error_code,
        answer.responses[0].partition_responses[0].base_offset,
    ) == (0, 0)
    assert net.nodes[2].replica().log_end_offset == 2
    gap = net.nodes[2].produce([b"c"], net.now_ms, acks=1, producer_id=7, sequence=5)
    assert produce_error(net.nodes[2].answers[gap]) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_client_request_for_acks_all_on_a_follower_is_not_leader() -> None:
    net = three()
    follower = net.nodes[2]
    assert (
        produce_error(follower.answers[follower.produce([b"x"], net.now_ms)])
        == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )


def test_a_pending_isr_addition_counts_for_the_high_watermark_and_a_failed_request_is_retried() -> None:
    net = three()
    net.crash(3)
    leader = net.nodes[1]
    leader.produce([b"x"], net.now_ms, acks=1)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    net.controller_fails = True
    net.restart(3)
    net.run(500)
    replica = leader.replica()
    assert replica.pending_isr == (1, 2, 3)  # proposed, not confirmed
    assert replica.maximal_isr == [1, 2, 3] and replica.isr == [1, 2]
    sent = len(net.alter_requests)
    net.crash(3)
    leader.produce([b"y"], net.now_ms, acks=1)
    net.run(1000)
    assert net.nodes[2].replica().log_end_offset == 2
    assert replica.high_watermark == 1  # node 3, in the maximal ISR, has not fetched offset 1
    assert len(net.alter_requests) == sent  # the failed request went nowhere, and no second one
    assert replica.pending_isr == (1, 2, 3)
    net.restart(3)
    net.controller_fails = False
    net.run(1000)
    assert sorted(net.registrations["t", 0].isr) == [1, 2, 3]
    assert replica.pending_isr is None
    assert replica.high_watermark == 2


def test_the_epoch_cache_follows_a_log_start_moved_by_retention() -> None:
    net = three()
    net.nodes[1].produce([b"a", b"b"], net.now_ms, acks=-1)
    net.run(1000)
    net.elect(2)
    net.nodes[2].produce([b"c", b"d"], net.now_ms, acks=-1)
    net.run(1000)
    leader = net.nodes[2].replica()
    leader.log.delete_records_before(3)  # what retention does to the log
    net.run(6000)  # the checkpoint round notices
    assert leader.epoch_cache.entries == [(1, 3)]
    assert net.nodes[2].storage.files[f"{leader.log.directory}/leader-epoch-checkpoint"] == b"0\n1\n1 3\n"


def test_a_follower_that_led_an_empty_epoch_drops_it_and_catches_up() -> None:
    """Kafka's UnifiedLog.truncateTo cuts the epoch cache at the log end even when the log keeps
    every record: else the empty epoch it led stays its latest, every fetch names it, the leader
    answers DivergingEpoch at the follower's log end forever, and the follower never catches up
    (found by the simulator, seed 7)."""
    net = three()
    net.nodes[1].produce([b"m1"], net.now_ms, acks=-1)
    net.run(1000)
    net.elect(2)  # node 2 leads epoch 1 from offset 1 and appends nothing
    assert net.nodes[2].replica().epoch_cache.entries == [(0, 0), (1, 1)]
    net.elect(3)
    net.nodes[3].produce([b"m2"], net.now_ms, acks=1)
    net.run(2000)
    assert values(net.nodes[2]) == [b"m1", b"m2"]
    assert net.nodes[2].replica().epoch_cache.entries == [(0, 0), (2, 1)]


def lost_isr_addition(net: Network) -> PartitionReplica:
    """Node 3 rejoins; the controller adds it to the ISR, but its answer is lost and its metadata
    lags; the retry is refused (INVALID_UPDATE_VERSION: the partition epoch moved). Then node 3
    dies again with the leader's log ahead of it."""
    net.crash(3)
    leader = net.nodes[1]
    leader.produce([b"x"], net.now_ms, acks=1)
    net.run(net.config.replica_lag_time_max_ms * 3 // 2 + 1000)
    assert net.registrations["t", 0].isr == (1, 2)
    net.answers_lost = net.metadata_held = True
    net.restart(3)
    sent = len(net.alter_requests)
    while len(net.alter_requests) == sent:
        net.step()
    assert list(net.registrations["t", 0].isr) == [1, 2, 3]  # applied, answer lost
    net.answers_lost = False
    net.run(500)
    assert [r.topics[0].partitions[0].partition_epoch for r in net.alter_requests[-2:]] == [1, 1]
    replica = leader.replica()
    net.crash(3)
    leader.produce([b"y"], net.now_ms, acks=1)
    net.run(1000)
    assert net.nodes[2].replica().log_end_offset == 2
    return replica


def test_a_refused_retry_keeps_the_isr_addition_pending_until_the_metadata_tells() -> None:
    """Kafka's Partition.handleAlterPartitionError keeps the pending state on INVALID_UPDATE_VERSION
    (and FENCED_LEADER_EPOCH, ...): an earlier send may have been applied, as here, so node 3 is
    in the controller's ISR. Dropping the pending ISR let the leader's high watermark pass node 3's
    log end (the simulator's hw-above-isr, seed 1664)."""
    net = three()
    replica = lost_isr_addition(net)
    assert replica.high_watermark == 1  # node 3, in the controller's ISR, has only offset 0
    assert replica.pending_isr == (1, 2, 3)
    assert len(net.alter_requests) == 1 + 2  # the shrink; the lost one and its refused retry
    assert not net.nodes[1].manager.alter.proposals
    net.metadata_held = False
    net.run(100)
    assert replica.isr == [1, 2, 3] and replica.pending_isr is None
    assert replica.high_watermark == 1


def test_a_newer_partition_state_settles_a_pending_isr_it_does_not_name() -> None:
    """The metadata then brings another ISR (the controller took node 3 out again): it settles
    the pending change (Kafka's makeLeader commits the metadata's ISR) and the HW moves on."""
    net = three()
    replica = lost_isr_addition(net)
    current = net.registrations["t", 0]
    net.metadata_held = False
    net._pending_publish.clear()
    net.publish(replace(current, isr=(1, 2), partition_epoch=current.partition_epoch + 1))
    assert replica.pending_isr is None and replica.isr == [1, 2]
    net.run(1000)
    assert replica.high_watermark == 2
    assert not net.nodes[1].manager.alter.proposals


def test_a_held_consumer_fetch_is_read_again_only_when_its_high_watermark_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A consumer reads to the high watermark: records above it (acks=1, not fetched by the
    followers yet) do not wake its held Fetch, which is not even read again; the high watermark
    reaching them answers it. A follower's held Fetch reads to the log end offset, so the same
    records answer it at once."""
    reads: list[int] = []
    original = PartitionReplica.read

    def counting(self: PartitionReplica, fetch_offset: int, max_bytes: int, **kw: Any) -> Any:
        reads.append(fetch_offset)
        return original(self, fetch_offset, max_bytes, **kw)

    net = three()
    leader = net.nodes[1]
    leader.produce([b"a"], net.now_ms, acks=-1)
    net.run(1000)
    assert leader.replica().high_watermark == 1
    monkeypatch.setattr(PartitionReplica, "read", counting)

    def held_fetch(replica_id: int) -> Any:
        partition = FetchRequestPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20)
        request = FetchRequest(
            replica_id=replica_id,
            max_wait_ms=60_000,
            min_bytes=1,
            topics=[FetchRequestTopic(topic="t", topic_id=TOPIC_ID, partitions=[partition])],
        )
        waiting = leader.call(request, net.now_ms, version=12)
        assert not isinstance(waiting, Message)
        return waiting

    def values(answer: object) -> list[bytes | None]:
        assert isinstance(answer, FetchResponse)
        return [r.value for r in read_records(bytes(answer.responses[0].partitions[0].records or b""))]

    consumer, follower = held_fetch(-1), held_fetch(2)
    assert reads == [1, 1]  # held: each read once
    leader.produce([b"b"], net.now_ms, acks=1)
    assert leader.replica().log_end_offset == 2 and leader.replica().high_watermark == 1
    assert consumer.poll(net.now_ms) is None and reads == [1, 1]
    assert values(follower.poll(net.now_ms)) == [b"b"] and reads == [1, 1, 1]
    net.run(100)  # the followers fetch b: the high watermark moves
    assert leader.replica().high_watermark == 2
    assert values(consumer.poll(net.now_ms)) == [b"b"]
