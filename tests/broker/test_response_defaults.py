"""Fields of the single node's answers that Kafka fills where the generated default would differ
(docs/internals/response-defaults.md): each answer is read back as the client decodes it, at the
versions where the field matters."""

from __future__ import annotations

import uuid

import pytest

from kafka_wire.broker.failed_answers import failed_answer
from kafka_wire.broker.faults import injected_answer
from kafka_wire.messages import (
    ApiKey,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
    ProduceResponseTopicProduceResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce
from tests.broker.test_engine_groups import find_coordinator

TOPIC_RESOURCE = 2


def fetch_at(client: Client, version: int, topic: str, offset: int = 0) -> FetchResponsePartitionData:
    """One partition's part of a Fetch at ``version``, as the client decoded it (topics by id
    from v13: ``topic`` is then a name whose id nobody knows)."""
    by_id = version >= 13
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        session_epoch=-1,
        topics=[
            FetchRequestTopic(
                topic="" if by_id else topic,
                topic_id=uuid.uuid5(uuid.NAMESPACE_OID, topic) if by_id else uuid.UUID(int=0),
                partitions=[
                    FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )
    reply = client.request(request, version)
    assert isinstance(reply.body, FetchResponse)
    [entry] = reply.body.responses
    [data] = entry.partitions
    return data


@pytest.mark.parametrize("version", [4, 11, 12, 13, 16, 17])
def test_a_fetch_of_an_unknown_partition_carries_empty_records(version: int) -> None:
    data = fetch_at(Client(Engine(), 1), version, "nowhere")
    expected = ErrorCode.UNKNOWN_TOPIC_ID if version >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert data.error_code == expected
    # Kafka's FetchResponse.partitionResponse: empty records (null ones librdkafka refuses),
    # high watermark -1 and an empty list of aborted transactions.
    assert data.records is not None and len(data.records) == 0
    assert data.high_watermark == -1
    assert data.aborted_transactions == []


@pytest.mark.parametrize("version", [4, 12])
def test_an_out_of_range_fetch_gives_kafkas_unknown_offsets(version: int) -> None:
    client = Client(Engine(), 1)
    create(client, "oor")
    produce(client, "oor", build_batch([NewRecord(None, b"v")], default_timestamp=1))
    data = fetch_at(client, version, "oor", offset=100)
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    # Kafka's ReplicaManager.createLogReadResult: every offset -1, empty records, no aborted list.
    assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (-1, -1, -1)
    assert data.records is not None and len(data.records) == 0
    assert data.aborted_transactions is None


def test_a_failed_write_leaves_empty_records_and_unknown_offsets() -> None:
    fetched = FetchResponse(
        responses=[
            FetchResponseFetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponsePartitionData(
                        high_watermark=5, last_stable_offset=5, log_start_offset=0, records=b"x" * 70
                    )
                ],
            )
        ]
    )
    failed = failed_answer(fetched, ErrorCode.KAFKA_STORAGE_ERROR, "disk")
    assert isinstance(failed, FetchResponse)
    data = FetchResponse.decode(failed.encode(12), 12).responses[0].partitions[0]
    assert data.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert data.records is not None and len(data.records) == 0
    assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (-1, -1, -1)
    assert data.aborted_transactions is None

    produced = ProduceResponse(
        responses=[
            ProduceResponseTopicProduceResponse(
                name="t",
                partition_responses=[
                    ProduceResponsePartitionProduceResponse(
                        base_offset=7, log_append_time_ms=9, log_start_offset=0
                    )
                ],
            )
        ]
    )
    refused = failed_answer(produced, ErrorCode.KAFKA_STORAGE_ERROR, "disk")
    assert isinstance(refused, ProduceResponse)
    result = refused.responses[0].partition_responses[0]
    # Kafka's LogAppendInfo.UNKNOWN_LOG_APPEND_INFO: -1, not the generated 0 of base_offset.
    assert (result.base_offset, result.log_append_time_ms, result.log_start_offset) == (-1, -1, -1)


def test_find_coordinator_messages_are_kafkas() -> None:
    client = Client(Engine(), 1)
    # The first ask has the controller create __consumer_offsets: not available meanwhile.
    batch = client.request(FindCoordinatorRequest(coordinator_keys=["g"], key_type=0), 4).body
    assert isinstance(batch, FindCoordinatorResponse)
    [entry] = batch.coordinators
    assert entry.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert entry.error_message == ""  # Kafka's v4+ coordinators leave the (non-null) default
    old = find_coordinator(client, "g")
    assert (old.error_code, old.error_message) == (ErrorCode.NONE, "NONE")


def test_describe_configs_of_an_unknown_or_illegal_topic() -> None:
    client = Client(Engine(), 1)
    reply = client.request(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(resource_type=TOPIC_RESOURCE, resource_name="absent"),
                DescribeConfigsRequestResource(resource_type=TOPIC_RESOURCE, resource_name="bad/name"),
            ]
        ),
        4,
    ).body
    assert isinstance(reply, DescribeConfigsResponse)
    absent, bad = reply.results
    # Kafka's ConfigHelper sets no message: the generated default, an empty string.
    assert (absent.error_code, absent.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION and bad.error_message


def test_an_injected_fetch_error_carries_empty_records() -> None:
    request = FetchRequest(
        topics=[FetchRequestTopic(topic="t", partitions=[FetchRequestPartition(partition=0)])]
    )
    answer = injected_answer(ApiKey.FETCH, request, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert isinstance(answer, FetchResponse)
    data = FetchResponse.decode(answer.encode(12), 12).responses[0].partitions[0]
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert data.records is not None and len(data.records) == 0
