"""The asyncio client against real brokers: Apache Kafka 4.4 and Tansu (the ``peer`` fixture).

ApiVersions, Metadata, CreateTopics, Produce and Fetch at the highest versions both sides
support, with record batches built by kafka_wire.records and read back from the broker.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import assert_type

import pytest

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    ApiKey,
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
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.records import NewRecord, build_batch, read_records
from tests.interop.harness import Address

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _produce(topic: str, topic_id: uuid.UUID, batch: bytes, acks: int) -> ProduceRequest:
    data = ProduceRequestPartitionProduceData(index=0, records=batch)
    return ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[ProduceRequestTopicProduceData(name=topic, topic_id=topic_id, partition_data=[data])],
    )


def _fetch(topic: str, topic_id: uuid.UUID, offset: int) -> FetchRequest:
    partition = FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[FetchRequestTopic(topic=topic, topic_id=topic_id, partitions=[partition])],
    )


async def _round_trip(address: Address) -> None:
    async with await KafkaClient.connect(address.host, address.port) as client:
        assert client.negotiated is not None
        for key in (ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.PRODUCE, ApiKey.FETCH):
            assert key in client.api_versions

        # request() gives the body, typed by the request (checked here statically and at run time);
        # exchange() the whole Response, header and version with it.
        metadata = await client.request(MetadataRequest(topics=None))
        assert isinstance(assert_type(metadata, MetadataResponse), MetadataResponse)
        assert [(b.host, b.port) for b in metadata.brokers] == [(address.host, address.port)]
        exchanged = await client.exchange(MetadataRequest(topics=None))
        assert isinstance(exchanged.body, MetadataResponse) and exchanged.header is not None
        assert exchanged.api_version == client.api_versions[ApiKey.METADATA][1]

        topic = f"kw-{uuid.UUID(int=hash(asyncio.get_running_loop()) & ((1 << 128) - 1)).hex[:12]}"
        created = await client.request(
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequestCreatableTopic(name=topic, num_partitions=1, replication_factor=1)
                ],
                timeout_ms=5000,
            )
        )
        assert isinstance(assert_type(created, CreateTopicsResponse), CreateTopicsResponse)
        [result] = created.topics
        assert (result.name, result.error_code) == (topic, ErrorCode.NONE)

        described = await client.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]))
        [meta] = described.topics
        assert meta.error_code == ErrorCode.NONE and [p.partition_index for p in meta.partitions] == [0]
        topic_id = meta.topic_id

        sent: list[tuple[bytes | None, bytes | None]] = []
        for i, codec in enumerate(CODECS):
            records = [NewRecord(f"k{i}-{j}".encode(), f"{codec}-{j}".encode() * 20) for j in range(5)]
            produced = await client.request(
                _produce(topic, topic_id, build_batch(records, compression=codec), acks=1)
            )
            assert isinstance(assert_type(produced, ProduceResponse), ProduceResponse)
            [partition] = produced.responses[0].partition_responses
            assert partition.error_code == ErrorCode.NONE, codec
            assert partition.base_offset == len(sent)
            sent += [(r.key, r.value) for r in records]
        # acks=0: no response comes; the next request's answer still matches its own correlation id.
        await client.send_only(
            _produce(topic, topic_id, build_batch([NewRecord(b"quiet", b"acks0")]), acks=0)
        )
        sent.append((b"quiet", b"acks0"))

        received: list[tuple[bytes | None, bytes | None]] = []
        for _ in range(50):
            fetched = await client.request(_fetch(topic, topic_id, len(received)))
            assert isinstance(assert_type(fetched, FetchResponse), FetchResponse)
            [data] = fetched.responses[0].partitions
            assert data.error_code == ErrorCode.NONE
            received += [(r.key, r.value) for r in read_records(data.records or b"")]
            if len(received) >= len(sent):
                break
        assert received == sent

        offsets = await client.request(
            ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    ListOffsetsRequestTopic(
                        name=topic, partitions=[ListOffsetsRequestPartition(timestamp=-1)]
                    )
                ],
            )
        )
        assert isinstance(assert_type(offsets, ListOffsetsResponse), ListOffsetsResponse)
        assert offsets.topics[0].partitions[0].offset == len(sent)


def test_asyncio_client_round_trip(peer: Address) -> None:
    asyncio.run(asyncio.wait_for(_round_trip(peer), 60))


def test_asyncio_client_negotiates_the_highest_versions_both_sides_know(peer: Address) -> None:
    async def run() -> None:
        async with await KafkaClient.connect(peer.host, peer.port) as client:
            for key, (lo, hi) in client.api_versions.items():
                assert lo <= hi
                assert client.connection.version_for(key) == hi

    asyncio.run(asyncio.wait_for(run(), 30))


@pytest.mark.parametrize("chunk", [1, 7])
def test_connection_survives_any_read_chunking(
    peer: Address, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kafka_wire.adapters.asyncio as adapter

    monkeypatch.setattr(adapter, "_READ_CHUNK", chunk)

    async def run() -> None:
        async with await KafkaClient.connect(peer.host, peer.port) as client:
            reply = await client.request(MetadataRequest(topics=None))
            assert isinstance(reply, MetadataResponse) and reply.brokers

    asyncio.run(asyncio.wait_for(run(), 30))
