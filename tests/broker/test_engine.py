"""The broker engine without sockets: scripted requests, a virtual clock, in-memory storage."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.effects import CloseConnection, FileRegion, Send
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.records import NewRecord, build_batch, read_records
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def create(client: Client, name: str, partitions: int = 1, **configs: str) -> CreateTopicsResponse:
    """Create a topic; back once its partitions are open (the replica manager opens them in
    slices after the controller's answer)."""
    reply = client.request(
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    configs=[
                        CreateTopicsRequestCreatableTopicConfig(name=k.replace("_", "."), value=v)
                        for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=1000,
        )
    )
    assert isinstance(reply.body, CreateTopicsResponse)
    client.engine.advance(0)
    return reply.body


def produce(
    client: Client, topic: str, batch: bytes, partition: int = 0, acks: int = -1
) -> ProduceResponse | None:
    request = ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=topic,
                partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
            )
        ],
    )
    if acks == 0:
        client.send(request, 9)
        return None
    reply = client.request(request, 9)
    assert isinstance(reply.body, ProduceResponse)
    return reply.body


def fetch(
    client: Client, topic: str, offset: int, *, partition: int = 0, version: int = 12, **kw: int
) -> FetchResponse:
    reply = client.request(
        FetchRequest(
            replica_id=-1,
            max_wait_ms=kw.get("max_wait_ms", 0),
            min_bytes=kw.get("min_bytes", 1),
            max_bytes=kw.get("max_bytes", 1 << 20),
            session_epoch=-1,
            topics=[
                FetchRequestTopic(
                    topic=topic,
                    partitions=[
                        FetchRequestPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        ),
        version,
    )
    assert isinstance(reply.body, FetchResponse)
    return reply.body


def records_of(response: FetchResponse) -> list[tuple[bytes | None, bytes | None]]:
    data = response.responses[0].partitions[0]
    return [(r.key, r.value) for r in read_records(data.records or b"")]


def test_produce_and_fetch_every_codec() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert create(client, "orders").topics[0].error_code == ErrorCode.NONE
    sent: list[tuple[bytes | None, bytes | None]] = []
    for codec in CODECS:
        records = [NewRecord(f"{codec}-{i}".encode(), bytes(range(i % 200)) * 3) for i in range(7)]
        response = produce(
            client, "orders", build_batch(records, compression=codec, default_timestamp=engine.now_ms)
        )
        assert response is not None
        partition = response.responses[0].partition_responses[0]
        assert (partition.error_code, partition.base_offset) == (ErrorCode.NONE, len(sent))
        sent += [(r.key, r.value) for r in records]
    received: list[tuple[bytes | None, bytes | None]] = []
    while len(received) < len(sent):
        received += records_of(fetch(client, "orders", len(received)))
    assert received == sent


def test_metadata_auto_creates_and_names_topics_by_id() -> None:
    client = Client(Engine(), 1)
    asking = MetadataRequest(topics=[MetadataRequestTopic(name="auto")], allow_auto_topic_creation=True)
    first = client.request(asking)
    assert isinstance(first.body, MetadataResponse)  # asked of the controller: Kafka's first answer
    assert first.body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    reply = client.request(asking)
    assert isinstance(reply.body, MetadataResponse)
    [topic] = reply.body.topics
    assert (topic.error_code, topic.name, len(topic.partitions)) == (ErrorCode.NONE, "auto", 1)
    assert topic.topic_id != uuid.UUID(int=0)
    by_id = client.request(
        MetadataRequest(topics=[MetadataRequestTopic(name=None, topic_id=topic.topic_id)]), 12
    )
    assert isinstance(by_id.body, MetadataResponse) and by_id.body.topics[0].name == "auto"
    refused = client.request(
        MetadataRequest(topics=[MetadataRequestTopic(name="nope")], allow_auto_topic_creation=False)
    )
    assert isinstance(refused.body, MetadataResponse)
    assert refused.body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="bad name!")]))
    assert (
        isinstance(bad.body, MetadataResponse)
        and bad.body.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    )


def scripted_run(seed: int) -> list[object]:
    engine = Engine(seed=seed)
    client = Client(engine, 1)
    create(client, "t", 2)
    produce(client, "t", build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms))
    engine.advance(1000)
    fetch(client, "t", 0)
    client.request(MetadataRequest(topics=None))
    return list(engine.log)


def test_same_inputs_give_byte_identical_effects() -> None:
    first, second = scripted_run(3), scripted_run(3)
    assert first == second
    assert any(isinstance(e, Send) for e in first)


