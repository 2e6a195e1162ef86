"""Limits on what one request may make the broker do: Kafka's 10,000 metadata records per admin
request, and decompression bounded by ``max.message.bytes``."""

from __future__ import annotations

import functools
import struct
import time
import tracemalloc
import zlib

import lz4.frame  # type: ignore[import-untyped]  # the lz4 package ships no type information
import pytest
import zstandard

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.broker.controller.topic_requests import EXCESSIVE_BATCH_MESSAGE
from kafka_wire.broker.effects import MakeDir
from kafka_wire.broker.internal_topics import CREATE_RETRY_BACKOFF_MS
from kafka_wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ErrorCode,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.records.codec_snappy import snappy_compress
from kafka_wire.records.constants import COMPRESSION_IDS, RECORD_BATCH_OVERHEAD
from kafka_wire.records.crc import crc32c
from kafka_wire.records.loops import varint_bytes
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce, records_of

INT32_MAX = 2**31 - 1


def topic(name: str, partitions: int, **configs: str) -> CreateTopicsRequestCreatableTopic:
    return CreateTopicsRequestCreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=1,
        configs=[
            CreateTopicsRequestCreatableTopicConfig(name=k.replace("_", "."), value=v)
            for k, v in configs.items()
        ],
    )


def create_topics(
    client: Client, *topics: CreateTopicsRequestCreatableTopic, validate_only: bool = False
) -> CreateTopicsResponse:
    reply = client.request(
        CreateTopicsRequest(topics=list(topics), timeout_ms=1000, validate_only=validate_only), 7
    )
    assert isinstance(reply.body, CreateTopicsResponse)
    return reply.body


def create_partitions(client: Client, **counts: int) -> CreatePartitionsResponse:
    request = CreatePartitionsRequest(
        topics=[CreatePartitionsRequestTopic(name=name, count=count) for name, count in counts.items()],
        timeout_ms=1000,
    )
    reply = client.request(request, 3)
    assert isinstance(reply.body, CreatePartitionsResponse)
    return reply.body


def partition_dirs(engine: Engine, name: str) -> list[str]:
    return [d for d in engine.storage.list_dir("") if d.rsplit("-", 1)[0] == name]


# -- records per admin request ---------------------------------------------------------------------


def test_a_create_topics_of_int32_max_partitions_is_refused_at_once() -> None:
    engine = Engine()
    client = Client(engine, 1)
    effects = len(engine.log)
    start = time.perf_counter()
    reply = create_topics(
        client, topic("huge", INT32_MAX), topic("small", 1), topic("small", 1), topic("bad name", 1)
    )
    assert time.perf_counter() - start < 0.5
    # Kafka 4.4: more than 10,000 partitions in all refuses every topic, a duplicate is answered once.
    too_many = "Excessively large number of partitions per request."
    assert [(t.name, t.error_code, t.error_message) for t in reply.topics] == [
        ("huge", ErrorCode.POLICY_VIOLATION, too_many),
        ("bad name", ErrorCode.POLICY_VIOLATION, too_many),
        ("small", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]
    assert engine.broker.state.metadata.topics == {}
    assert not any(isinstance(e, MakeDir) for e in engine.log[effects:])


def test_records_count_one_per_topic_config_and_partition() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, max_records_per_user_op=10))
    client = Client(engine, 1)
    # 1 + 1 config + 4 partitions, 1 + 3 partitions: 10 records, the limit.
    fits = create_topics(client, topic("a", 4, retention_ms="1000"), topic("b", 3))
    assert [t.error_code for t in fits.topics] == [ErrorCode.NONE, ErrorCode.NONE]
    # One more config is one record too many; topics that fail their own checks count nothing.
    over = create_topics(client, topic("c", 4, retention_ms="1000", segment_ms="1000"), topic("d", 3))
    assert {t.error_code for t in over.topics} == {ErrorCode.POLICY_VIOLATION}
    assert "c" not in engine.broker.state.metadata.topics
    failing = create_topics(client, topic("a", 50), topic("e", 9))
    assert [t.error_code for t in failing.topics] == [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NONE]


