"""A write that fails is never acknowledged, and the broker stops with its log directory offline.

The storage is :class:`MemoryStorage` with a real file system's faults: a small disk (a write that
does not fit writes what fits, then ENOSPC), a read-only file system (EROFS), a process out of file
descriptors (EMFILE). After the failure the broker is started again on what the storage holds.
"""

from __future__ import annotations

import errno

import pytest

from kafka_wire.broker.effects import CloseConnection, StopBroker
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.protocol import Response
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce, records_of
from tests.broker.test_engine_groups import find_coordinator


def idempotent_batch(engine: Engine, pid: int, seq: int, count: int) -> bytes:
    return build_batch(
        [NewRecord(f"{seq + i}".encode(), b"v" * 200) for i in range(count)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        default_timestamp=engine.now_ms,
    )


def produce_nowait(client: Client, topic: str, batch: bytes) -> list[Response]:
    """Send one acks=all produce and return what came back (nothing when the broker closed)."""
    client.send(
        ProduceRequest(
            acks=-1,
            timeout_ms=1000,
            topic_data=[
                ProduceRequestTopicProduceData(
                    name=topic, partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
                )
            ],
        ),
        9,
    )
    return client.responses()


def init_producer(client: Client) -> int:
    reply = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert isinstance(reply.body, InitProducerIdResponse) and reply.body.error_code == ErrorCode.NONE
    return reply.body.producer_id


def stored_keys(storage: MemoryStorage, topic: str) -> list[bytes]:
    """Start a new broker on ``storage`` and read the whole partition."""
    storage.capacity_bytes = None
    storage.read_only = False
    storage.fail_writes_with = None
    reader = Client(Engine(storage=storage), 99)
    keys: list[bytes] = []
    offset = 0
    while True:
        records = records_of(fetch(reader, topic, offset))
        if not records:
            return keys
        keys += [k for k, _ in records if k is not None]
        offset += len(records)


@pytest.mark.parametrize("fault", ["disk full", "read-only", "no file descriptors"])
def test_a_failed_write_is_never_acknowledged(fault: str) -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage)
    client = Client(engine, 1)
    create(client, "t")
    pid = init_producer(client)
    acked: list[bytes] = []
    seq = 0
    for _ in range(5):
        (ok,) = produce_nowait(client, "t", idempotent_batch(engine, pid, seq, 10))
        assert isinstance(ok.body, ProduceResponse)
        assert ok.body.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        acked += [f"{seq + i}".encode() for i in range(10)]
        seq += 10
    if fault == "disk full":
        storage.capacity_bytes = storage.used_bytes() + 3000  # room for one batch, not two
    elif fault == "read-only":
        storage.read_only = True
    else:
        storage.fail_writes_with = errno.EMFILE
    other = Client(engine, 2)
    answers: list[int] = []
    for _ in range(3):
        if 1 in engine.closed:
            break
        for response in produce_nowait(client, "t", idempotent_batch(engine, pid, seq, 10)):
            assert isinstance(response.body, ProduceResponse)
            code = response.body.responses[0].partition_responses[0].error_code
            answers.append(code)
            if code == ErrorCode.NONE:
                acked += [f"{seq + i}".encode() for i in range(10)]
                seq += 10
    assert answers[-1] == ErrorCode.KAFKA_STORAGE_ERROR, answers
    stop = [e for e in engine.log if isinstance(e, StopBroker)]
    assert len(stop) == 1 and "log directory failed" in stop[0].reason
    assert {1, 2} <= {e.conn_id for e in engine.log if isinstance(e, CloseConnection)}, (
        "every connection closed"
    )
    assert engine.broker.next_deadline_ms() is None
    assert engine.broker.receive_data(2, b"\x00", engine.now_ms) == [CloseConnection(2)]
    assert other.conn_id in engine.closed
    stored = stored_keys(storage, "t")
    assert stored[: len(acked)] == acked, "every acknowledged record is stored, in order"
    # The producer retries the batch it was refused: it is appended (not taken for a duplicate).
    again = Engine(storage=storage)
    retry = produce(Client(again, 1), "t", idempotent_batch(again, pid, seq, 10))
    assert retry is not None
    partition = retry.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.NONE and partition.base_offset == len(stored)
    assert stored_keys(storage, "t")[len(acked) :] == [f"{seq + i}".encode() for i in range(10)]


def commit(client: Client, offset: int) -> OffsetCommitResponse:
    reply = client.request(
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
                )
            ],
        ),
        8,
    )
    assert isinstance(reply.body, OffsetCommitResponse)
    return reply.body


def committed(client: Client) -> int:
    reply = client.request(
        OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]), 7
    )
    assert isinstance(reply.body, OffsetFetchResponse)
    return reply.body.topics[0].partitions[0].committed_offset


def test_a_commit_whose_write_fails_is_not_acknowledged() -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage)
    client = Client(engine, 1)
    create(client, "t")
    find_coordinator(client, "g")
    assert commit(client, 5).topics[0].partitions[0].error_code == ErrorCode.NONE
    storage.fail_writes_with = errno.EIO
    client.send(
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=9)]
                )
            ],
        ),
        8,
    )
    (answer,) = client.responses()
    assert isinstance(answer.body, OffsetCommitResponse)
    assert answer.body.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    storage.fail_writes_with = None
    again = Client(Engine(storage=storage), 1)
    find_coordinator(again, "g")
    assert committed(again) == 5


def test_a_topic_whose_write_fails_is_not_created() -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage)
    client = Client(engine, 1)
    storage.capacity_bytes = storage.used_bytes() + 50  # not the metadata batch, written first
    client.send(
        CreateTopicsRequest(
            topics=[CreateTopicsRequestCreatableTopic(name="lost", num_partitions=1, replication_factor=1)],
            timeout_ms=1000,
        )
    )
    (answer,) = client.responses()
    assert isinstance(answer.body, CreateTopicsResponse)
    assert answer.body.topics[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    storage.capacity_bytes = None
    restarted = Engine(storage=storage)
    assert restarted.broker.state.topic_named("lost") is None
    assert not any(n.startswith("lost-") for n in storage.list_dir(""))


def test_a_topic_whose_partition_write_fails_is_whole_after_a_restart() -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage)
    client = Client(engine, 1)
    client.send(
        CreateTopicsRequest(
            topics=[CreateTopicsRequestCreatableTopic(name="cut", num_partitions=20, replication_factor=1)],
            timeout_ms=1000,
        )
    )
    (answer,) = client.responses()  # committed: the partitions are opened in slices after it
    assert (
        isinstance(answer.body, CreateTopicsResponse) and answer.body.topics[0].error_code == ErrorCode.NONE
    )
    storage.fail_writes_with = errno.ENOSPC
    engine.advance(10)
    assert engine.broker.stopped is not None
    made = [i for i in range(20) if storage.size(f"cut-{i}/partition.metadata") is not None]
    assert 0 < len(made) < 20
    storage.fail_writes_with = None
    restarted = Engine(storage=storage)  # the metadata names 20 partitions: all are opened
    restarted.advance(10)
    topic = restarted.broker.state.topic_named("cut")
    assert topic is not None and all(restarted.broker.state.replica("cut", i) is not None for i in range(20))
