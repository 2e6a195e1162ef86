"""The ACL checks of a controller listener's requests (``security/controller_checks.py``), as
Kafka's ``ControllerApis`` makes them."""

from __future__ import annotations

import pytest

from kafka_wire import messages
from kafka_wire.broker.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafka_wire.broker.security.controller_checks import CLUSTER_OPERATIONS, refusal
from kafka_wire.codec.structs import Message, Struct
from kafka_wire.messages import ApiKey, ErrorCode
from tests.broker.security.test_authorizer import authorizer, topic

HOST = "127.0.0.1"
CLUSTER_ACTION = AclBinding(
    ResourceType.CLUSTER,
    "kafka-cluster",
    PatternType.LITERAL,
    "User:broker",
    "*",
    AclOperation.CLUSTER_ACTION,
    AclPermissionType.ALLOW,
)


@pytest.mark.parametrize("key", sorted(CLUSTER_OPERATIONS))
def test_cluster_apis_need_their_operation_on_the_cluster(key: int) -> None:
    checks = authorizer(CLUSTER_ACTION)
    request = messages.REQUESTS[key]()
    answer = refusal(checks, "alice", HOST, key, request)
    assert answer is not None
    # an empty request's answer has no item to carry the code (CreateAcls, ...)
    assert set(_codes(answer)) == ({ErrorCode.CLUSTER_AUTHORIZATION_FAILED} if _codes(answer) else set())
    if hasattr(answer, "error_code"):
        assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert refusal(checks, "admin", HOST, key, request) is None  # a super user
    granted = CLUSTER_OPERATIONS[key] == AclOperation.CLUSTER_ACTION
    assert (refusal(checks, "broker", HOST, key, request) is None) == granted


def test_the_quorums_requests_need_cluster_action() -> None:
    checks = authorizer()
    for key in (
        ApiKey.VOTE,
        ApiKey.FETCH,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ENVELOPE,
    ):
        answer = refusal(checks, "ANONYMOUS", HOST, key, messages.REQUESTS[key]())
        assert answer is not None and answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED  # type: ignore[attr-defined]


def test_topics_need_their_operation_on_each_topic_or_the_cluster() -> None:
    create = messages.CreateTopicsRequest(
        topics=[messages.CreateTopicsRequestCreatableTopic(name=n) for n in ("a", "b")]
    )
    only_a = authorizer(topic("a", AclOperation.CREATE))
    refused = refusal(only_a, "alice", HOST, ApiKey.CREATE_TOPICS, create)
    assert refused is not None
    assert set(_codes(refused)) == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    both = authorizer(topic("a", AclOperation.CREATE), topic("b", AclOperation.CREATE))
    assert refusal(both, "alice", HOST, ApiKey.CREATE_TOPICS, create) is None
    partitions = messages.CreatePartitionsRequest(topics=[messages.CreatePartitionsRequestTopic(name="a")])
    assert refusal(only_a, "alice", HOST, ApiKey.CREATE_PARTITIONS, partitions) is not None
    assert (
        refusal(
            authorizer(topic("a", AclOperation.ALTER)), "alice", HOST, ApiKey.CREATE_PARTITIONS, partitions
        )
        is None
    )


def test_config_resources_need_alter_configs_where_kafka_checks_it() -> None:
    def configs(resource_type: int, name: str) -> Message:
        return messages.IncrementalAlterConfigsRequest(
            resources=[
                messages.IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=resource_type, resource_name=name
                )
            ]
        )

    checks = authorizer(topic("t", AclOperation.ALTER_CONFIGS))
    key = ApiKey.INCREMENTAL_ALTER_CONFIGS
    assert refusal(checks, "alice", HOST, key, configs(2, "t")) is None
    broker = refusal(checks, "alice", HOST, key, configs(4, "1"))
    assert broker is not None and _codes(broker) == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    group = refusal(checks, "alice", HOST, key, configs(32, "g"))
    assert group is not None and _codes(group) == [ErrorCode.GROUP_AUTHORIZATION_FAILED]


def _codes(answer: Message) -> list[int]:
    """Every error code in ``answer`` (top level and per item)."""
    found: list[int] = []

    def walk(value: object) -> None:
        if isinstance(value, Struct):
            for spec in type(value).FIELDS:
                item = getattr(value, spec.name)
                if spec.name == "error_code" and isinstance(item, int) and item:
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(answer)
    return found