def test_the_default_limit_is_kafkas_10000_and_validate_only_counts_too() -> None:
    client = Client(Engine(), 1)
    assert create_topics(client, topic("v", 9_999), validate_only=True).topics[0].error_code == ErrorCode.NONE
    refused = create_topics(client, topic("v", 10_000), validate_only=True).topics[0]
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.POLICY_VIOLATION,
        EXCESSIVE_BATCH_MESSAGE,
    )


def test_create_partitions_past_the_limit_fails_from_that_topic_on() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, max_records_per_user_op=10))
    client = Client(engine, 1)
    for name in "abc":
        create(client, name, 1)
    reply = create_partitions(client, a=7, b=6, c=2, missing=3)
    # a adds 6 records; b's 5 would make 11: Kafka answers UNKNOWN_SERVER_ERROR for it and for
    # every later topic that adds partitions (its record list is full); a missing topic keeps its error.
    assert [(r.name, r.error_code) for r in reply.results] == [
        ("a", ErrorCode.NONE),
        ("b", ErrorCode.UNKNOWN_SERVER_ERROR),
        ("c", ErrorCode.UNKNOWN_SERVER_ERROR),
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    topics = engine.broker.state.metadata.topics
    assert (topics["a"].partitions, topics["b"].partitions, topics["c"].partitions) == (7, 1, 1)
    assert len(partition_dirs(engine, "b")) == 1
    huge = create_partitions(client, a=INT32_MAX)
    assert huge.results[0].error_code == ErrorCode.POLICY_VIOLATION and topics["a"].partitions == 7
    many = create_partitions(client, **{f"t{i}": 2 for i in range(11)})
    assert {(r.error_code, r.error_message) for r in many.results} == {
        (ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
    }


def test_delete_topics_past_the_limit_leaves_the_rest() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, max_records_per_user_op=2))
    client = Client(engine, 1)
    for name in "abc":
        create(client, name, 1)
    reply = client.request(DeleteTopicsRequest(topic_names=["a", "b", "c"], timeout_ms=1000), 5)
    assert isinstance(reply.body, DeleteTopicsResponse)
    assert [r.error_code for r in reply.body.responses] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_SERVER_ERROR,
    ]
    assert list(engine.broker.state.metadata.topics) == ["c"]


# -- decompression bounded by max.message.bytes ------------------------------------------------------

MAX_MESSAGE_BYTES = 100_000
BOUND = MAX_MESSAGE_BYTES - RECORD_BATCH_OVERHEAD


def _compress_zeros(codec: str, head: bytes, zeros: int, tail: bytes) -> bytes:
    """``head + bytes(zeros) + tail`` compressed without holding the zeros at once (gzip, zstd)."""
    if codec == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        parts = [c.compress(head)]
        chunk = bytes(1 << 20)
        for start in range(0, zeros, len(chunk)):
            parts.append(c.compress(chunk[: min(len(chunk), zeros - start)]))
        return b"".join([*parts, c.compress(tail), c.flush()])
    data = head + bytes(zeros) + tail
    if codec == "zstd":
        out: bytes = zstandard.ZstdCompressor(level=3).compress(data)
        return out
    if codec == "lz4":
        frame: bytes = lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=False
        )
        return frame
    return snappy_compress(data)


