"""CreateAcls, DescribeAcls and DeleteAcls on a single node: ACLs are metadata records, checked
by the controller's ACL part, survive a restart, and need ALTER / DESCRIBE on the cluster."""

from __future__ import annotations

from kafka_wire.broker.security.acls import AclOperation as Op
from kafka_wire.broker.security.acls import PatternType as Pt
from kafka_wire.broker.security.acls import ResourceType as Rt
from kafka_wire.messages import (
    DeleteAclsRequest,
    DeleteAclsRequestFilter,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    ErrorCode,
)
from tests.broker.engine import Client, Engine
from tests.broker.security.engine_users import USERS, acl, create_acls, login, secured_engine


def describe(client: Client, **fields: object) -> DescribeAclsResponse:
    base: dict[str, object] = {
        "resource_type_filter": Rt.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": Pt.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": Op.ANY,
        "permission_type": 1,
    }
    base.update(fields)
    reply = client.request(DescribeAclsRequest(**base))  # type: ignore[arg-type]  # keyword fields
    assert isinstance(reply.body, DescribeAclsResponse)
    return reply.body


def listed(response: DescribeAclsResponse) -> list[tuple[int, str, int, str, int, int]]:
    return [
        (r.resource_type, r.resource_name, r.pattern_type, a.principal, a.operation, a.permission_type)
        for r in response.resources
        for a in r.acls
    ]


def test_without_an_authorizer_the_acl_apis_answer_security_disabled() -> None:
    engine = secured_engine(authorizer=False)
    admin = login(engine, 1, "admin")
    assert create_acls(admin, acl(Rt.TOPIC, "t", "User:alice", Op.READ)).results[0].error_code == (
        ErrorCode.SECURITY_DISABLED
    )
    assert describe(admin).error_code == ErrorCode.SECURITY_DISABLED


def test_created_acls_are_described_filtered_and_deleted() -> None:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    answer = create_acls(
        admin,
        acl(Rt.TOPIC, "orders", "User:alice", Op.READ),
        acl(Rt.TOPIC, "ord", "User:alice", Op.WRITE, pattern=Pt.PREFIXED),
        acl(Rt.GROUP, "g", "User:bob", Op.READ, permission=2),
        acl(Rt.TOPIC, "orders", "User:alice", Op.READ),  # a duplicate: written once
        acl(99, "x", "User:alice", Op.READ),
        acl(Rt.TOPIC, "x", "alice", Op.READ),
        acl(Rt.CLUSTER, "x", "User:alice", Op.READ),
        acl(Rt.TOPIC, "", "User:alice", Op.READ),
    )
    assert [r.error_code for r in answer.results] == [0, 0, 0, 0] + [ErrorCode.INVALID_REQUEST] * 4
    assert answer.results[4].error_message == "Invalid resourceType UNKNOWN"
    # ANY or MATCH in one binding: Kafka cannot build it, and the whole request fails
    answer = create_acls(
        admin, acl(Rt.TOPIC, "y", "User:alice", Op.READ), acl(Rt.TOPIC, "y", "User:alice", Op.ANY)
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.UNKNOWN_SERVER_ERROR] * 2
    assert len(listed(describe(admin))) == 3
    # MATCH: the literal name and every prefix of it
    assert listed(
        describe(
            admin, resource_type_filter=Rt.TOPIC, resource_name_filter="orders", pattern_type_filter=Pt.MATCH
        )
    ) == [
        (Rt.TOPIC, "ord", Pt.PREFIXED, "User:alice", Op.WRITE, 3),
        (Rt.TOPIC, "orders", Pt.LITERAL, "User:alice", Op.READ, 3),
    ]
    assert listed(describe(admin, resource_name_filter="orders", pattern_type_filter=Pt.ANY)) == [
        (Rt.TOPIC, "orders", Pt.LITERAL, "User:alice", Op.READ, 3)
    ]
    assert listed(describe(admin, principal_filter="User:bob")) == [
        (Rt.GROUP, "g", Pt.LITERAL, "User:bob", Op.READ, 2)
    ]
    assert describe(admin, pattern_type_filter=99).resources == []  # a code Kafka does not know
    reply = admin.request(
        DeleteAclsRequest(
            filters=[
                DeleteAclsRequestFilter(
                    resource_type_filter=Rt.TOPIC,
                    resource_name_filter=None,
                    pattern_type_filter=Pt.ANY,
                    principal_filter=None,
                    host_filter=None,
                    operation=Op.ANY,
                    permission_type=1,
                ),
                DeleteAclsRequestFilter(
                    resource_type_filter=99, pattern_type_filter=Pt.ANY, operation=Op.ANY, permission_type=1
                ),
            ]
        )
    )
    assert isinstance(reply.body, DeleteAclsResponse)
    first, second = reply.body.filter_results
    assert len(first.matching_acls) == 2 and first.error_code == 0
    assert second.error_code == ErrorCode.INVALID_REQUEST
    assert listed(describe(admin)) == [(Rt.GROUP, "g", Pt.LITERAL, "User:bob", Op.READ, 2)]


