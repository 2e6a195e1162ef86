"""A topic's ``compression.type``: batches stored in the topic's codec, as Kafka's LogValidator does."""

from __future__ import annotations

import os

import pytest

from kafka_wire.messages import ErrorCode, InitProducerIdRequest, InitProducerIdResponse
from kafka_wire.records import NewRecord, RecordBatch, build_batch, build_commit_marker, read_batches
from kafka_wire.records.constants import COMPRESSION_IDS, TimestampType
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce

TOPIC_CODECS = {"uncompressed": "none", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


def stored_batches(client: Client, topic: str) -> list[RecordBatch[bytes]]:
    data = fetch(client, topic, 0).responses[0].partitions[0].records or b""
    batches = list(read_batches(data))
    assert all(isinstance(b, RecordBatch) for b in batches)
    return batches  # type: ignore[return-value]  # v2 only, checked above


def sample(n: int, tag: str) -> list[NewRecord]:
    return [
        NewRecord(
            f"{tag}-k{i}".encode(),
            f"{tag}-value-{i}-".encode() * 20,
            (("h", f"{i}".encode()), ("n", None)),
            1_700_000_000_000 + i,
        )
        for i in range(n)
    ]


def as_tuples(
    batches: list[RecordBatch[bytes]],
) -> list[tuple[int, int, bytes | None, bytes | None, tuple[object, ...]]]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for b in batches for r in b]


@pytest.mark.parametrize("target", [*TOPIC_CODECS, "producer"])
@pytest.mark.parametrize("source", ["none", "zstd", "gzip"])
def test_batches_are_stored_in_the_topics_codec(source: str, target: str) -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert create(client, "c", 1, compression_type=target).topics[0].error_code == ErrorCode.NONE
    first, second = sample(3, "a"), sample(4, "b")
    for records, base in ((first, 0), (second, 3)):
        response = produce(client, "c", build_batch(records, compression=source))
        assert response is not None
        result = response.responses[0].partition_responses[0]
        assert (result.error_code, result.base_offset) == (ErrorCode.NONE, base)
    batches = stored_batches(client, "c")
    expected = source if target == "producer" else TOPIC_CODECS[target]
    assert [(b.compression, b.base_offset, b.record_count) for b in batches] == [
        (expected, 0, 3),
        (expected, 3, 4),
    ]
    assert all(b.is_valid() and b.timestamp_type == TimestampType.CREATE_TIME for b in batches)
    assert as_tuples(batches) == [
        (offset, r.timestamp, r.key, r.value, tuple(r.headers)) for offset, r in enumerate(first + second)
    ]


def test_recompression_keeps_the_producer_fields_and_deduplication() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "idem", 1, compression_type="zstd")
    init = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert isinstance(init.body, InitProducerIdResponse)
    pid, epoch = init.body.producer_id, init.body.producer_epoch
    batch = build_batch(sample(2, "p"), producer_id=pid, producer_epoch=epoch, base_sequence=0)
    for _ in range(2):  # the retry is recognised as a duplicate
        response = produce(client, "idem", batch)
        assert response is not None and response.responses[0].partition_responses[0].base_offset == 0
    [stored] = stored_batches(client, "idem")
    assert (stored.compression, stored.producer_id, stored.producer_epoch, stored.base_sequence) == (
        "zstd",
        pid,
        epoch,
        0,
    )
    assert stored.partition_leader_epoch == engine.broker.state.replica("idem", 0).leader_epoch  # type: ignore[union-attr]


def test_recompression_with_log_append_time() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "lat", 1, compression_type="gzip", message_timestamp_type="LogAppendTime")
    response = produce(client, "lat", build_batch(sample(2, "t")))
    assert response is not None
    assert response.responses[0].partition_responses[0].log_append_time_ms == engine.now_ms
    [stored] = stored_batches(client, "lat")
    assert (stored.compression, stored.timestamp_type, stored.max_timestamp) == (
        "gzip",
        TimestampType.LOG_APPEND_TIME,
        engine.now_ms,
    )
    assert [r.timestamp for r in stored] == [engine.now_ms] * 2


def test_compression_levels_are_used_and_checked() -> None:
    engine = Engine()
    client = Client(engine, 1)
    records = [NewRecord(None, (b"level test %d " % i) * 50) for i in range(40)]
    sizes = {}
    for level in ("1", "9"):
        create(client, f"g{level}", 1, compression_type="gzip", compression_gzip_level=level)
        produce(client, f"g{level}", build_batch(records))
        [stored] = stored_batches(client, f"g{level}")
        sizes[level] = stored.size_in_bytes
    assert sizes["9"] < sizes["1"]
    for key, value in (("zstd", "19"), ("lz4", "12")):
        create(client, f"l{key}", 1, compression_type=key, **{f"compression_{key}_level": value})
        produce(client, f"l{key}", build_batch(records))
        assert stored_batches(client, f"l{key}")[0].compression == key
    for key, value in (("gzip", "0"), ("gzip", "10"), ("lz4", "18"), ("zstd", "23")):
        refused = create(client, "bad", 1, **{f"compression_{key}_level": value})
        assert refused.topics[0].error_code == ErrorCode.INVALID_CONFIG
    assert (
        create(client, "default-gzip", 1, compression_gzip_level="-1").topics[0].error_code == ErrorCode.NONE
    )


def test_a_batch_too_large_once_recompressed_is_refused() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "r", 1, compression_type="gzip", max_message_bytes="1000")
    incompressible = build_batch([NewRecord(None, os.urandom(930))])
    assert 990 < len(incompressible) <= 1000  # fits as it is, not with gzip's framing around it
    response = produce(client, "r", incompressible)
    assert response is not None
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert engine.broker.state.replica("r", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_control_batches_are_not_recompressed() -> None:
    engine = Engine()
    create(Client(engine, 1), "ctl", 1, compression_type="gzip")
    replica = engine.broker.state.replica("ctl", 0)
    assert replica is not None
    marker = build_commit_marker(
        producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=engine.now_ms
    )
    result = replica.log.append(marker, engine.now_ms, origin="coordinator")
    assert result.error_code == ErrorCode.NONE
    [stored] = list(read_batches(replica.log.read_bytes(replica.log.read(0, 1 << 20, min_one_batch=True))))
    assert (
        isinstance(stored, RecordBatch)
        and stored.is_control
        and stored.compression_id == COMPRESSION_IDS["none"]
    )