@functools.cache
def bomb(codec: str, inflated: int) -> bytes:
    """A v2 batch of one record whose value is zeros, whose records inflate to ``inflated`` bytes."""
    value = inflated - 1
    while True:  # the record's own header shrinks the value
        body_rest = 1 + 1 + 1 + 1 + len(varint_bytes(value)) + value + 1
        size = len(varint_bytes(body_rest)) + body_rest
        if size == inflated:
            break
        value -= size - inflated
    head = (
        varint_bytes(body_rest)
        + b"\x00"
        + varint_bytes(0)
        + varint_bytes(0)
        + varint_bytes(-1)
        + varint_bytes(value)
    )
    payload = _compress_zeros(codec, head, value, varint_bytes(0))
    after_crc = struct.pack(">hiqqqhii", COMPRESSION_IDS[codec], 0, 0, 0, -1, -1, -1, 1) + payload
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), -1, 2, crc32c(after_crc)) + after_crc


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_records_inflating_past_max_message_bytes_are_too_large(codec: str) -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "z", 1, max_message_bytes=str(MAX_MESSAGE_BYTES))
    over = produce(client, "z", bomb(codec, BOUND + 1))
    assert over is not None
    refused = over.responses[0].partition_responses[0]
    assert refused.error_code == ErrorCode.MESSAGE_TOO_LARGE and "max.message.bytes" in (
        refused.error_message or ""
    )
    fits = produce(client, "z", bomb(codec, BOUND))
    assert fits is not None
    assert (
        fits.responses[0].partition_responses[0].error_code,
        fits.responses[0].partition_responses[0].base_offset,
    ) == (0, 0)
    assert len(records_of(fetch(client, "z", 0))[0][1] or b"") > BOUND - 16


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4", "snappy"])
def test_a_decompression_bomb_never_inflates_past_the_bound(codec: str) -> None:
    inflated = 63 << 20 if codec in ("gzip", "zstd") else 16 << 20  # lz4 and snappy inflate zeros less
    batch = bomb(codec, inflated)
    assert len(batch) < inflated // 20
    engine = Engine()
    client = Client(engine, 1)
    create(client, "bomb", 1)  # max.message.bytes: Kafka's default, 1 MiB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        response = produce(client, "bomb", batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        response is not None
        and response.responses[0].partition_responses[0].error_code == ErrorCode.MESSAGE_TOO_LARGE
    )
    assert peak < 4 * 1_048_588 + 2 * len(batch), f"peak {peak} bytes while refusing a {inflated}-byte bomb"


def test_an_uncompressed_batch_is_limited_by_its_size_as_before() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "u", 1, max_message_bytes="1000")
    small = produce(client, "u", build_batch([NewRecord(None, b"x" * 900)], default_timestamp=engine.now_ms))
    big = produce(client, "u", build_batch([NewRecord(None, b"x" * 1000)], default_timestamp=engine.now_ms))
    assert small is not None and big is not None
    assert small.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert big.responses[0].partition_responses[0].error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_metadata_auto_creation_past_the_limit_creates_nothing() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, max_records_per_user_op=5))
    client = Client(engine, 1)
    wanted = [MetadataRequestTopic(name=n) for n in ("x", "y", "z")]
    reply = client.request(MetadataRequest(topics=wanted, allow_auto_topic_creation=True), 9)  # 3 x 2 records
    assert isinstance(reply.body, MetadataResponse)
    assert {t.error_code for t in reply.body.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert engine.broker.state.metadata.topics == {}, "one CreateTopics for all three: refused whole"
    engine.advance(CREATE_RETRY_BACKOFF_MS)  # a refused creation is asked again no sooner
    for expected in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NONE):  # asked, then made
        two = client.request(MetadataRequest(topics=wanted[:2], allow_auto_topic_creation=True), 9)
        assert isinstance(two.body, MetadataResponse) and {t.error_code for t in two.body.topics} == {
            expected
        }


def test_the_limits_are_properties() -> None:
    config = BrokerConfig.from_properties(
        {"kafka.wire.max.records.per.user.op": "5", "kafka.wire.max.work.bytes.per.call": "4096"}
    )
    assert (config.max_records_per_user_op, config.max_work_bytes_per_call) == (5, 4096)
    assert BrokerConfig().max_records_per_user_op == 10_000
    for key in ("kafka.wire.max.records.per.user.op", "kafka.wire.max.work.bytes.per.call"):
        with pytest.raises(BrokerConfigError, match=key):
            BrokerConfig.from_properties({key: "0"})
