"""Answers that fail a whole admin request, in the request's shape: one result per topic,
resource or partition asked for, or the response's top-level error where it has one, each after
Kafka's ``getErrorResponse`` of that request. A broker answers a forwarded request it could not
forward with them (``apis/forward.py``), and the controller a request it cannot take.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode


def _create_topics(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.CreateTopicsRequest)
    return messages.CreateTopicsResponse(
        topics=[
            messages.CreateTopicsResponseCreatableTopicResult(
                name=t.name, error_code=code, error_message=message
            )
            for t in request.topics
        ]
    )


def _delete_topics(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.DeleteTopicsRequest)
    named: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in request.topics]
    named += [(name, None) for name in request.topic_names]
    return messages.DeleteTopicsResponse(
        responses=[
            messages.DeleteTopicsResponseDeletableTopicResult(
                name=name, error_code=code, error_message=message
            )
            if topic_id is None
            else messages.DeleteTopicsResponseDeletableTopicResult(
                name=name, topic_id=topic_id, error_code=code, error_message=message
            )
            for name, topic_id in named
        ]
    )


def _create_partitions(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.CreatePartitionsRequest)
    return messages.CreatePartitionsResponse(
        results=[
            messages.CreatePartitionsResponseTopicResult(name=t.name, error_code=code, error_message=message)
            for t in request.topics
        ]
    )


def _incremental_alter_configs(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.IncrementalAlterConfigsRequest)
    return messages.IncrementalAlterConfigsResponse(
        responses=[
            messages.IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )


def _alter_configs(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.AlterConfigsRequest)
    return messages.AlterConfigsResponse(
        responses=[
            messages.AlterConfigsResponseResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )


def _elect_leaders(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.ElectLeadersRequest)
    return messages.ElectLeadersResponse(
        error_code=code,
        replica_election_results=[
            messages.ElectLeadersResponseReplicaElectionResult(
                topic=t.topic,
                partition_result=[
                    messages.ElectLeadersResponsePartitionResult(
                        partition_id=p, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topic_partitions or []
        ],
    )


def _alter_reassignments(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.AlterPartitionReassignmentsRequest)
    return messages.AlterPartitionReassignmentsResponse(
        error_code=code,
        error_message=message,
        responses=[
            messages.AlterPartitionReassignmentsResponseReassignableTopicResponse(
                name=t.name,
                partitions=[
                    messages.AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                        partition_index=p.partition_index, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _list_reassignments(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.ListPartitionReassignmentsRequest)
    return messages.ListPartitionReassignmentsResponse(error_code=code, error_message=message)


def _describe_quorum(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.DescribeQuorumRequest)
    return messages.DescribeQuorumResponse(error_code=code, error_message=message)


def _create_acls(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.CreateAclsRequest)
    return messages.CreateAclsResponse(
        results=[
            messages.CreateAclsResponseAclCreationResult(error_code=code, error_message=message)
            for _ in request.creations
        ]
    )


def _delete_acls(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.DeleteAclsRequest)
    return messages.DeleteAclsResponse(
        filter_results=[
            messages.DeleteAclsResponseFilterResult(error_code=code, error_message=message)
            for _ in request.filters
        ]
    )


def _alter_client_quotas(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.AlterClientQuotasRequest)
    return messages.AlterClientQuotasResponse(
        entries=[
            messages.AlterClientQuotasResponseEntryData(
                error_code=code,
                error_message=message,
                entity=[
                    messages.AlterClientQuotasResponseEntityData(
                        entity_type=e.entity_type, entity_name=e.entity_name
                    )
                    for e in entry.entity
                ],
            )
            for entry in request.entries
        ]
    )


def _alter_user_scram_credentials(request: Message, code: int, message: str | None) -> Message:
    assert isinstance(request, messages.AlterUserScramCredentialsRequest)
    # Kafka's getErrorResponse: each user once, sorted.
    users = sorted({d.name for d in request.deletions} | {u.name for u in request.upsertions})
    return messages.AlterUserScramCredentialsResponse(
        results=[
            messages.AlterUserScramCredentialsResponseResult(
                user=user, error_code=code, error_message=message
            )
            for user in users
        ]
    )


def _create_delegation_token(request: Message, code: int, message: str | None) -> Message:
    # Kafka's getErrorResponse: the owner and requester User:ANONYMOUS, the times -1
    return messages.CreateDelegationTokenResponse(
        error_code=code,
        principal_type="User",
        principal_name="ANONYMOUS",
        token_requester_principal_type="User",
        token_requester_principal_name="ANONYMOUS",
        issue_timestamp_ms=-1,
        expiry_timestamp_ms=-1,
        max_timestamp_ms=-1,
    )


def _renew_delegation_token(request: Message, code: int, message: str | None) -> Message:
    return messages.RenewDelegationTokenResponse(error_code=code)


def _expire_delegation_token(request: Message, code: int, message: str | None) -> Message:
    return messages.ExpireDelegationTokenResponse(error_code=code)


#: Error answers by API key: ``(request, error code, message) -> response``.
ERROR_ANSWERS: Final[dict[int, Callable[[Message, int, str | None], Message]]] = {
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _incremental_alter_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
    ApiKey.CREATE_DELEGATION_TOKEN: _create_delegation_token,
    ApiKey.RENEW_DELEGATION_TOKEN: _renew_delegation_token,
    ApiKey.EXPIRE_DELEGATION_TOKEN: _expire_delegation_token,
}


def failure_answer(api_key: int, request: Message, code: int) -> Message:
    """The error answer of :data:`ERROR_ANSWERS` for a request the controller could not carry out
    (it lost its leadership, or its records were not committed in time), with the error's own
    description as message: Kafka's controller answers these with its exception's message."""
    known = ErrorCode.lookup(code)
    return ERROR_ANSWERS[api_key](request, code, known.description if isinstance(known, ErrorCode) else None)


def whole_answer(api_key: int, request: Message, code: int, message: str | None = None) -> Message:
    """The answer of ``request`` failing as a whole with ``code``: its :data:`ERROR_ANSWERS` entry,
    else the response with only its top-level ``error_code`` (and ``error_message`` where the
    response has one) set; the caller knows that the response has a top-level error."""
    if (build := ERROR_ANSWERS.get(api_key)) is not None:
        return build(request, code, message)
    response = messages.RESPONSES[api_key]()
    response.error_code = code  # type: ignore[attr-defined]  # the caller's precondition
    if message is not None and any(spec.name == "error_message" for spec in type(response).FIELDS):
        response.error_message = message  # type: ignore[attr-defined]  # checked just above
    return response
