"""Replication between brokers' partition parts, driven in memory (see cluster.py)."""

from __future__ import annotations

from kafka_wire.broker.partition.roles import ReplicaRole
from kafka_wire.messages import ErrorCode, ProduceResponse
from tests.broker.replication.cluster import Network


def produce_error(answer: object) -> int:
    assert isinstance(answer, ProduceResponse)
    return answer.responses[0].partition_responses[0].error_code


def three(min_isr: int = 1) -> Network:
    net = Network()
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
