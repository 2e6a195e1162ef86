"""Produce ready-made record batches to partition leaders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from kafka_wire.client.cluster import LEADERSHIP_ERRORS, PRODUCE_VERSION
from kafka_wire.client.types import KafkaCallError, TopicPartition
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)

if TYPE_CHECKING:
    from kafka_wire.adapters.cluster import Cluster

PRODUCE_TIMEOUT_MS: Final = 30_000
"""How long the leader may wait for its replicas (Kafka's ``request.timeout.ms`` default)."""


async def produce(
    cluster: Cluster, batches: Mapping[TopicPartition, Sequence[bytes]], acks: int = -1
) -> dict[TopicPartition, int]:
    """Send each partition's batches (built with :func:`kafka_wire.records.build_batch`) in
    order, one request each; returns the base offset the broker gave each partition's first
    batch (-1 with ``acks=0``, which has no response)."""
    unknown = sorted({tp.topic for tp in batches if tp not in cluster.metadata.leadership})
    if unknown:
        await cluster.refresh(unknown)
    first: dict[TopicPartition, int] = {}
    for tp, items in batches.items():
        for raw in items:
            while True:
                found = await cluster.leader_or_wait(tp)
                if found is None:
                    continue
                client = found[1]
                request = ProduceRequest(
                    acks=acks,
                    timeout_ms=PRODUCE_TIMEOUT_MS,
                    topic_data=[
                        ProduceRequestTopicProduceData(
                            name=tp.topic,
                            partition_data=[
                                ProduceRequestPartitionProduceData(index=tp.partition, records=raw)
                            ],
                        )
                    ],
                )
                version = cluster.version(client, ApiKey.PRODUCE, PRODUCE_VERSION)
                if acks == 0:  # no response: the offset is not known
                    await client.send_only(request, version)
                    first.setdefault(tp, -1)
                    break
                response = await client.request(request, version)
                result = response.responses[0].partition_responses[0]
                if result.error_code in LEADERSHIP_ERRORS:
                    await cluster.retry_wait(f"Produce {tp}: error {result.error_code}")
                    continue
                if result.error_code != ErrorCode.NONE:
                    raise KafkaCallError(
                        f"Produce {tp}: error {result.error_code} {result.error_message or ''}"
                    )
                first.setdefault(tp, result.base_offset)
                break
    return first
