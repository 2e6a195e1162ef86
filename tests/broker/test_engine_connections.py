"""Connection limits in the engine, on a virtual clock: caps on connections, idle and unfinished
requests closed on time, one request at a time per connection, the request queue bound, and the
delay after a failed authentication."""

from __future__ import annotations

import struct
from typing import Final

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.cluster_settings import STANDALONE_LISTENER
from kafka_wire.broker.effects import CloseConnection, PauseReading, ResumeReading
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.errors import AuthenticationError, LocalProtocolError
from kafka_wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, ClientState, Response
from kafka_wire.protocol.sasl import PlainClient
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, records_of

#: The one listener of a single node, with SASL PLAIN and one user.
ALICE: Final = {STANDALONE_LISTENER: ListenerSasl(mechanisms=("PLAIN",), plain_users={"alice": "right"})}


def config(**settings: object) -> BrokerConfig:
    return BrokerConfig(group_initial_rebalance_delay_ms=0, **settings)  # type: ignore[arg-type]  # test settings by name


def long_poll(topic: str, max_wait_ms: int, offset: int = 0) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        session_epoch=-1,
        topics=[
            FetchRequestTopic(
                topic=topic,
                partitions=[
                    FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def produce_request(topic: str, value: bytes, now_ms: int, partition: int = 0) -> ProduceRequest:
    batch = build_batch([NewRecord(None, value)], default_timestamp=now_ms)
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=topic,
                partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
            )
        ],
    )


# -- connection caps -----------------------------------------------------------------------------


def test_max_connections_closes_new_connections_at_once() -> None:
    engine = Engine(config(max_connections=2))
    broker, now = engine.broker, engine.now_ms
    assert broker.connection_opened(1, now, host="10.0.0.1") == []
    assert broker.connection_opened(2, now, host="10.0.0.2") == []
    assert broker.connection_opened(3, now, host="10.0.0.3") == [CloseConnection(3)]
    with pytest.raises(LocalProtocolError):  # a refused connection is forgotten at once
        broker.receive_data(3, b"\x00", now)
    broker.connection_closed(1, now)
    assert broker.connection_opened(4, now, host="10.0.0.3") == []


def test_max_connections_per_ip_and_its_overrides() -> None:
    engine = Engine(config(max_connections_per_ip=1, max_connections_per_ip_overrides={"10.0.0.9": 3}))
    broker, now = engine.broker, engine.now_ms
    assert broker.connection_opened(1, now, host="10.0.0.1") == []
    assert broker.connection_opened(2, now, host="10.0.0.1") == [CloseConnection(2)]
    assert all(broker.connection_opened(i, now, host="10.0.0.9") == [] for i in (3, 4, 5))
    assert broker.connection_opened(6, now, host="10.0.0.9") == [CloseConnection(6)]
    # A connection the engine itself closes (here: bytes that are not Kafka) gives its slot back.
    engine._apply(broker.receive_data(1, struct.pack(">i", -1), now))
    assert 1 in engine.closed
    assert broker.connection_opened(7, now, host="10.0.0.1") == []


