"""Malformed ACL requests, differential: kafka-wire serve and Apache Kafka 4.4, both with the
StandardAuthorizer (PLAINTEXT, ``super.users=User:ANONYMOUS`` so that the requests reach the
checks of the ACLs themselves), get the same CreateAcls, DescribeAcls and DeleteAcls requests over
raw sockets; each answer is reduced to its error codes (or "closed" when the broker closes the
connection), and both brokers must agree (the main cases are also written out below)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    CreateAclsRequest,
    CreateAclsRequestAclCreation,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsRequestFilter,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.cluster.harness import wait_until
from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire
from tests.e2e.raw import CLIENT_ID, broker_api_versions, exchange

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}

TOPIC, GROUP, CLUSTER = 2, 3, 4
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
READ, ALLOW, DENY = 3, 3, 2


def creation(**fields: object) -> CreateAclsRequestAclCreation:
    base: dict[str, object] = {
        "resource_type": TOPIC,
        "resource_name": "t",
        "resource_pattern_type": LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }
    return CreateAclsRequestAclCreation(**(base | fields))  # type: ignore[arg-type]  # keyword fields


def acl_filter(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "resource_type_filter": ANY,
        "resource_name_filter": None,
        "pattern_type_filter": ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    return base | fields


#: Each probe: a name, the request, and what both brokers answer.
CREATIONS = {
    "valid": creation(),
    "resource ANY": creation(resource_type=ANY),
    "resource UNKNOWN": creation(resource_type=0),
    "resource 99": creation(resource_type=99),
    "pattern MATCH": creation(resource_pattern_type=MATCH),
    "pattern ANY": creation(resource_pattern_type=ANY),
    "pattern 99": creation(resource_pattern_type=99),
    "pattern UNKNOWN": creation(resource_pattern_type=0),
    "operation ANY": creation(operation=1),
    "operation UNKNOWN": creation(operation=0),
    "operation 99": creation(operation=99),
    "permission ANY": creation(permission_type=1),
    "permission UNKNOWN": creation(permission_type=0),
    "permission 99": creation(permission_type=99),
    "host empty": creation(host=""),
    "principal empty": creation(principal=""),
    "principal User:": creation(principal="User:"),
    "principal without type": creation(principal="alice"),
    "empty name": creation(resource_name=""),
    "cluster named other": creation(resource_type=CLUSTER, resource_name="other"),
    "prefixed group": creation(resource_type=GROUP, resource_pattern_type=PREFIXED, resource_name="g-"),
}
DESCRIBES = {
    "match all": acl_filter(),
    "MATCH a name": acl_filter(
        resource_type_filter=TOPIC, resource_name_filter="t", pattern_type_filter=MATCH
    ),
    "resource UNKNOWN": acl_filter(resource_type_filter=0),
    "pattern UNKNOWN": acl_filter(pattern_type_filter=0),
    "operation UNKNOWN": acl_filter(operation=0),
    "permission UNKNOWN": acl_filter(permission_type=0),
    "resource 99": acl_filter(resource_type_filter=99),
    "pattern 99": acl_filter(pattern_type_filter=99),
    "operation 99": acl_filter(operation=99),
    "permission 99": acl_filter(permission_type=99),
}


def ask(broker: BrokerProcess, body: Message, version: int = 3) -> Message | str:
    address = (broker.address.host, broker.address.port)
    outcome = exchange(
        address,
        encode_request(RequestHeader(correlation_id=7, client_id=CLIENT_ID), body, version),
        probe="acl",
    )
    if not outcome.whole_frame:
        return "closed" if outcome.closed else "timed out"
    api_key = {
        CreateAclsRequest: ApiKey.CREATE_ACLS,
        DescribeAclsRequest: ApiKey.DESCRIBE_ACLS,
        DeleteAclsRequest: ApiKey.DELETE_ACLS,
    }[type(body)]
    _, response = decode_response(outcome.reply, api_key, version)
    return response


def settle(broker: BrokerProcess, count: int) -> None:
    """Until the broker describes ``count`` ACLs: a Kafka broker loads committed ACLs into its
    authorizer after answering (kafka-wire answers once they are in its image)."""

    def described() -> bool | None:
        answer = ask(broker, DescribeAclsRequest(**acl_filter()))  # type: ignore[arg-type]  # keyword fields
        assert isinstance(answer, DescribeAclsResponse)
        return sum(len(r.acls) for r in answer.resources) == count or None

    wait_until(f"{count} ACLs described", described, 30.0)


def observe(broker: BrokerProcess) -> dict[str, object]:
    seen: dict[str, object] = {}
    batches = {name: [c] for name, c in CREATIONS.items()} | {
        "valid and ANY": [creation(), creation(operation=1)]
    }
    created = 0
    for name, batch in batches.items():
        answer = ask(broker, CreateAclsRequest(creations=batch))
        seen[f"create {name}"] = (
            answer if isinstance(answer, str) else [(r.error_code, r.error_message) for r in answer.results]  # type: ignore[attr-defined]
        )
        if isinstance(answer, CreateAclsResponse) and all(r.error_code == 0 for r in answer.results):
            created += len(answer.results)
    settle(broker, created)
    for name, f in DESCRIBES.items():
        answer = ask(broker, DescribeAclsRequest(**f))  # type: ignore[arg-type]  # keyword fields
        if isinstance(answer, DescribeAclsResponse):
            seen[f"describe {name}"] = (
                answer.error_code,
                answer.error_message,
                sorted((r.resource_name, r.pattern_type) for r in answer.resources),
            )
        else:
            seen[f"describe {name}"] = answer
        answer = ask(broker, DeleteAclsRequest(filters=[DeleteAclsRequestFilter(**f)]))  # type: ignore[arg-type]
        seen[f"delete {name}"] = (
            [
                (
                    r.error_code,
                    r.error_message,
                    sorted((m.error_code, m.error_message, m.host) for m in r.matching_acls),
                )
                for r in answer.filter_results
            ]
            if isinstance(answer, DeleteAclsResponse)
            else answer
        )
        if isinstance(answer, DeleteAclsResponse) and any(r.matching_acls for r in answer.filter_results):
            settle(broker, created - sum(len(r.matching_acls) for r in answer.filter_results))
            for c in CREATIONS.values():  # put back what a filter deleted
                ask(broker, CreateAclsRequest(creations=[c]))
            settle(broker, created)
            seen[f"after delete {name}"] = sorted(  # the order of the bindings created again
                (r.resource_name, r.pattern_type)
                for r in ask(broker, DescribeAclsRequest(**acl_filter())).resources  # type: ignore[arg-type, union-attr]
            )
    assert isinstance(ask(broker, CreateAclsRequest(creations=[])), CreateAclsResponse)
    return seen


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, BrokerProcess]]:
    ours = kafka_wire(tmp_path_factory.mktemp("acl-errors-kw"), settings=SECURED)
    theirs = apache_kafka(tmp_path_factory.mktemp("acl-errors-kafka"), overrides=dict(SECURED))
    ours.start()
    try:
        theirs.start()
        try:
            yield ours, theirs
        finally:
            theirs.close()
    finally:
        ours.close()


def test_malformed_acl_requests_get_kafkas_answers(brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    ours, theirs = brokers
    kafka = observe(theirs)
    assert observe(ours) == kafka
    codes: dict[str, object] = {
        k: v if isinstance(v, str) else [r[0] for r in v]  # type: ignore[attr-defined]  # lists of (code, message)
        for k, v in kafka.items()
        if k.startswith("create")
    }
    assert codes["create resource UNKNOWN"] == codes["create operation UNKNOWN"] == "closed"
    assert codes["create resource ANY"] == [-1] and codes["create valid and ANY"] == [
        -1,
        -1,
    ]  # UNKNOWN_SERVER_ERROR
    assert codes["create resource 99"] == codes["create principal without type"] == [42]  # INVALID_REQUEST
    assert kafka["describe pattern UNKNOWN"] == kafka["delete permission UNKNOWN"] == "closed"


def test_the_acl_apis_are_served_at_kafkas_versions(brokers: tuple[BrokerProcess, BrokerProcess]) -> None:
    ours, theirs = (broker_api_versions((b.address.host, b.address.port)) for b in brokers)
    for key in (ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS):
        assert ours[key] == theirs[key], key
