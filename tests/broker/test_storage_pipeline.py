"""The driver contract with writes in flight: the engine takes input while its batches are being
applied, and what it builds waits for the writes it depends on (``broker/storage_pipeline.py``).

``Engine(lag=N)`` keeps up to N batches unapplied, as the asyncio driver's worker thread does
while the loop goes on."""

from __future__ import annotations

import errno
import itertools
import random

import pytest

from kafka_wire.broker import Broker, BrokerConfig
from kafka_wire.broker.driver_contract import DRIVER_TRANSITIONS, DriverInput, DriverState
from kafka_wire.broker.effects import Append, Delete, MakeDir, StopBroker, WriteProgress
from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.broker.storage_pipeline import JOB_BATCHES_IN_FLIGHT, changes_metadata
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceResponse,
)
from kafka_wire.protocol import Response
from kafka_wire.protocol.machine import step
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, records_of
from tests.broker.test_engine_connections import produce_request


def create_request(name: str, partitions: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
        ],
        timeout_ms=1000,
    )


def metadata_request(topic: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)


def fetch_request(topic: str, offset: int) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequestTopic(
                topic=topic,
                partitions=[
                    FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def list_offsets_request(topic: str) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        topics=[ListOffsetsRequestTopic(name=topic, partitions=[ListOffsetsRequestPartition(timestamp=-1)])],
    )


def test_other_connections_are_served_while_writes_are_in_flight() -> None:
    engine = Engine(lag=8)
    producer, reader, prober = Client(engine, 1), Client(engine, 2), Client(engine, 3)
    create(producer, "t")
    producer.send(produce_request("t", b"one", engine.now_ms), 9)
    producer.send(produce_request("t", b"two", engine.now_ms), 9)
    # One request at a time: the second is not read while the first one's answer waits.
    assert engine.broker.awaiting_storage and len(engine.in_flight) == 1 and not producer.responses()
    assert 1 in engine.paused
    # Metadata is made from the metadata alone: answered at once.
    prober.send(metadata_request("t"), 9)
    (answer,) = prober.responses()
    assert isinstance(answer.body, MetadataResponse) and answer.body.topics[0].error_code == ErrorCode.NONE
    # What shows the log waits for the write: the offsets, the records.
    reader.send(list_offsets_request("t"), 5)
    reader_fetch = Client(engine, 4)
    reader_fetch.send(fetch_request("t", 0), 12)
    assert not reader.responses() and not reader_fetch.responses()
    # The records in flight were not read from storage, which does not hold them yet.
    log = engine.broker.state.partitions["t", 0].log
    assert engine.storage.size(log.segments[0].log.path) == 0 and log.memory_held_bytes() > 0
    engine.apply_oldest()
    (offsets,) = reader.responses()
    assert isinstance(offsets.body, ListOffsetsResponse) and offsets.body.topics[0].partitions[0].offset == 1
    (fetched,) = reader_fetch.responses()
    assert isinstance(fetched.body, FetchResponse) and records_of(fetched.body) == [(None, b"one")]
    # The second produce was read once the first was answered; it is now in flight.
    (first,) = producer.responses()
    assert isinstance(first.body, ProduceResponse) and len(engine.in_flight) == 1
    engine.drain()
    (second,) = producer.responses()
    assert isinstance(second.body, ProduceResponse)
    assert second.body.responses[0].partition_responses[0].base_offset == 1
    assert log.memory_held_bytes() == 0 and not engine.broker.awaiting_storage
    with pytest.raises(LocalProtocolError):
        engine.broker.storage_applied(engine.now_ms)


def test_answers_on_one_connection_keep_their_order() -> None:
    """A Metadata pipelined behind a produce on the same connection waits for the produce's write."""
    engine = Engine(lag=8)
    client = Client(engine, 1)
    create(client, "t")
    engine.feed(
        1,
        client.conn.send(produce_request("t", b"v", engine.now_ms), 9)
        + client.conn.send(metadata_request("t"), 9),
    )
    assert not client.responses()
    engine.drain()
    assert [type(r.body) for r in client.responses()] == [ProduceResponse, MetadataResponse]


def test_a_failed_batch_fails_every_answer_still_waiting() -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage, lag=8)
    first, second, prober = Client(engine, 1), Client(engine, 2), Client(engine, 3)
    create(first, "t")
    storage.fail_writes_with = errno.EIO
    first.send(produce_request("t", b"a", engine.now_ms), 9)
    second.send(produce_request("t", b"b", engine.now_ms), 9)
    prober.send(metadata_request("t"), 9)
    assert len(prober.responses()) == 1  # it depended on no write in flight
    engine.apply_oldest()
    for client in (first, second):
        (reply,) = client.responses()
        assert isinstance(reply.body, ProduceResponse)
        assert reply.body.responses[0].partition_responses[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert any(isinstance(e, StopBroker) for e in engine.log) and {1, 2, 3} <= engine.closed
    assert engine.broker.stopped is not None and not engine.in_flight


def test_a_fetch_waits_only_for_the_writes_of_its_partitions() -> None:
    """A Fetch answer shows the metadata and its partitions only: another partition's write in
    flight does not hold it (by name, and from v13 by topic id); its own partition's does."""
    engine = Engine(lag=8)
    producer, reader, by_id, other = (
        Client(engine, 1),
        Client(engine, 2),
        Client(engine, 3),
        Client(engine, 4),
    )
    create(producer, "a")
    create(producer, "b")
    producer.send(produce_request("a", b"stored", engine.now_ms), 9)
    engine.drain()
    producer.responses()
    producer.send(produce_request("b", b"in flight", engine.now_ms), 9)
    assert len(engine.in_flight) == 1
    reader.send(fetch_request("a", 0), 12)
    (fetched,) = reader.responses()
    assert isinstance(fetched.body, FetchResponse) and records_of(fetched.body) == [(None, b"stored")]
    topic = engine.broker.state.topic_named("a")
    assert topic is not None
    request = fetch_request("", 0)
    request.topics[0].topic_id = topic.topic_id
    by_id.send(request, 16)
    (fetched,) = by_id.responses()
    assert isinstance(fetched.body, FetchResponse) and records_of(fetched.body) == [(None, b"stored")]
    other.send(fetch_request("b", 0), 12)
    assert not other.responses() and len(engine.in_flight) == 1
    engine.drain()
    (fetched,) = other.responses()
    assert isinstance(fetched.body, FetchResponse) and records_of(fetched.body) == [(None, b"in flight")]


def test_a_metadata_answer_waits_for_the_metadata_write() -> None:
    """A topic is shown once the metadata naming it is written, not before."""
    engine = Engine(lag=8)
    admin, prober = Client(engine, 1), Client(engine, 2)
    admin.send(create_request("n", 1))
    prober.send(metadata_request("n"), 9)
    assert not prober.responses()
    engine.apply_oldest()
    (answer,) = prober.responses()
    assert isinstance(answer.body, MetadataResponse) and answer.body.topics[0].error_code == ErrorCode.NONE
    (created,) = admin.responses()
    assert (
        isinstance(created.body, CreateTopicsResponse) and created.body.topics[0].error_code == ErrorCode.NONE
    )


def test_a_job_waits_for_its_writes_and_the_others_are_served_meanwhile() -> None:
    engine = Engine(lag=100)
    admin, prober = Client(engine, 1), Client(engine, 2)
    admin.send(create_request("big", 64))
    broker = engine.broker
    engine.apply_oldest()  # the first slice's batch: the topic is in the metadata file
    for _ in range(3):  # slices go on while few batches are in flight, then wait for the writes
        if (deadline := broker.next_deadline_ms()) is not None and deadline <= engine.now_ms:
            engine.tick()
    assert len(engine.in_flight) == JOB_BATCHES_IN_FLIGHT + 1
    deadline = broker.next_deadline_ms()
    assert deadline is None or deadline > engine.now_ms  # the job does not spin while it waits
    prober.send(metadata_request("big"), 9)
    (answer,) = prober.responses()  # served between the slices, with the topic registered
    assert isinstance(answer.body, MetadataResponse) and answer.body.topics[0].error_code == ErrorCode.NONE
    engine.apply_oldest()
    assert broker.next_deadline_ms() == engine.now_ms  # a report lets the job go on
    while not (replies := admin.responses()):
        engine.drain()
        engine.tick()
    assert isinstance(replies[0].body, CreateTopicsResponse)
    assert replies[0].body.topics[0].error_code == ErrorCode.NONE
    # The controller answers once the records are committed; the partitions open in slices on.
    for _ in range(1000):
        if len(broker.state.partitions) == 64:
            break
        engine.drain()
        engine.tick()
    assert len(broker.state.partitions) == 64


def test_no_input_is_taken_before_the_start_writes_are_applied() -> None:
    storage = MemoryStorage()
    broker = Broker(BrokerConfig(), storage, rng=random.Random(1))
    effects = broker.start(0)
    assert effects and broker.awaiting_storage
    with pytest.raises(LocalProtocolError):
        broker.connection_opened(1, 0)
    storage.apply(effects)
    broker.storage_applied(0)
    assert broker.connection_opened(1, 0) == []


@pytest.mark.parametrize("lag", [1, 3])
def test_writes_in_flight_end_in_the_same_files(lag: int) -> None:
    """However far the writes lag, the same requests leave the same files and answers."""
    outcomes = []
    for engine in (Engine(), Engine(lag=lag)):
        producers = [Client(engine, 1), Client(engine, 2)]
        prober = Client(engine, 3)
        create(producers[0], "t", 2)
        sent: list[list[bytes]] = [[], []]
        for i in range(40):
            for index, producer in enumerate(producers):
                value = bytes([i]) * (i * 700 + index)
                producer.send(produce_request("t", value, engine.now_ms, index), 9)
                sent[index].append(value)
            prober.send(metadata_request("t"), 9)
        for index, producer in enumerate(producers):
            answers: list[Response] = []
            while len(answers) < 40:
                engine.drain()
                answers += producer.responses()
            offsets = [a.body.responses[0].partition_responses[0].base_offset for a in answers]  # type: ignore[attr-defined]
            assert offsets == list(range(40))
            received: list[bytes | None] = []
            while len(received) < 40:
                received += [v for _, v in records_of(fetch(producer, "t", len(received), partition=index))]
            assert received == sent[index]
        assert len(prober.responses()) == 40
        engine.drain()
        outcomes.append({path: bytes(data) for path, data in engine.storage.files.items()})
    assert outcomes[0] == outcomes[1]


def test_a_log_keeps_the_bytes_in_flight_until_their_batch_is_applied() -> None:
    storage = MemoryStorage()
    progress = WriteProgress()
    log = PartitionLog.open("t-0", LogConfig(), storage, 0, progress=progress)
    progress.hand_out()
    storage.apply(log.take_effects())
    progress.apply_one()
    data = build_batch([NewRecord(b"k", b"v" * 100)])
    assert log.append(data, 0).error_code == ErrorCode.NONE
    batch = log.take_effects()
    progress.hand_out()
    assert any(isinstance(e, Append) and e.data for e in batch)
    # Taken, not applied: the bytes are read from memory (storage holds none of them yet).
    assert log.memory_held_bytes() >= len(data) and storage.size("t-0/00000000000000000000.log") == 0
    stored = log.read_bytes(log.read(0, 1 << 20))
    assert len(stored) == len(data) and stored[61:] == data[61:]  # the leader epoch is stamped in
    storage.apply(batch)
    progress.apply_one()
    assert log.memory_held_bytes() == 0
    assert log.read_bytes(log.read(0, 1 << 20)) == stored


def test_what_changes_the_metadata() -> None:
    assert changes_metadata([Append("kafka-wire-metadata.json.tmp", b"")])
    assert changes_metadata([Append("__cluster_metadata-0/00000000000000000000.log", b"")])
    assert not changes_metadata([Append("orders-0/00000000000000000000.log", b""), MakeDir("orders-12")])
    assert not changes_metadata([Delete("orders-12")])


def test_the_driver_contract_table() -> None:
    """Every pair the table lacks is refused and leaves the state as it was."""
    for state, move in itertools.product(DriverState, DriverInput):
        target = DRIVER_TRANSITIONS.get((state, move))
        if target is None:
            with pytest.raises(LocalProtocolError):
                step(DRIVER_TRANSITIONS, state, move, machine="driver")
        else:
            assert step(DRIVER_TRANSITIONS, state, move, machine="driver") is target
    reachable = {DriverState.NEW}
    for _ in DriverState:
        reachable |= {t for (s, _), t in DRIVER_TRANSITIONS.items() if s in reachable}
    assert reachable == set(DriverState)