def test_a_tls_connection_is_counted_before_its_handshake_and_given_its_principal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The driver reports a TLS connection when it accepts it (the caps count it during its
    handshake), then the principal its handshake gave it."""
    caplog.set_level("INFO", logger="kafka_wire")
    engine = Engine(config(max_connections_per_ip=1))
    broker, now = engine.broker, engine.now_ms
    assert broker.connection_opened(1, now, host="10.0.0.1", listener="SSL") == []
    assert broker.connection_opened(2, now, host="10.0.0.1", listener="SSL") == [CloseConnection(2)]
    assert broker.connection_authenticated(1, "alice", now) == []
    assert "connection 1 from 10.0.0.1: principal User:alice" in caplog.messages
    with pytest.raises(LocalProtocolError):  # never opened, or forgotten
        broker.connection_authenticated(2, "bob", now)


def test_connections_are_refused_after_shutdown() -> None:
    engine = Engine()
    engine._apply(engine.broker.shutdown(engine.now_ms))
    assert engine.broker.connection_opened(1, engine.now_ms, host="127.0.0.1") == [CloseConnection(1)]


# -- timers --------------------------------------------------------------------------------------


def test_an_idle_connection_is_closed_after_connections_max_idle_ms() -> None:
    engine = Engine()  # Kafka's default: 10 minutes
    client = Client(engine, 1)
    engine.advance(599_999)
    assert 1 not in engine.closed
    assert isinstance(client.request(MetadataRequest(topics=[])).body, MetadataResponse)  # activity
    engine.advance(599_999)
    assert 1 not in engine.closed
    engine.advance(1)
    assert 1 in engine.closed


def test_a_negative_idle_time_never_closes_as_in_kafka() -> None:
    engine = Engine(config(connections_max_idle_ms=-1))
    Client(engine, 1)
    engine.advance(10 * 600_000)
    assert 1 not in engine.closed


def test_a_connection_owed_a_response_is_not_idle() -> None:
    engine = Engine(config(connections_max_idle_ms=1000))
    consumer = Client(engine, 1)
    create(consumer, "t")
    consumer.send(long_poll("t", max_wait_ms=5000), 12)
    engine.advance(4999)
    assert 1 not in engine.closed and consumer.responses() == []
    engine.advance(1)
    [answer] = consumer.responses()
    assert isinstance(answer.body, FetchResponse)
    engine.advance(999)
    assert 1 not in engine.closed
    engine.advance(1)
    assert 1 in engine.closed


def test_an_unfinished_request_frame_is_closed_at_the_receive_timeout() -> None:
    engine = Engine()  # kafka.wire.request.receive.timeout.ms: 30 s
    engine.open(1)
    engine.feed(1, struct.pack(">i", 1000) + bytes(10))
    for _ in range(2):  # a byte now and then keeps the connection from being idle, not the frame alive
        engine.advance(10_000)
        engine.feed(1, b"\x00")
    engine.advance(9_999)
    assert 1 not in engine.closed
    engine.advance(1)
    assert 1 in engine.closed


def test_the_receive_timeout_runs_per_frame() -> None:
    engine = Engine(config(request_receive_timeout_ms=1000))
    client = Client(engine, 1, negotiate=False)
    frame = client.conn.send(MetadataRequest(topics=[]), 12)
    for _ in range(3):  # each frame takes 900 ms to arrive: never over the timeout
        engine.feed(1, frame[:10])
        engine.advance(900)
        engine.feed(1, frame[10:])
        [answer] = client.responses()
        assert isinstance(answer.body, MetadataResponse)
        engine.advance(900)  # and time between frames does not count
        frame = client.conn.send(MetadataRequest(topics=[]), 12)
    assert 1 not in engine.closed


def pump(engine: Engine, client: ClientConnection) -> None:
    """Shuttle bytes between a client and engine connection 1 until both are quiet."""
    for _ in range(10):
        data = client.data_to_send()
        if data:
            engine.feed(1, data)
        reply = engine.take(1)
        if reply:
            client.receive_data(reply)
        while client.next_event() is not NEED_DATA:
            pass
        if not data and not reply:
            return


def test_a_failed_authentication_is_answered_and_closed_after_the_delay() -> None:
    engine = Engine(config(sasl_listeners=ALICE))  # Kafka's delay: 100 ms
    engine.open(1)
    client = ClientConnection(ClientConfig(), sasl=PlainClient("alice", "wrong"))
    pump(engine, client)  # ApiVersions and SaslHandshake are answered; SaslAuthenticate is held
    assert 1 in engine.paused and 1 not in engine.closed
    engine.advance(99)
    pump(engine, client)
    assert 1 not in engine.closed
    engine.advance(1)
    assert 1 in engine.closed
    with pytest.raises(AuthenticationError):
        pump(engine, client)


def test_without_a_delay_a_failed_authentication_closes_at_once() -> None:
    engine = Engine(config(sasl_listeners=ALICE, failed_authentication_delay_ms=0))
    engine.open(1)
    client = ClientConnection(ClientConfig(), sasl=PlainClient("alice", "wrong"))
    with pytest.raises(AuthenticationError):
        pump(engine, client)
    assert 1 in engine.closed


def test_a_session_that_ended_without_reauthentication_is_closed_at_its_next_request() -> None:
    engine = Engine(config(sasl_listeners=ALICE, connections_max_reauth_ms=1000))
    engine.open(1)
    client = ClientConnection(ClientConfig(), sasl=PlainClient("alice", "right"), now_ms=engine.now_ms)
    pump(engine, client)
    assert client.state is ClientState.READY and client.next_deadline_ms() is None  # cannot re-authenticate
    engine.advance(5_000)
    assert 1 not in engine.closed  # as Kafka's: no timer, the next request finds the session over
    engine.feed(1, client.send(MetadataRequest(topics=[]), now_ms=engine.now_ms))
    assert 1 in engine.closed and engine.take(1) == b""


def test_a_client_that_reauthenticates_in_time_keeps_its_connection() -> None:
    # (Kafka starts at most one re-authentication a second: sessions of 2 s renew every 1.8 s.)
    engine = Engine(config(sasl_listeners=ALICE, connections_max_reauth_ms=2000))
    engine.open(1)
    client = ClientConnection(
        ClientConfig(), sasl=lambda: PlainClient("alice", "right"), now_ms=engine.now_ms
    )
    pump(engine, client)
    for _ in range(3):  # three sessions in a row, each renewed at 90% of its lifetime
        deadline = client.next_deadline_ms()
        assert deadline is not None
        engine.advance(deadline - engine.now_ms)
        client.handle_timer(engine.now_ms)
        assert client.state is ClientState.REAUTHENTICATING
        pump(engine, client)
        assert client.state.name == "READY" and 1 not in engine.closed  # (mypy keeps the narrowing above)
    engine.feed(1, client.send(MetadataRequest(topics=[]), now_ms=engine.now_ms))
    client.receive_data(engine.take(1))
    assert isinstance(client.next_event(), Response)


# -- one request at a time, and the request queue ------------------------------------------------


def test_a_request_pipelined_behind_a_long_poll_is_handled_after_it() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "m")
    pipelined = client.conn.send(long_poll("m", max_wait_ms=500), 12) + client.conn.send(
        produce_request("m", b"behind", engine.now_ms), 9
    )
    engine.feed(1, pipelined)
    assert client.responses() == [] and 1 in engine.paused
    replica = engine.broker.state.replica("m", 0)
    assert replica is not None and replica.log_end_offset == 0  # the produce is not even decoded
    engine.advance(500)
    fetched, produced = client.responses()
    assert isinstance(fetched.body, FetchResponse) and records_of(fetched.body) == []
    assert isinstance(produced.body, ProduceResponse)
    assert produced.body.responses[0].partition_responses[0].base_offset == 0
    assert 1 not in engine.paused
    pauses = [e for e in engine.log if isinstance(e, PauseReading | ResumeReading)]
    assert pauses == [PauseReading(1), ResumeReading(1)]


def test_pipelined_requests_answered_at_once_are_all_handled_in_one_call() -> None:
    """Answers wait for the end of the call (and for its writes), yet a request answered in the
    call does not mute the connection: only a held one does."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "p")
    engine.feed(
        1,
        b"".join(
            client.conn.send(produce_request("p", f"v{i}".encode(), engine.now_ms), 9) for i in range(5)
        ),
    )
    answers = client.responses()
    assert [a.body.responses[0].partition_responses[0].base_offset for a in answers] == list(range(5))  # type: ignore[attr-defined]
    assert not [e for e in engine.log if isinstance(e, PauseReading | ResumeReading)]


def test_held_requests_beyond_queued_max_requests_stop_decoding() -> None:
    engine = Engine(config(queued_max_requests=2))
    first, second, third = Client(engine, 1), Client(engine, 2), Client(engine, 3)
    create(first, "q")
    first.send(long_poll("q", max_wait_ms=1000), 12)
    second.send(long_poll("q", max_wait_ms=5000), 12)
    third.send(MetadataRequest(topics=[]))
    assert third.responses() == [] and engine.paused == {1, 2, 3}
    engine.advance(1000)  # the first long poll is answered: there is room again
    assert len(first.responses()) == 1
    [metadata] = third.responses()
    assert isinstance(metadata.body, MetadataResponse) and engine.paused == {2}
    # A connection that goes away frees its place in the queue too.
    first.send(long_poll("q", max_wait_ms=5000), 12)
    third.send(MetadataRequest(topics=[]))
    assert third.responses() == []
    engine._apply(engine.broker.connection_closed(2, engine.now_ms))
    assert len(third.responses()) == 1
