"""The requests of a simulated transactional producer (``txn_producer.py``): its batches, the
transactional Produce of one batch, the AddPartitionsToTxn of transaction version 1, and the
error code of a coordinator's answer."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    ErrorCode,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafka_wire.records import build_batch
from kafka_wire.records.record import NewRecord
from kafka_wire.sim.clients.producer import PRODUCE_TIMEOUT_MS


@dataclass(slots=True)
class TxnBatch:
    #: The transaction it belongs to.
    txn: str
    values: list[str]
    sequence: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    in_flight: bool = False
    maybe_written: bool = False
    retry_at_ms: int = 0
    last_error: str = ""


def produce_request(
    transactional_id: str, key: tuple[str, int], batch: TxnBatch, now_ms: int
) -> ProduceRequest:
    """The transactional Produce (acks=all) of ``batch`` to partition ``key``."""
    records = build_batch(
        [NewRecord(None, v.encode(), timestamp=now_ms) for v in batch.values],
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.sequence,
        is_transactional=True,
    )
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=PRODUCE_TIMEOUT_MS,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=key[0],
                partition_data=[ProduceRequestPartitionProduceData(index=key[1], records=records)],
            )
        ],
    )


def add_partitions_request(
    transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[tuple[str, int]]
) -> AddPartitionsToTxnRequest:
    """AddPartitionsToTxn v3 (a client's, transaction version 1) of ``partitions``."""
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=transactional_id,
        v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=producer_epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequestTopic(name=t, partitions=ps) for t, ps in topics.items()
        ],
    )


def answer_code(body: Message | None) -> int | None:
    if isinstance(body, AddPartitionsToTxnResponse):
        codes = [
            p.partition_error_code
            for t in body.results_by_topic_v3_and_below
            for p in t.results_by_partition
            if p.partition_error_code != ErrorCode.NONE
        ]
        return codes[0] if codes else ErrorCode.NONE
    if isinstance(body, (InitProducerIdResponse, EndTxnResponse)):
        return int(body.error_code)
    return None
