"""The broker's fault injection (``kafka_wire.broker.faults``) on the engine, with MemoryStorage."""

from __future__ import annotations

import pytest

from kafka_wire.broker.faults import FaultInjector
from kafka_wire.errors import LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import (
    ApiKey,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.protocol import NEED_DATA
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce


def _batch(engine: Engine, value: bytes = b"v") -> bytes:
    return build_batch([NewRecord(None, value)], default_timestamp=engine.now_ms)


def _codes(response: ProduceResponse | None) -> list[int]:
    assert response is not None
    return [p.error_code for t in response.responses for p in t.partition_responses]


def test_pushed_errors_answer_the_next_requests_in_order_then_requests_are_handled() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.push_errors(
        ApiKey.PRODUCE, [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.RECORD_LIST_TOO_LARGE]
    )
    assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
    assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.RECORD_LIST_TOO_LARGE]
    assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.NONE]
    # The failed produces were not handled: the log holds one batch.
    assert fetch(client, "t", 0).responses[0].partitions[0].high_watermark == 1
    assert not engine.broker.faults.armed


def test_error_count_forever_and_clear() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    faults = engine.broker.faults
    faults.push_errors(ApiKey.PRODUCE, ErrorCode.POLICY_VIOLATION, count=2)
    assert [_codes(produce(client, "t", _batch(engine))) for _ in range(3)] == [
        [ErrorCode.POLICY_VIOLATION],
        [ErrorCode.POLICY_VIOLATION],
        [ErrorCode.NONE],
    ]
    faults.push_errors(ApiKey.PRODUCE, ErrorCode.INVALID_RECORD, forever=True)
    for _ in range(5):
        assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.INVALID_RECORD]
    faults.clear(ApiKey.PRODUCE)
    assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.NONE]


def test_error_answers_have_the_request_shape() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.push_errors(ApiKey.METADATA, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    body = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")])).body
    assert isinstance(body, MetadataResponse)
    assert [(t.name, t.error_code) for t in body.topics] == [("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    # FindCoordinator: a top-level error up to v3, one per key asked for from v4.
    engine.broker.faults.push_errors(ApiKey.FIND_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, count=2)
    found = client.request(FindCoordinatorRequest(key="g"), 1).body
    assert isinstance(found, FindCoordinatorResponse)
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    found = client.request(FindCoordinatorRequest(coordinator_keys=["g", "h"]), 4).body
    assert isinstance(found, FindCoordinatorResponse)
    assert [(c.key, c.error_code) for c in found.coordinators] == [
        ("g", ErrorCode.COORDINATOR_NOT_AVAILABLE),
        ("h", ErrorCode.COORDINATOR_NOT_AVAILABLE),
    ]
    # OffsetFetch: per partition up to v7 (and top-level from v2), per group from v8.
    engine.broker.faults.push_errors(ApiKey.OFFSET_FETCH, ErrorCode.NOT_COORDINATOR, count=2)
    old = client.request(
        OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]), 1
    ).body
    assert isinstance(old, OffsetFetchResponse)
    assert [p.error_code for t in old.topics for p in t.partitions] == [ErrorCode.NOT_COORDINATOR]
    new = client.request(
        OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="g", topics=None)]), 8
    ).body
    assert isinstance(new, OffsetFetchResponse)
    assert [(g.group_id, g.error_code) for g in new.groups] == [("g", ErrorCode.NOT_COORDINATOR)]
    engine.broker.faults.push_errors(ApiKey.DESCRIBE_GROUPS, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    described = client.request(DescribeGroupsRequest(groups=["g"])).body
    assert isinstance(described, DescribeGroupsResponse)
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("g", ErrorCode.GROUP_AUTHORIZATION_FAILED)
    ]


