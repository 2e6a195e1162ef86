"""Large decodes pause the cyclic GC and always give it back; uuids decode through the fast path."""

from __future__ import annotations

import gc
import pickle
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import pytest

from kafka_wire.codec.runtime import GC_PAUSE_MIN_BYTES, ZERO_UUID, uuid_from_bytes
from kafka_wire.errors import DecodeError
from kafka_wire.messages import (
    ApiKey,
    BrokerHeartbeatRequest,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
    ResponseHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_response


def big_response(version: int = 12) -> bytes:
    topics = [
        MetadataResponseTopic(
            name=f"topic-{t}",
            topic_id=UUID(int=t + 1),
            partitions=[
                MetadataResponsePartition(
                    partition_index=p, leader_id=1, replica_nodes=[1, 2, 3], isr_nodes=[1, 2]
                )
                for p in range(10)
            ],
        )
        for t in range(50)
    ]
    data = MetadataResponse(topics=topics).encode(version)
    assert len(data) >= GC_PAUSE_MIN_BYTES
    return data


@pytest.fixture(autouse=True)
def gc_restored() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def spy(monkeypatch: pytest.MonkeyPatch, cls: Any, version: int, seen: list[bool],
        inner: Callable[[], object] | None = None) -> None:  # fmt: skip
    """Record ``gc.isenabled()`` whenever the generated decoder of ``cls`` at ``version`` runs
    (the compiled one when the compiled flavour is in use)."""
    table = cls._native_decoders if version in cls._native_decoders else cls._decoders
    real = table[version]

    def decoder(buf: bytes, pos: int) -> tuple[Any, int]:
        seen.append(gc.isenabled())
        if inner is not None:
            inner()
            seen.append(gc.isenabled())
        result: tuple[Any, int] = real(buf, pos)
        return result

    monkeypatch.setitem(table, version, decoder)


def test_large_decode_pauses_the_collector_and_restores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    data = big_response()
    seen: list[bool] = []
    spy(monkeypatch, MetadataResponse, 12, seen)
    msg = MetadataResponse.decode(data, 12)
    assert seen == [False] and gc.isenabled()
    assert msg.encode(12) == data


def test_small_decode_leaves_the_collector_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    data = MetadataRequest(topics=[MetadataRequestTopic(name="a")]).encode(12)
    assert len(data) < GC_PAUSE_MIN_BYTES
    seen: list[bool] = []
    spy(monkeypatch, MetadataRequest, 12, seen)
    MetadataRequest.decode(data, 12)
    assert seen == [True] and gc.isenabled()


def test_collector_left_off_by_the_caller_stays_off(monkeypatch: pytest.MonkeyPatch) -> None:
    data = big_response()
    seen: list[bool] = []
    spy(monkeypatch, MetadataResponse, 12, seen)
    gc.disable()
    MetadataResponse.decode(data, 12)
    assert seen == [False] and not gc.isenabled()


def test_failed_large_decode_restores_the_collector() -> None:
    data = big_response()
    with pytest.raises(DecodeError):
        MetadataResponse.decode(data[:-100], 12)
    assert gc.isenabled()


def test_nested_large_decodes_restore_only_at_the_outermost(monkeypatch: pytest.MonkeyPatch) -> None:
    data = big_response()
    inner_data = big_response(1)
    seen: list[bool] = []
    spy(monkeypatch, MetadataResponse, 12, seen, inner=lambda: MetadataResponse.decode(inner_data, 1))
    MetadataResponse.decode(data, 12)
    assert seen == [False, False]  # still paused after the inner decode returned
    assert gc.isenabled()


def test_framing_decodes_are_paused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    msg = MetadataResponse.decode(big_response(), 12)
    frame = encode_response(ResponseHeader(correlation_id=7), msg, 12)
    seen: list[bool] = []
    spy(monkeypatch, MetadataResponse, 12, seen)
    _, decoded = decode_response(frame, ApiKey.METADATA, 12)
    assert decoded == msg and seen == [False] and gc.isenabled()


@pytest.mark.parametrize("value", [1, 2**64 + 5, 2**128 - 1, 0x12345678123456781234567812345678])
def test_uuid_from_bytes_matches_the_constructor(value: int) -> None:
    raw = value.to_bytes(16, "big")
    fast, slow = uuid_from_bytes(raw), UUID(bytes=raw)
    assert type(fast) is UUID and fast == slow and hash(fast) == hash(slow) and str(fast) == str(slow)
    assert fast.is_safe is slow.is_safe and fast.version == slow.version
    assert pickle.loads(pickle.dumps(fast)) == slow
    with pytest.raises(TypeError):
        fast.int = 0  # type: ignore[misc]  # immutable like any UUID


def test_zero_uuids_decode_to_the_shared_constant() -> None:
    data = MetadataRequest(topics=[MetadataRequestTopic(name="a"), MetadataRequestTopic(name="b")]).encode(12)
    topics = MetadataRequest.decode(data, 12).topics
    assert topics is not None and all(t.topic_id is ZERO_UUID for t in topics)
    dirs = [UUID(int=0), UUID(int=9)]
    hb = BrokerHeartbeatRequest.decode(BrokerHeartbeatRequest(offline_log_dirs=dirs).encode(1), 1)
    assert hb.offline_log_dirs == dirs and hb.offline_log_dirs[0] is ZERO_UUID
