"""ListOffsets per partition, each question sent to its partition's leader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kafka_wire.client.cluster import LEADERSHIP_ERRORS, LIST_OFFSETS_VERSION, Address, NoLeader
from kafka_wire.client.types import EARLIEST, LATEST, READ_UNCOMMITTED, KafkaCallError, TopicPartition
from kafka_wire.messages import (
    ApiKey,
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)

if TYPE_CHECKING:
    from kafka_wire.adapters.cluster import Cluster


async def list_offsets(
    cluster: Cluster, queries: Mapping[TopicPartition, int], isolation_level: int = READ_UNCOMMITTED
) -> dict[TopicPartition, int | None]:
    """ListOffsets per partition: ``EARLIEST``, ``LATEST`` (the last stable offset with
    ``READ_COMMITTED``) or a timestamp in ms (the first offset at or after it; None if none)."""
    out: dict[TopicPartition, int | None] = {}
    pending = dict(queries)
    await cluster.refresh(sorted({tp.topic for tp in pending}))
    while pending:
        by_leader: dict[Address, list[TopicPartition]] = {}
        for tp in pending:
            try:
                address, _ = await cluster.leader(tp)
            except NoLeader as e:
                await cluster.retry_wait(str(e))
                break
            by_leader.setdefault(address, []).append(tp)
        for address, tps in by_leader.items():
            client = await cluster.client(address)
            topics: dict[str, list[ListOffsetsRequestPartition]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    ListOffsetsRequestPartition(partition_index=tp.partition, timestamp=pending[tp])
                )
            request = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=isolation_level,
                topics=[ListOffsetsRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
            )
            version = cluster.version(client, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION)
            response = await client.request(request, version)
            retry = None
            for topic in response.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if p.error_code == ErrorCode.NONE:
                        out[tp] = None if p.offset < 0 else p.offset
                        pending.pop(tp, None)
                    elif p.error_code in LEADERSHIP_ERRORS:
                        retry = f"ListOffsets {tp}: error {p.error_code}"
                    else:
                        raise KafkaCallError(f"ListOffsets {tp}: error {p.error_code}")
            if retry is not None:
                await cluster.retry_wait(retry)
    return out


async def offset_bounds(
    cluster: Cluster, tps: Sequence[TopicPartition], isolation_level: int = READ_UNCOMMITTED
) -> dict[TopicPartition, tuple[int, int]]:
    """``(earliest, latest)`` per partition."""
    low = await list_offsets(cluster, dict.fromkeys(tps, EARLIEST), isolation_level)
    high = await list_offsets(cluster, dict.fromkeys(tps, LATEST), isolation_level)
    return {tp: (low.get(tp) or 0, high.get(tp) or 0) for tp in tps}
