"""Fields of the controller's answers that Kafka's controller sets where the generated default
would differ (docs/internals/response-defaults.md), read back as a client decodes them."""

from __future__ import annotations

from kafka_wire.broker.controller.controller import error_response
from kafka_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    ApiKey,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ErrorCode,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from tests.broker.controller.test_controller import cluster
from tests.broker.engine import on_the_wire


def test_a_created_topic_has_a_null_message() -> None:
    h = cluster(1, 2, 3)
    result = on_the_wire(h.create_topic("t"), CreateTopicsResponse, 7).topics[0]
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, None)


def test_election_and_reassignment_answers_carry_kafkas_messages() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t")
    elect = h.call(
        ApiKey.ELECT_LEADERS,
        2,
        ElectLeadersRequest(
            election_type=0, topic_partitions=[ElectLeadersRequestTopicPartitions(topic="t", partitions=[0])]
        ),
    )
    [result] = on_the_wire(elect, ElectLeadersResponse, 2).replica_election_results[0].partition_result
    # Kafka's new ApiError(ELECTION_NOT_NEEDED) carries the error's own message.
    assert result.error_code == ErrorCode.ELECTION_NOT_NEEDED and result.error_message

    cancel = AlterPartitionReassignmentsRequest(
        topics=[
            AlterPartitionReassignmentsRequestReassignableTopic(
                name="t",
                partitions=[AlterPartitionReassignmentsRequestReassignablePartition(partition_index=0)],
            )
        ]
    )
    moved = on_the_wire(
        h.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, cancel), AlterPartitionReassignmentsResponse, 0
    )
    assert moved.error_message is None  # Kafka's controller sets null, not the default ""
    [partition] = moved.responses[0].partitions
    assert partition.error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS and partition.error_message

    listed = h.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, ListPartitionReassignmentsRequest(topics=None))
    assert on_the_wire(listed, ListPartitionReassignmentsResponse, 0).error_message is None


def test_an_inactive_controller_answers_in_the_requests_shape_with_a_message() -> None:
    elect = ElectLeadersRequest(
        election_type=0, topic_partitions=[ElectLeadersRequestTopicPartitions(topic="t", partitions=[0, 1])]
    )
    refused = on_the_wire(
        error_response(ApiKey.ELECT_LEADERS, 2, elect, ErrorCode.NOT_CONTROLLER), ElectLeadersResponse, 2
    )
    assert refused.error_code == ErrorCode.NOT_CONTROLLER
    results = refused.replica_election_results[0].partition_result
    assert [(r.partition_id, r.error_code) for r in results] == [
        (0, ErrorCode.NOT_CONTROLLER),
        (1, ErrorCode.NOT_CONTROLLER),
    ]
    assert all(r.error_message for r in results)

    create = CreateTopicsRequest(topics=[CreateTopicsRequestCreatableTopic(name="t", num_partitions=1)])
    created = on_the_wire(
        error_response(ApiKey.CREATE_TOPICS, 7, create, ErrorCode.NOT_CONTROLLER), CreateTopicsResponse, 7
    )
    [topic] = created.topics
    assert topic.error_code == ErrorCode.NOT_CONTROLLER and topic.error_message