def test_acks0_produce_with_an_injected_error_closes_the_connection() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.push_errors(ApiKey.PRODUCE, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    produce(client, "t", _batch(engine), acks=0)
    assert 1 in engine.closed


def test_latency_holds_the_answer_until_its_time() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.add_latency(300, ApiKey.PRODUCE)
    engine.broker.faults.add_latency(50)  # broker-wide: adds up
    start = engine.now_ms
    client.send(produce_request(engine), 9)
    assert client.responses() == []
    assert 1 in engine.paused  # the connection is not read meanwhile
    deadline = engine.broker.next_deadline_ms()
    assert deadline is not None and deadline <= start + 350
    engine.advance(349)
    assert client.responses() == []
    engine.advance(1)
    [reply] = client.responses()
    assert isinstance(reply.body, ProduceResponse) and _codes(reply.body) == [ErrorCode.NONE]
    assert 1 not in engine.paused
    engine.broker.faults.clear()
    assert _codes(produce(client, "t", _batch(engine))) == [ErrorCode.NONE]
    assert engine.now_ms == start + 350  # answered at once


def test_latency_answer_dropped_when_the_connection_closes() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.add_latency(300)
    client.send(produce_request(engine), 9)
    engine._apply(engine.broker.connection_closed(1, engine.now_ms))
    assert not engine.broker._clients._delayed
    engine.advance(400)
    assert engine.take(1) == b""


def test_close_mid_response_sends_part_of_the_frame_then_closes() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    engine.broker.faults.close_mid_response(ApiKey.PRODUCE)
    client.send(produce_request(engine), 9)
    sent = engine.take(1)
    assert 1 in engine.closed
    size = int.from_bytes(sent[:4], "big") if len(sent) >= 4 else None
    assert 0 < len(sent) and (size is None or len(sent) < size + 4)
    client.conn.receive_data(sent)
    assert client.conn.next_event() is NEED_DATA  # an unfinished frame
    client.conn.receive_eof()
    with pytest.raises(RemoteProtocolError, match="closed in the middle of a frame"):
        client.conn.next_event()
    # The produce itself was handled (the answer was lost, not the write); the next one goes through.
    other = Client(engine, 2)
    assert _codes(produce(other, "t", _batch(engine))) == [ErrorCode.NONE]
    assert fetch(other, "t", 0).responses[0].partitions[0].high_watermark == 2


def test_the_injector_refuses_what_it_cannot_do() -> None:
    faults = FaultInjector()
    with pytest.raises(LocalProtocolError):
        faults.push_errors(ApiKey.PRODUCE, [])
    with pytest.raises(LocalProtocolError):
        faults.push_errors(ApiKey.PRODUCE, ErrorCode.NONE)
    with pytest.raises(LocalProtocolError):
        faults.push_errors(9999, ErrorCode.UNKNOWN_SERVER_ERROR)
    with pytest.raises(LocalProtocolError, match="OFFSET_FOR_LEADER_EPOCH"):  # errors per partition only
        faults.push_errors(ApiKey.OFFSET_FOR_LEADER_EPOCH, ErrorCode.UNKNOWN_SERVER_ERROR)
    with pytest.raises(LocalProtocolError, match="ADD_PARTITIONS_TO_TXN"):  # not served
        faults.push_errors(ApiKey.ADD_PARTITIONS_TO_TXN, ErrorCode.UNKNOWN_SERVER_ERROR)
    with pytest.raises(LocalProtocolError):
        faults.add_latency(-1)
    with pytest.raises(LocalProtocolError):
        faults.close_mid_response(ApiKey.FETCH, 0)
    assert not faults.armed
    faults.add_latency(10, ApiKey.FETCH)
    assert faults.held_until(ApiKey.FETCH, 100) == 110
    assert faults.held_until(ApiKey.PRODUCE, 100) is None
    assert faults.describe()["latency_ms"] == {"FETCH": 10}
    faults.add_latency(0, ApiKey.FETCH)
    assert not faults.armed


def produce_request(engine: Engine) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="t", partition_data=[ProduceRequestPartitionProduceData(index=0, records=_batch(engine))]
            )
        ],
    )


def test_a_followers_fetch_meets_no_fault() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    faults = engine.broker.faults
    faults.push_errors(ApiKey.FETCH, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    follower = FetchRequest(
        replica_id=2,
        max_wait_ms=0,
        session_epoch=-1,
        topics=[
            FetchRequestTopic(
                topic="t",
                partitions=[FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)],
            )
        ],
    )
    client.request(follower, 12)  # a replica's: answered as the broker answers it
    assert faults.describe()["errors"] == {"FETCH": [[ErrorCode.NOT_LEADER_OR_FOLLOWER]]}
    answer = fetch(client, "t", 0)
    assert answer.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
