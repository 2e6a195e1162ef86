"""Byte-rate quotas in the engine: a Produce or Fetch over its quota is answered with
``throttle_time_ms``, then its connection is muted for that time (KIP-219), and a throttled
Fetch carries no records; clients of one user share its rate."""

from __future__ import annotations

from kafka_wire.broker.effects import PauseReading, ResumeReading
from kafka_wire.messages import FetchResponse, ProduceResponse
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.quotas.test_quota_admin import alter, entry
from tests.broker.test_engine import create, fetch, produce

VALUE = b"x" * 10_000


def batch() -> bytes:
    return build_batch([NewRecord(None, VALUE)], default_timestamp=1_700_000_000_000)  # the engine's clock


def test_a_produce_over_its_quota_is_throttled_then_muted() -> None:
    engine = Engine()
    client = Client(engine, 1)  # client id "client-1"
    create(client, "t")
    assert alter(client, entry({"client-id": "client-1"}, {"producer_byte_rate": 2_000.0})) == [(0, None)]
    first = produce(client, "t", batch())  # ~10 KB over a 10 s span: 1 KB/s
    assert first is not None and first.throttle_time_ms == 0
    second = produce(client, "t", batch())  # ~20 KB over 10 s: 2 KB/s and a bit
    assert second is not None and second.throttle_time_ms < 100
    third = produce(client, "t", batch())
    assert third is not None and third.responses[0].partition_responses[0].error_code == 0
    throttle = third.throttle_time_ms
    assert 4_000 < throttle <= 5_200  # ~30 KB over 10 s is 3 KB/s: (3 - 2) / 2 of 10 s
    assert engine.log[-1] == PauseReading(1)  # answered, then muted
    assert 1 in engine.paused
    start = engine.now_ms
    while 1 in engine.paused:
        deadline = engine.broker.next_deadline_ms()
        assert deadline is not None
        engine.now_ms = deadline
        engine.tick()
    assert throttle - 100 <= engine.now_ms - start <= throttle  # from the answer's release
    assert any(isinstance(e, ResumeReading) for e in engine.log[-3:])
    # Another client id has no quota.
    other = Client(engine, 2)
    reply = produce(other, "t", batch())
    assert reply is not None and reply.throttle_time_ms == 0


def test_clients_of_one_user_share_its_quota() -> None:
    engine = Engine()
    a, b = Client(engine, 1), Client(engine, 2)
    create(a, "t")
    assert alter(a, entry({"user": "ANONYMOUS"}, {"producer_byte_rate": 2_000.0})) == [(0, None)]
    produce(a, "t", batch())
    produce(b, "t", batch())
    reply = produce(b, "t", batch())  # the third 10 KB of the user, from either client
    assert isinstance(reply, ProduceResponse) and reply.throttle_time_ms > 4_000


def test_a_fetch_over_its_quota_gets_no_records() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    for _ in range(5):
        produce(client, "t", batch())
    assert alter(client, entry({"client-id": "client-1"}, {"consumer_byte_rate": 1_500.0})) == [(0, None)]
    first = fetch(client, "t", 0)  # max_bytes is bounded by 10 windows of 1.5 KB/s: one batch
    assert isinstance(first, FetchResponse) and first.throttle_time_ms == 0
    assert first.responses[0].partitions[0].records
    engine.advance(100)
    second = fetch(client, "t", 1)
    assert second.throttle_time_ms > 0 and second.responses == []
    # Nothing was counted for it: once the client waited out its throttle times (the first
    # windows pad the span, so a throttle time can come short, as Kafka's), the records come
    # at the quota's rate: the 20 KB of both answers within 20 KB / 1.5 KB/s (the first windows
    # expire at 11 s, which lets them come a little sooner).
    start, answer = engine.now_ms, second
    while answer.throttle_time_ms:
        engine.advance(answer.throttle_time_ms)
        answer = fetch(client, "t", 1)
    assert answer.responses[0].partitions[0].records
    assert 10_000 <= engine.now_ms - start <= 20_000 * 1000 // 1_500


def test_an_acks_0_produce_over_its_quota_mutes_its_connection() -> None:
    """No answer carries the time: the connection is muted at once, as Kafka throttles it."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    assert alter(client, entry({"client-id": "client-1"}, {"producer_byte_rate": 2_000.0})) == [(0, None)]
    produce(client, "t", batch(), acks=0)
    engine.drain()
    assert 1 not in engine.paused
    produce(client, "t", batch(), acks=0)  # ~20 KB over 10 s: a little over 2 KB/s
    engine.drain()
    assert 1 in engine.paused
    engine.advance(100)
    assert 1 not in engine.paused
    produce(client, "t", batch(), acks=0)
    engine.drain()
    assert 1 in engine.paused  # ~30 KB over 10 s at 2 KB/s: muted for about 5 s
    start = engine.now_ms
    engine.advance(4_000)
    assert 1 in engine.paused
    engine.advance(1_200)
    assert 1 not in engine.paused and engine.now_ms - start <= 5_200
    assert engine.broker.state.partitions["t", 0].log_end_offset == 3
