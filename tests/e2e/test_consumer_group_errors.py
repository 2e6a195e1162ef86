"""Bad KIP-848 requests, answered as Apache Kafka 4.4 answers them: the same request, as raw bytes,
to ``kafka-wire serve`` and to a Kafka 4.4 node; the error code, message and epoch must match."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.e2e import raw
from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire


def _join(**changes: object) -> ConsumerGroupHeartbeatRequest:
    request = ConsumerGroupHeartbeatRequest(
        group_id="kw-errors",
        member_id="kw-errors-member",
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["kw-errors-topic"],
        topic_partitions=[],
    )
    for name, value in changes.items():
        setattr(request, name, value)
    return request


HEARTBEATS = {
    "empty group id": _join(group_id=""),
    "empty instance id": _join(instance_id=""),
    "empty rack id": _join(rack_id=""),
    "join without rebalance timeout": _join(rebalance_timeout_ms=-1),
    "join with owned partitions unset": _join(topic_partitions=None),
    "join without subscription": _join(subscribed_topic_names=None),
    "join without member id": _join(member_id=""),
    "invalid epoch": _join(member_epoch=-3),
    "static leave without instance id": _join(member_epoch=-2),
    "unknown assignor": _join(server_assignor="sticky"),
    "bad regex": _join(subscribed_topic_names=None, subscribed_topic_regex="("),
    "bad regex class": _join(subscribed_topic_names=None, subscribed_topic_regex="[a"),
    "bad regex repetition": _join(subscribed_topic_names=None, subscribed_topic_regex="a**"),
    "bad regex backslash": _join(subscribed_topic_names=None, subscribed_topic_regex="a\\"),
    "unknown group": _join(member_epoch=5, group_id="kw-errors-nobody"),
}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    """``kafka-wire serve`` and Apache Kafka 4.4, side by side."""
    ours = kafka_wire(tmp_path_factory.mktemp("kafka_wire"))
    kafka = apache_kafka(tmp_path_factory.mktemp("apache_kafka"))
    ours.start()
    try:
        kafka.start()
        try:
            yield ours, kafka
        finally:
            kafka.close()
    finally:
        ours.close()


#: Answers while the group's coordinator is not ready: Kafka creates ``__consumer_offsets`` at the
#: first FindCoordinator and loads its partitions; the request is sent again until they pass.
NOT_READY = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
)
READY_TIMEOUT_S = 60.0


def ask(broker: BrokerProcess, request: Message, api_key: int, version: int) -> Message:
    """``request``'s answer, asked again while its group's coordinator is not ready."""
    header = RequestHeader(correlation_id=7, client_id=raw.CLIENT_ID)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        outcome = raw.exchange(
            broker.address, encode_request(header, request, version), probe=type(request).__name__
        )
        assert outcome.whole_frame, outcome.describe()
        _, body = decode_response(outcome.reply, api_key, version)
        errors = (
            [g.error_code for g in body.groups] if isinstance(body, ConsumerGroupDescribeResponse) else []
        )
        errors.append(getattr(body, "error_code", 0))
        if not set(errors) & set(NOT_READY):
            return body
        find = FindCoordinatorRequest(key=getattr(request, "group_id", "kw-errors"), key_type=0)
        raw.exchange(broker.address, encode_request(header, find, 3), probe="FindCoordinator")
        assert time.monotonic() < deadline, f"{broker.name}: the coordinator was not ready: {body}"
        time.sleep(0.2)


@pytest.mark.parametrize("case", list(HEARTBEATS))
def test_bad_heartbeats_are_refused_as_kafka_refuses_them(
    pair: tuple[BrokerProcess, BrokerProcess], case: str
) -> None:
    answers = []
    for broker in pair:
        body = ask(broker, HEARTBEATS[case], ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
        assert isinstance(body, ConsumerGroupHeartbeatResponse)
        answers.append((body.error_code, body.error_message, body.member_epoch, body.member_id))
    ours, kafka = answers
    assert ours == kafka


def test_describing_a_missing_group_is_answered_as_kafka(pair: tuple[BrokerProcess, BrokerProcess]) -> None:
    answers = []
    for broker in pair:
        body = ask(
            broker,
            ConsumerGroupDescribeRequest(group_ids=["kw-errors-none"]),
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            1,
        )
        assert isinstance(body, ConsumerGroupDescribeResponse)
        answers.append([(g.group_id, g.error_code, g.error_message, g.group_state) for g in body.groups])
    ours, kafka = answers
    assert ours == kafka


LIVE = "kw-errors-live"


def _live_member(broker: BrokerProcess) -> ConsumerGroupHeartbeatResponse:
    """A member joined to ``LIVE`` (subscribed to a topic that does not exist: no assignment)."""
    body = ask(broker, _join(group_id=LIVE, member_id="live-member"), ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    assert isinstance(body, ConsumerGroupHeartbeatResponse) and body.error_code == 0, body
    return body


def test_a_live_consumer_group_is_described_and_checked_as_kafka_does(
    pair: tuple[BrokerProcess, BrokerProcess],
) -> None:
    seen = []
    for broker in pair:
        joined = _live_member(broker)
        fenced = ask(
            broker,
            _join(
                group_id=LIVE,
                member_id="live-member",
                member_epoch=joined.member_epoch + 5,
                rebalance_timeout_ms=-1,
            ),
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            1,
        )
        assert isinstance(fenced, ConsumerGroupHeartbeatResponse)
        described = ask(
            broker, ConsumerGroupDescribeRequest(group_ids=[LIVE]), ApiKey.CONSUMER_GROUP_DESCRIBE, 1
        )
        assert isinstance(described, ConsumerGroupDescribeResponse)
        [group] = described.groups
        [member] = group.members
        classic = ask(broker, DescribeGroupsRequest(groups=[LIVE]), ApiKey.DESCRIBE_GROUPS, 6)
        assert isinstance(classic, DescribeGroupsResponse)
        listed = ask(broker, ListGroupsRequest(types_filter=["consumer"]), ApiKey.LIST_GROUPS, 5)
        assert isinstance(listed, ListGroupsResponse)
        stale = ask(
            broker,
            OffsetCommitRequest(
                group_id=LIVE,
                generation_id_or_member_epoch=joined.member_epoch + 1,
                member_id="live-member",
                topics=[
                    OffsetCommitRequestTopic(
                        name="kw-errors-topic",
                        partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
                    )
                ],
            ),
            ApiKey.OFFSET_COMMIT,
            9,
        )
        assert isinstance(stale, OffsetCommitResponse)
        seen.append(
            {
                "join": (joined.member_epoch, joined.heartbeat_interval_ms, joined.assignment),
                "fenced": (fenced.error_code, fenced.error_message),
                "describe": (
                    group.error_code,
                    group.group_state,
                    group.group_epoch,
                    group.assignment_epoch,
                    group.assignor_name,
                    member.member_epoch,
                    member.subscribed_topic_names,
                    member.client_id,
                    member.member_type,
                ),
                "describe_groups": [(g.error_code, g.error_message, g.group_state) for g in classic.groups],
                "listed": [
                    (g.group_type, g.group_state, g.protocol_type)
                    for g in listed.groups
                    if g.group_id == LIVE
                ],
                "stale_commit": [p.error_code for t in stale.topics for p in t.partitions],
            }
        )
    ours, kafka = seen
    assert ours == kafka
