"""Large records payloads: ``encode`` keeps them out of its buffer (``runtime.Output``) and joins
once at the end; the bytes must be exactly those that ``encode_into`` (which copies everything
into the caller's buffer) and the interpreter write, in every version and with several payloads."""

from __future__ import annotations

import pytest

from kafka_wire.codec import interp, runtime
from kafka_wire.messages import (
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)

SIZES = (runtime.BIG_PAYLOAD + 7, 10, 0, 3 * runtime.BIG_PAYLOAD)


def _payload(size: int, seed: int) -> bytes:
    return bytes((i * 31 + seed) & 0xFF for i in range(size))


def _produce(version: int) -> ProduceRequest:
    parts = [ProduceRequestPartitionProduceData(index=i, records=_payload(n, i)) for i, n in enumerate(SIZES)]
    topic = ProduceRequestTopicProduceData(partition_data=parts)
    if version >= 13:
        topic.topic_id = runtime.uuid_from_bytes(bytes(range(16)))
    else:
        topic.name = "t"
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[topic])


def _fetch(version: int) -> FetchResponse:
    parts = [
        FetchResponsePartitionData(partition_index=i, records=_payload(n, i)) for i, n in enumerate(SIZES)
    ]
    topic = FetchResponseFetchableTopicResponse(partitions=parts)
    if version >= 13:
        topic.topic_id = runtime.uuid_from_bytes(bytes(range(16)))
    else:
        topic.topic = "t"
    return FetchResponse(responses=[topic])


@pytest.mark.parametrize(
    ("make", "version"), [(_produce, v) for v in (3, 8, 9, 13)] + [(_fetch, v) for v in (4, 11, 12, 18)]
)
def test_large_payloads_encode_like_encode_into(make: object, version: int) -> None:
    msg = make(version)  # type: ignore[operator]
    data = msg.encode(version)
    into = bytearray(b"prefix")
    msg.encode_into(into, version)
    assert bytes(into) == b"prefix" + data
    oracle = bytearray()
    interp.encode(msg, version, oracle)
    assert bytes(oracle) == data
    back = type(msg).decode(data, version, strict=True)
    assert back.encode(version) == data


def test_output_keeps_large_payloads_aside() -> None:
    out = runtime.Output(b"ab")
    big = _payload(runtime.BIG_PAYLOAD, 1)
    runtime.put_records(out, big)
    runtime.put_records(out, b"small")
    out += b"cd"
    assert out.payloads == [(2, big)] and bytes(out) == b"absmallcd"
    assert out.joined() == b"ab" + big + b"smallcd"
    plain = bytearray(b"ab")
    runtime.put_records(plain, big)
    assert bytes(plain) == b"ab" + big
