"""ACLs in a three-node kafka-wire cluster: metadata records every node applies. With the
StandardAuthorizer and ``allow.everyone.if.no.acl.found=true`` (the nodes speak PLAINTEXT, as
``User:ANONYMOUS``, to each other and to their clients), a DENY created through one node is
described by every node (each answers DescribeAcls from its own image), enforced by the
partition's leader wherever the client connects, and still there on every node after all of
them restarted."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateAclsRequest,
    CreateAclsRequestAclCreation,
    CreateAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    ErrorCode,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.records import NewRecord, build_batch
from tests.cluster.conftest import ClusterFactory
from tests.cluster.harness import HOST, LocalCluster, wait_until
from tests.e2e.raw import CLIENT_ID, exchange

pytestmark = pytest.mark.cluster

SECURED = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
#: Once a topic has an ACL, allow.everyone.if.no.acl.found no longer opens it: everything allowed
#: but WRITE, which is denied.
ALLOW_ALL = CreateAclsRequestAclCreation(
    resource_type=2,  # TOPIC
    resource_name="locked",
    resource_pattern_type=3,  # LITERAL
    principal="User:*",
    host="*",
    operation=2,  # ALL
    permission_type=3,  # ALLOW
)
DENY_WRITE = CreateAclsRequestAclCreation(
    resource_type=2,  # TOPIC
    resource_name="locked",
    resource_pattern_type=3,  # LITERAL
    principal="User:*",
    host="*",
    operation=4,  # WRITE
    permission_type=2,  # DENY
)


def ask(port: int, body: Message, api_key: int, version: int) -> Message | None:
    outcome = exchange(
        (HOST, port),
        encode_request(RequestHeader(correlation_id=3, client_id=CLIENT_ID), body, version),
        probe="acl",
    )
    if not outcome.whole_frame:
        return None
    return decode_response(outcome.reply, api_key, version)[1]


def described(port: int) -> list[str] | None:
    answer = ask(
        port,
        DescribeAclsRequest(
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        ),
        29,
        3,
    )
    if not isinstance(answer, DescribeAclsResponse) or answer.error_code:
        return None
    return [
        f"{r.resource_name} {a.principal} {a.operation} {a.permission_type}"
        for r in answer.resources
        for a in r.acls
    ]


def every_node_describes(cluster: LocalCluster, expected: list[str]) -> None:
    for node in cluster.alive():
        wait_until(f"node {node.node_id} describes the ACL", _describes(node.port, expected), 30.0)


def _describes(port: int, expected: list[str]) -> Callable[[], bool | None]:
    return lambda: described(port) == expected or None


def test_every_node_enforces_the_same_acls_after_a_restart(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(SECURED)
    cluster.start_all()
    cluster.create_topic("locked", 1)
    created = ask(cluster.nodes[1].port, CreateAclsRequest(creations=[ALLOW_ALL, DENY_WRITE]), 30, 3)
    assert isinstance(created, CreateAclsResponse) and [r.error_code for r in created.results] == [0, 0]
    expected = ["locked User:* 2 3", "locked User:* 4 2"]
    every_node_describes(cluster, expected)
    leader = cluster.wait_leader("locked", 0)
    batch = build_batch([NewRecord(key=None, value=b"v")])
    produce = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="locked", partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    answer = ask(cluster.nodes[leader].port, produce, 0, 9)
    assert isinstance(answer, ProduceResponse)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    cluster.stop_all()
    cluster.start_all()
    every_node_describes(cluster, expected)