def test_idempotent_producer_dedupes_and_checks_sequences() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "idem")
    init = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert isinstance(init.body, InitProducerIdResponse) and init.body.error_code == ErrorCode.NONE
    pid, epoch = init.body.producer_id, init.body.producer_epoch

    def batch(seq: int, n: int = 2, producer_epoch: int = epoch) -> bytes:
        return build_batch(
            [NewRecord(b"k", f"{seq}-{i}".encode()) for i in range(n)],
            producer_id=pid,
            producer_epoch=producer_epoch,
            base_sequence=seq,
            default_timestamp=engine.now_ms,
        )

    def result(data: bytes) -> tuple[int, int]:
        response = produce(client, "idem", data)
        assert response is not None
        p = response.responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    assert result(batch(0)) == (ErrorCode.NONE, 0)
    assert result(batch(2)) == (ErrorCode.NONE, 2)
    assert result(batch(0)) == (ErrorCode.NONE, 0)  # a retry of a retained batch: original offsets
    assert result(batch(5))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert result(batch(4, producer_epoch=epoch + 1))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert result(batch(0, producer_epoch=epoch + 1)) == (ErrorCode.NONE, 4)
    assert result(batch(4))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert len(records_of(fetch(client, "idem", 0))) == 6
    # A restarted broker rebuilds producer state from its log: the retry is still recognised.
    restarted = Engine(storage=engine.storage)
    again = Client(restarted, 1)
    response = produce(again, "idem", batch(0, producer_epoch=epoch + 1))
    assert response is not None and response.responses[0].partition_responses[0].base_offset == 4


def test_fetch_waits_for_min_bytes_and_wakes_on_produce() -> None:
    engine = Engine()
    consumer, producer = Client(engine, 1), Client(engine, 2)
    create(consumer, "waits")
    consumer.send(
        FetchRequest(
            replica_id=-1,
            max_wait_ms=5000,
            min_bytes=1,
            max_bytes=1 << 20,
            session_epoch=-1,
            topics=[
                FetchRequestTopic(
                    topic="waits",
                    partitions=[
                        FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
        12,
    )
    assert consumer.responses() == []  # held
    produce(producer, "waits", build_batch([NewRecord(None, b"wake")], default_timestamp=engine.now_ms))
    [woken] = consumer.responses()
    assert isinstance(woken.body, FetchResponse) and records_of(woken.body) == [(None, b"wake")]
    # With nothing new the request is answered empty when max_wait_ms passes.
    consumer.send(
        FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=1 << 20,
            session_epoch=-1,
            topics=[
                FetchRequestTopic(
                    topic="waits",
                    partitions=[
                        FetchRequestPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
        12,
    )
    engine.advance(499)
    assert consumer.responses() == []
    engine.advance(1)
    [late] = consumer.responses()
    assert isinstance(late.body, FetchResponse) and records_of(late.body) == []


def test_a_held_fetch_reads_again_only_when_its_partition_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    original = PartitionReplica.read

    def counting(self: PartitionReplica, fetch_offset: int, max_bytes: int, **kw: Any) -> Any:
        reads.append(fetch_offset)
        return original(self, fetch_offset, max_bytes, **kw)

    monkeypatch.setattr(PartitionReplica, "read", counting)
    engine = Engine()
    consumer, other = Client(engine, 1), Client(engine, 2)
    create(consumer, "quiet")
    create(consumer, "busy")
    consumer.send(
        FetchRequest(
            replica_id=-1,
            max_wait_ms=5000,
            min_bytes=1,
            max_bytes=1 << 20,
            session_epoch=-1,
            topics=[
                FetchRequestTopic(
                    topic="quiet",
                    partitions=[
                        FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
        12,
    )
    assert consumer.responses() == [] and len(reads) == 1  # held
    engine.advance(100)  # a tick, and a produce to another partition: nothing to read again
    produce(other, "busy", build_batch([NewRecord(None, b"elsewhere")], default_timestamp=engine.now_ms))
    assert consumer.responses() == [] and len(reads) == 1
    produce(other, "quiet", build_batch([NewRecord(None, b"here")], default_timestamp=engine.now_ms))
    [woken] = consumer.responses()
    assert isinstance(woken.body, FetchResponse) and records_of(woken.body) == [(None, b"here")]
    assert len(reads) == 2


def test_fetch_sessions_answer_incrementally() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "s", 2)
    produce(client, "s", build_batch([NewRecord(None, b"a")], default_timestamp=engine.now_ms), partition=0)

    def request(session_id: int, epoch: int, partitions: list[tuple[int, int]]) -> FetchResponse:
        reply = client.request(
            FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=0,
                max_bytes=1 << 20,
                session_id=session_id,
                session_epoch=epoch,
                topics=[
                    FetchRequestTopic(
                        topic="s",
                        partitions=[
                            FetchRequestPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                            for p, o in partitions
                        ],
                    )
                ]
                if partitions
                else [],
            ),
            12,
        )
        assert isinstance(reply.body, FetchResponse)
        return reply.body

    full = request(0, 0, [(0, 0), (1, 0)])
    assert full.session_id != 0 and [p.partition_index for p in full.responses[0].partitions] == [0, 1]
    # The client moves partition 0 past the record it got; nothing else changed: nothing listed.
    assert request(full.session_id, 1, [(0, 1)]).responses == []
    produce(client, "s", build_batch([NewRecord(None, b"b")], default_timestamp=engine.now_ms), partition=1)
    changed = request(full.session_id, 2, [])
    assert [p.partition_index for p in changed.responses[0].partitions] == [1]
    assert records_of(changed) == [(None, b"b")]
    assert request(full.session_id, 7, []).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert request(12345, 1, []).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_list_offsets_delete_records_and_partitions() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "lo")
    for i in range(3):
        produce(client, "lo", build_batch([NewRecord(None, b"x")] * 2, default_timestamp=1000 * (i + 1)))

    def offsets(timestamp: int) -> tuple[int, int]:
        reply = client.request(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsRequestTopic(
                        name="lo", partitions=[ListOffsetsRequestPartition(timestamp=timestamp)]
                    )
                ],
            )
        )
        assert isinstance(reply.body, ListOffsetsResponse)
        p = reply.body.topics[0].partitions[0]
        return p.offset, p.timestamp

    assert offsets(-2)[0] == 0 and offsets(-1)[0] == 6
    assert offsets(2000) == (2, 2000)
    assert offsets(-3) == (4, 3000)  # the first record carrying the largest timestamp
    assert offsets(9999) == (-1, -1)
    deleted = client.request(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequestTopic(
                    name="lo", partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=4)]
                )
            ],
            timeout_ms=100,
        )
    )
    assert isinstance(deleted.body, DeleteRecordsResponse)
    assert deleted.body.topics[0].partitions[0].low_watermark == 4
    assert offsets(-2)[0] == 4
    assert fetch(client, "lo", 0).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    more = client.request(
        CreatePartitionsRequest(topics=[CreatePartitionsRequestTopic(name="lo", count=3)], timeout_ms=100)
    )
    assert more.body.results[0].error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    meta = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="lo")]))
    assert isinstance(meta.body, MetadataResponse) and len(meta.body.topics[0].partitions) == 3


