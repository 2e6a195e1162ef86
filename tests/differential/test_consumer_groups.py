"""KIP-848 consumer groups: ConsumerGroupHeartbeat refusals (bad fields, unknown assignors, bad RE2
regular expressions, stale and unknown members), ConsumerGroupDescribe of missing and live groups,
and what the classic APIs say of a consumer group (DescribeGroups, ListGroups with types, an
OffsetCommit at a stale member epoch).

KIP-848 member ids are the client's own (it sends one from its first heartbeat), so the same
request goes to both brokers. Kafka's refusals of a heartbeat are worded by its coordinator and
its RE2/J: their messages are compared too, beside the usual field-by-field comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest

from kafka_wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.differential.compare import Rule, Side
from tests.differential.pair import Asks, Pair, Peer
from tests.differential.test_groups import coordinate

TOPIC: Final = "cg-topic"


def heartbeat(**changes: Any) -> ConsumerGroupHeartbeatRequest:
    """A first heartbeat of member ``cg-member`` to group ``cg-errors``, with ``changes``."""
    request = ConsumerGroupHeartbeatRequest(
        group_id="cg-errors",
        member_id="cg-member",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[TOPIC],
        topic_partitions=[],
    )
    for name, value in changes.items():
        setattr(request, name, value)
    return request


REFUSED: Final = {
    "empty group id": heartbeat(group_id=""),
    "empty instance id": heartbeat(instance_id=""),
    "empty rack id": heartbeat(rack_id=""),
    "join without rebalance timeout": heartbeat(rebalance_timeout_ms=-1),
    "join with owned partitions unset": heartbeat(topic_partitions=None),
    "join without subscription": heartbeat(subscribed_topic_names=None),
    "join without member id": heartbeat(member_id=""),
    "invalid epoch": heartbeat(member_epoch=-3),
    "static leave without instance id": heartbeat(member_epoch=-2),
    "unknown assignor": heartbeat(server_assignor="sticky"),
    "bad regex": heartbeat(subscribed_topic_names=None, subscribed_topic_regex="("),
    "bad regex class": heartbeat(subscribed_topic_names=None, subscribed_topic_regex="[a"),
    "bad regex repetition": heartbeat(subscribed_topic_names=None, subscribed_topic_regex="a**"),
    "bad regex backslash": heartbeat(subscribed_topic_names=None, subscribed_topic_regex="a\\"),
    "unknown member of an unknown group": heartbeat(member_epoch=5, group_id="cg-nobody"),
}


@pytest.fixture(scope="module")
def coordinators(pair_module: Pair) -> None:
    """Both brokers coordinate groups (their offsets topic exists)."""
    coordinate(pair_module, "cg-probe")


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_heartbeats(pair: Pair, coordinators: None, case: str) -> None:
    kafka, ours = pair.check(REFUSED[case], 1)
    assert kafka.error_code != 0
    assert ours.error_message == kafka.error_message


def test_describe_missing_group(pair: Pair, coordinators: None) -> None:
    pair.check(ConsumerGroupDescribeRequest(group_ids=["cg-none"], include_authorized_operations=True), 1)


def _epoch(value: Any, side: Side) -> Any:
    return "<an epoch>" if isinstance(value, int) and value > 0 else value


#: Kafka 4.4 numbers a new group's epochs from 2 and computes target assignments at most once per
#: ``group.consumer.assignment.interval.ms``; kafka-wire from 1, at once (kafka-differences.md).
EPOCH_RULES: Final = (
    Rule("member_epoch", _epoch, "a group's epochs are numbered from 2 by Kafka 4.4, from 1 here"),
    Rule("groups[].group_epoch", _epoch, "the same"),
    Rule("groups[].assignment_epoch", _epoch, "the same"),
    Rule("groups[].members[].member_epoch", _epoch, "the same"),
)

LIVE: Final = "cg-live"


def test_live_group(pair: Pair, coordinators: None) -> None:
    """One member (its topic does not exist: no assignment), then a fenced heartbeat, the group
    described by both APIs, listed by type, a commit at a stale member epoch, the member's leave."""
    joined = pair.check(heartbeat(group_id=LIVE, member_id="live-member"), 1, EPOCH_RULES)
    assert joined[0].error_code == 0
    epochs = {
        peer.side.name: answer.member_epoch
        for peer, answer in zip((pair.kafka, pair.kafka_wire), joined, strict=True)
    }

    def at(offset: int, make: Callable[[int], Asks[Any]]) -> Callable[[Peer], Asks[Any]]:
        return lambda peer: make(epochs[peer.side.name] + offset)

    pair.check_each(at(5, lambda e: heartbeat(group_id=LIVE, member_id="live-member", member_epoch=e)), 1)
    pair.check(ConsumerGroupDescribeRequest(group_ids=[LIVE]), 1, EPOCH_RULES)
    pair.check(DescribeGroupsRequest(groups=[LIVE]), 5)
    kafka_groups, our_groups = pair.both(ListGroupsRequest(types_filter=["consumer"]), 5)
    pair.judge(
        [g for g in kafka_groups.groups if g.group_id == LIVE],
        [g for g in our_groups.groups if g.group_id == LIVE],
        "ListGroupsRequest v5",
    )

    def commit(epoch: int) -> OffsetCommitRequest:
        partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
        return OffsetCommitRequest(
            group_id=LIVE,
            generation_id_or_member_epoch=epoch,
            member_id="live-member",
            topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[partition])],
        )

    pair.check_each(at(1, commit), 9)
    pair.check_each(at(0, lambda e: heartbeat(group_id=LIVE, member_id="live-member", member_epoch=-1)), 1)
    pair.check(ConsumerGroupDescribeRequest(group_ids=[LIVE]), 1, EPOCH_RULES)
