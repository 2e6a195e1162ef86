"""The ACL checks of KIP-932 share groups (``apis/guarded_share.py``, ``security/coordinator_checks.py``,
``share/describe.py``, ``share/admin.py``): ShareGroupHeartbeat and
ShareGroupDescribe need the group, ShareFetch and ShareAcknowledge READ on the group and on each
topic, the share group offsets APIs the group and each topic, as Kafka's ``KafkaApis`` checks them."""

from __future__ import annotations

import uuid

from kafka_wire.broker.security.acls import AclOperation as Op
from kafka_wire.broker.security.acls import ResourceType as Rt
from kafka_wire.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
    ErrorCode,
    MetadataRequest,
    MetadataResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestAcknowledgementBatch,
    ShareAcknowledgeRequestAcknowledgePartition,
    ShareAcknowledgeRequestAcknowledgeTopic,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchRequestFetchPartition,
    ShareFetchRequestFetchTopic,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.broker.engine import Client
from tests.broker.security.engine_users import acl, create_acls, login, secured_engine
from tests.broker.test_engine import create
from tests.broker.test_engine_groups import find_coordinator

GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def topic_ids(client: Client) -> dict[str, uuid.UUID]:
    reply = client.request(MetadataRequest(topics=None), 12).body
    assert isinstance(reply, MetadataResponse)
    return {t.name or "": t.topic_id for t in reply.topics}


def heartbeat(client: Client, topics: list[str]) -> ShareGroupHeartbeatResponse:
    reply = client.request(
        ShareGroupHeartbeatRequest(
            group_id="sg", member_id="m1", member_epoch=0, subscribed_topic_names=topics
        ),
        1,
    ).body
    assert isinstance(reply, ShareGroupHeartbeatResponse)
    return reply


def share_fetch(client: Client, ids: list[uuid.UUID]) -> ShareFetchResponse:
    reply = client.request(
        ShareFetchRequest(
            group_id="sg",
            member_id="m1",
            share_session_epoch=0,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=100,
            batch_size=100,
            topics=[
                ShareFetchRequestFetchTopic(
                    topic_id=i, partitions=[ShareFetchRequestFetchPartition(partition_index=0)]
                )
                for i in ids
            ],
        ),
        1,
    ).body
    assert isinstance(reply, ShareFetchResponse)
    return reply


def test_share_group_apis_need_the_group_and_its_topics() -> None:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    create(admin, "orders", 1)
    create(admin, "secret", 1)
    alice = login(engine, 2, "alice")
    ids = topic_ids(admin)

    assert heartbeat(alice, ["orders"]).error_code == GAF
    assert share_fetch(alice, [ids["orders"]]).error_code == GAF
    described = alice.request(ShareGroupDescribeRequest(group_ids=["sg"]), 1).body
    assert isinstance(described, ShareGroupDescribeResponse) and described.groups[0].error_code == GAF
    ack = alice.request(
        ShareAcknowledgeRequest(
            group_id="sg",
            member_id="m1",
            share_session_epoch=1,
            topics=[
                ShareAcknowledgeRequestAcknowledgeTopic(
                    topic_id=ids["secret"],
                    partitions=[
                        ShareAcknowledgeRequestAcknowledgePartition(
                            partition_index=0,
                            acknowledgement_batches=[
                                ShareAcknowledgeRequestAcknowledgementBatch(
                                    first_offset=0, last_offset=0, acknowledge_types=[1]
                                )
                            ],
                        )
                    ],
                )
            ],
        ),
        1,
    ).body
    assert isinstance(ack, ShareAcknowledgeResponse) and ack.error_code == GAF

    create_acls(
        admin,
        acl(Rt.GROUP, "sg", "User:alice", Op.READ),
        acl(Rt.TOPIC, "orders", "User:alice", Op.READ),
    )
    # a subscribed topic it may not describe
    denied = heartbeat(alice, ["orders", "secret"])
    assert denied.error_code == TAF and "secret" in (denied.error_message or "")
    # READ on the group, on "orders" but not on "secret": the secret partition is refused alone
    answer = share_fetch(alice, [ids["orders"], ids["secret"]])
    assert answer.error_code == ErrorCode.NONE
    errors = {t.topic_id: [p.error_code for p in t.partitions] for t in answer.responses}
    assert errors[ids["secret"]] == [TAF]
    assert errors.get(ids["orders"], [ErrorCode.NONE]) == [ErrorCode.NONE]
    assert all(
        p.records == b"" for t in answer.responses if t.topic_id == ids["secret"] for p in t.partitions
    )


def test_share_group_offsets_apis_need_the_group_and_its_topics() -> None:
    """DescribeShareGroupOffsets: DESCRIBE on the group and on each topic; AlterShareGroupOffsets
    READ on the group, DeleteShareGroupOffsets DELETE on it; both READ on each topic."""
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    create(admin, "orders", 1)
    create(admin, "secret", 1)
    alice = login(engine, 2, "alice")
    find_coordinator(admin, "sg")

    def describe() -> DescribeShareGroupOffsetsResponse:
        reply = alice.request(
            DescribeShareGroupOffsetsRequest(
                groups=[
                    DescribeShareGroupOffsetsRequestGroup(
                        group_id="sg",
                        topics=[
                            DescribeShareGroupOffsetsRequestTopic(topic_name="orders", partitions=[0]),
                            DescribeShareGroupOffsetsRequestTopic(topic_name="secret", partitions=[0]),
                        ],
                    )
                ]
            ),
            1,
        ).body
        assert isinstance(reply, DescribeShareGroupOffsetsResponse)
        return reply

    def alter() -> AlterShareGroupOffsetsResponse:
        reply = alice.request(
            AlterShareGroupOffsetsRequest(
                group_id="sg",
                topics=[
                    AlterShareGroupOffsetsRequestTopic(
                        topic_name=name,
                        partitions=[
                            AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)
                        ],
                    )
                    for name in ("orders", "secret")
                ],
            ),
            0,
        ).body
        assert isinstance(reply, AlterShareGroupOffsetsResponse)
        return reply

    def delete() -> DeleteShareGroupOffsetsResponse:
        reply = alice.request(
            DeleteShareGroupOffsetsRequest(
                group_id="sg",
                topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=n) for n in ("orders", "secret")],
            ),
            0,
        ).body
        assert isinstance(reply, DeleteShareGroupOffsetsResponse)
        return reply

    assert describe().groups[0].error_code == GAF
    assert (alter().error_code, delete().error_code) == (GAF, GAF)
    create_acls(
        admin,
        acl(Rt.GROUP, "sg", "User:alice", Op.DESCRIBE),
        acl(Rt.TOPIC, "orders", "User:alice", Op.DESCRIBE),
    )
    described = describe().groups[0]
    assert described.error_code == ErrorCode.NONE
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in described.topics] == [
        ("orders", [ErrorCode.NONE]),
        ("secret", [TAF]),
    ]
    assert (alter().error_code, delete().error_code) == (GAF, GAF)  # DESCRIBE is not enough
    create_acls(
        admin,
        acl(Rt.GROUP, "sg", "User:alice", Op.READ),
        acl(Rt.GROUP, "sg", "User:alice", Op.DELETE),
        acl(Rt.TOPIC, "orders", "User:alice", Op.READ),
    )
    engine.advance(0)
    altered = alter()
    assert altered.error_code == ErrorCode.NONE
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in altered.responses] == [
        ("orders", [ErrorCode.NONE]),
        ("secret", [TAF]),
    ]
    deleted = delete()
    assert deleted.error_code == ErrorCode.NONE
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        ("orders", ErrorCode.NONE),
        ("secret", TAF),
    ]
