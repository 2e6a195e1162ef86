"""``request_percentage`` in the engine (KIP-124): the handling time the driver reports
(``Broker.request_time``) counts against the quota of the connection's client, and the next
answers carry the throttle time (at most one window), then the connection is muted for it."""

from __future__ import annotations

from kafka_wire.messages import (
    MetadataRequest,
    MetadataResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from tests.broker.engine import Client, Engine
from tests.broker.quotas.test_quota_admin import alter, entry


def _metadata(client: Client) -> MetadataResponse:
    reply = client.request(MetadataRequest(topics=[])).body
    assert isinstance(reply, MetadataResponse)
    return reply


def test_reported_handling_time_throttles_the_next_answers() -> None:
    engine = Engine()
    client, other = Client(engine, 1), Client(engine, 2)
    assert alter(client, entry({"client-id": "client-1"}, {"request_percentage": 1.0})) == [(0, None)]
    assert _metadata(client).throttle_time_ms == 0
    # 50 ms of one thread over the 10 s the windows span at first: 0.5 %, within the quota.
    engine.broker.request_time(1, 50_000_000, engine.now_ms)
    assert _metadata(client).throttle_time_ms == 0
    # 250 ms in all: 2.5 %, over 1 %; (2.5 - 1) / 1 of the span is more than one window: 1 s.
    engine.broker.request_time(1, 200_000_000, engine.now_ms)
    engine.broker.request_time(2, 900_000_000, engine.now_ms)  # another client id: no quota
    reply = _metadata(client)
    assert reply.throttle_time_ms == 1000
    assert 1 in engine.paused
    assert _metadata(other).throttle_time_ms == 0
    engine.advance(1000)
    assert 1 not in engine.paused


def test_connections_without_a_request_quota_are_not_measured() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert alter(client, entry({"client-id": None}, {"producer_byte_rate": 1000.0})) == [(0, None)]
    engine.broker.request_time(1, 10_000_000_000, engine.now_ms)
    engine.broker.request_time(99, 1, engine.now_ms)  # no such connection: ignored
    assert _metadata(client).throttle_time_ms == 0


def test_a_brokers_own_requests_are_exempt() -> None:
    """WriteTxnMarkers (a transaction coordinator's, to the leaders) is answered without a
    throttle, as Kafka answers it, whatever the request quota of its client."""
    engine = Engine()
    client = Client(engine, 1)
    assert alter(client, entry({"client-id": None}, {"request_percentage": 1.0})) == [(0, None)]
    engine.broker.request_time(1, 1_000_000_000, engine.now_ms)
    reply = client.request(WriteTxnMarkersRequest(markers=[])).body
    assert isinstance(reply, WriteTxnMarkersResponse)
    assert 1 not in engine.paused
    assert _metadata(client).throttle_time_ms == 1000  # the client's other requests are throttled