def test_a_filter_naming_unknown_closes_the_connection() -> None:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    admin.send(
        DescribeAclsRequest(
            resource_type_filter=0,
            resource_name_filter=None,
            pattern_type_filter=Pt.ANY,
            principal_filter=None,
            host_filter=None,
            operation=Op.ANY,
            permission_type=1,
        )
    )
    admin.responses()
    assert 1 in engine.closed
    assert describe(login(engine, 2, "admin")).error_code == 0  # the others are served


def test_acl_apis_need_alter_and_describe_on_the_cluster() -> None:
    engine = secured_engine()
    alice = login(engine, 2, "alice")
    assert create_acls(alice, acl(Rt.TOPIC, "t", "User:alice", Op.READ)).results[0].error_code == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    )
    assert describe(alice).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    admin = login(engine, 1, "admin")
    create_acls(admin, acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.ALTER))
    assert describe(alice).error_code == 0  # ALTER implies DESCRIBE
    assert create_acls(alice, acl(Rt.TOPIC, "t", "User:alice", Op.READ)).results[0].error_code == 0


def test_acls_survive_a_restart() -> None:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    create_acls(admin, acl(Rt.TOPIC, "orders", "User:alice", Op.READ))
    again = Engine(engine.config, storage=engine.storage)
    assert listed(describe(login(again, 1, "admin"))) == [
        (Rt.TOPIC, "orders", Pt.LITERAL, "User:alice", Op.READ, 3)
    ]
    assert set(USERS) >= {"alice"}


def test_the_image_keeps_acls_through_a_snapshot() -> None:
    import uuid

    from kafka_wire.broker.controller.image import MetadataImage
    from kafka_wire.broker.controller.records import decode_record, encode_record
    from kafka_wire.messages import AccessControlEntryRecord, RemoveAccessControlEntryRecord

    image = MetadataImage()
    records = [
        AccessControlEntryRecord(
            id=uuid.UUID(int=i + 2),
            resource_type=Rt.TOPIC,
            resource_name=f"t{i}",
            pattern_type=Pt.LITERAL,
            principal="User:alice",
            host="*",
            operation=Op.READ,
            permission_type=3,
        )
        for i in range(3)
    ]
    image.apply_batch(0, [decode_record(encode_record(r)) for r in records])
    image.apply_batch(1, [RemoveAccessControlEntryRecord(id=uuid.UUID(int=3))])
    snapshot = [decode_record(encode_record(r)) for r in image.snapshot_records()]
    again = MetadataImage()
    again.load_snapshot(1, snapshot)
    assert [b.resource_name for b in again.acls_image.acls.values()] == ["t0", "t2"]
    assert again.acls_image.acls == image.acls_image.acls