def test_topic_configs_and_deletion() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert create(client, "c", cleanup_policy="compact").topics[0].error_code == ErrorCode.NONE
    bad = create(client, "d", segment_bytes="many")
    assert bad.topics[0].error_code == ErrorCode.INVALID_CONFIG
    described = client.request(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(resource_type=2, resource_name="c", configuration_keys=None)
            ],
            include_synonyms=True,
        )
    )
    assert isinstance(described.body, DescribeConfigsResponse)
    values = {c.name: (c.value, c.config_source) for c in described.body.results[0].configs}
    assert values["cleanup.policy"] == ("compact", 1) and values["segment.bytes"][1] == 5
    altered = client.request(
        IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=2,
                    resource_name="c",
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name="cleanup.policy", config_operation=2, value="delete"
                        )
                    ],
                )
            ]
        )
    )
    assert altered.body.responses[0].error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    again = client.request(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(
                    resource_type=2, resource_name="c", configuration_keys=["cleanup.policy"]
                )
            ]
        )
    )
    assert (
        isinstance(again.body, DescribeConfigsResponse)
        and again.body.results[0].configs[0].value == "compact,delete"
    )
    gone = client.request(DeleteTopicsRequest(topic_names=["c", "missing"], timeout_ms=100), 5)
    assert isinstance(gone.body, DeleteTopicsResponse)
    assert [r.error_code for r in gone.body.responses] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert not any(name.startswith("c-") for name in engine.storage.list_dir(""))


def test_restart_serves_everything_written() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "keep", 2)
    for i in range(20):
        produce(
            client,
            "keep",
            build_batch([NewRecord(str(i).encode(), b"v" * i)], default_timestamp=engine.now_ms),
            partition=i % 2,
        )
    restarted = Engine(storage=engine.storage)
    again = Client(restarted, 1)
    assert [k for k, _ in records_of(fetch(again, "keep", 0, partition=0))] == [
        str(i).encode() for i in range(0, 20, 2)
    ]
    meta = again.request(MetadataRequest(topics=None))
    assert isinstance(meta.body, MetadataResponse) and [t.name for t in meta.body.topics] == ["keep"]


def test_a_torn_segment_tail_is_truncated_on_restart() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "torn")
    for i in range(5):
        produce(
            client, "torn", build_batch([NewRecord(None, str(i).encode())], default_timestamp=engine.now_ms)
        )
    storage = engine.storage
    segment = "torn-0/00000000000000000000.log"
    whole = bytes(storage.files[segment])
    storage.files[segment] = bytearray(
        whole + whole[: len(whole) // 7 + 3]
    )  # half a batch, as a kill leaves it
    restarted = Engine(storage=storage)
    again = Client(restarted, 1)
    assert [v for _, v in records_of(fetch(again, "torn", 0))] == [str(i).encode() for i in range(5)]
    assert bytes(storage.files[segment]) == whole
    response = produce(
        again, "torn", build_batch([NewRecord(None, b"5")], default_timestamp=restarted.now_ms)
    )
    assert response is not None and response.responses[0].partition_responses[0].base_offset == 5


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x00\x00\x05hello",
        struct.pack(">i", 200 * 1024 * 1024),
        struct.pack(">i", -7),
        b"\x00\x00\x00\x02\x00",
    ],
    ids=["not-kafka", "oversized", "negative-size", "short-header"],
)
def test_bad_input_closes_that_connection_only(garbage: bytes) -> None:
    engine = Engine()
    good = Client(engine, 1)
    engine.open(2)
    engine.feed(2, garbage)
    if garbage == b"\x00\x00\x00\x02\x00":  # incomplete: Kafka waits for the rest
        assert 2 not in engine.closed
        engine._apply(engine.broker.connection_closed(2, engine.now_ms))
    else:
        assert 2 in engine.closed
    reply = good.request(MetadataRequest(topics=None))
    assert isinstance(reply.body, MetadataResponse)


def test_unsupported_versions_get_kafkas_answers() -> None:
    engine = Engine()
    engine.open(1)
    frame = encode_request(RequestHeader(correlation_id=9, client_id="old"), ApiVersionsRequest(), 3)
    future = frame[:4] + struct.pack(">hhi", ApiKey.API_VERSIONS, 99, 9) + frame[12:]
    engine.feed(1, future)
    header, body = decode_response(engine.take(1), ApiKey.API_VERSIONS, 0)
    assert header.correlation_id == 9 and isinstance(body, ApiVersionsResponse)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION and [k.api_key for k in body.api_keys] == [
        ApiKey.API_VERSIONS
    ]
    metadata_v99 = struct.pack(">ihhih", 10, ApiKey.METADATA, 99, 10, -1)
    engine.feed(1, metadata_v99)
    assert 1 in engine.closed
    assert not any(isinstance(e, CloseConnection) and e.conn_id != 1 for e in engine.log)


def test_unknown_topics_get_error_codes() -> None:
    client = Client(Engine(), 1)
    response = produce(client, "ghost", build_batch([NewRecord(None, b"x")]))
    assert response is not None
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    fetched = fetch(client, "ghost", 0)
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_memory_storage_files_are_kafkas_layout() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "layout", 1)
    produce(client, "layout", build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms))
    names = engine.storage.list_dir("layout-0")
    assert "00000000000000000000.log" in names and "partition.metadata" in names
    assert "meta.properties" in engine.storage.list_dir("")
    assert isinstance(engine.storage, MemoryStorage)


def test_fetch_sends_stored_batches_as_file_regions() -> None:
    """Zero-copy: stored batches leave as file regions (sendfile), and the client sees exactly the
    bytes a copying broker sends."""
    answers = []
    for zero_copy in (True, False):
        engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, zero_copy_fetch=zero_copy))
        client = Client(engine, 1)
        create(client, "zc")
        for i in range(3):
            produce(
                client,
                "zc",
                build_batch([NewRecord(str(i).encode(), b"x" * 100)], default_timestamp=engine.now_ms),
            )
        before = len(engine.log)
        answers.append(records_of(fetch(client, "zc", 0)))
        sends = [e for e in engine.log[before:] if isinstance(e, Send)]
        regions = [p for e in sends for p in e.parts if isinstance(p, FileRegion)]
        assert bool(regions) == zero_copy
        if zero_copy:
            assert [r.path for r in regions] == ["zc-0/00000000000000000000.log"] and regions[0].position == 0
    assert answers[0] == answers[1] and len(answers[0]) == 3


def test_a_replica_that_does_not_lead_refuses_produce_and_fetch() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "led")
    replica = engine.broker.state.replica("led", 0)
    assert replica is not None and replica.is_leader
    replica.leadership.become_follower(1, leader_id=2)
    response = produce(client, "led", build_batch([NewRecord(None, b"x")]))
    assert response is not None
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(client, "led", 0).responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
