"""Where the ACLs are enforced, on a single node with SASL users and the authorizer on: the
answers Kafka's KafkaApis gives a principal without (and then with) the ACLs each API needs."""

from __future__ import annotations

from kafka_wire.broker.security.acls import AclOperation as Op
from kafka_wire.broker.security.acls import PatternType as Pt
from kafka_wire.broker.security.acls import ResourceType as Rt
from kafka_wire.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnRequestTransaction,
    AddPartitionsToTxnResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsRequestTopicRequest,
    DescribeTopicPartitionsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestOffsetForLeaderPartition,
    OffsetForLeaderEpochRequestOffsetForLeaderTopic,
    OffsetForLeaderEpochResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client
from tests.broker.security.engine_users import acl, create_acls, login, secured_engine
from tests.broker.test_engine import create, fetch, produce

TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GAF = ErrorCode.GROUP_AUTHORIZATION_FAILED
BATCH = build_batch([NewRecord(key=None, value=b"v")])


def setup() -> tuple[Client, Client]:
    engine = secured_engine()
    admin = login(engine, 1, "admin")
    create(admin, "orders", 1)
    create(admin, "pay-eu", 1)
    create(admin, "secret", 1)
    return admin, login(engine, 2, "alice")


def metadata(client: Client, *names: str, version: int = 12, auto: bool = False) -> MetadataResponse:
    topics = [MetadataRequestTopic(name=n) for n in names] if names else None
    reply = client.request(MetadataRequest(topics=topics, allow_auto_topic_creation=auto), version)
    assert isinstance(reply.body, MetadataResponse)
    return reply.body


def test_produce_and_fetch_need_write_and_read() -> None:
    admin, alice = setup()
    answer = produce(alice, "orders", BATCH)
    assert answer is not None and answer.responses[0].partition_responses[0].error_code == TAF
    assert fetch(alice, "orders", 0).responses[0].partitions[0].error_code == TAF
    # an unknown topic is not revealed: TOPIC_AUTHORIZATION_FAILED too
    answer = produce(alice, "nowhere", BATCH)
    assert answer is not None and answer.responses[0].partition_responses[0].error_code == TAF
    create_acls(
        admin,
        acl(Rt.TOPIC, "orders", "User:alice", Op.WRITE),
        acl(Rt.TOPIC, "orders", "User:alice", Op.READ),
    )
    answer = produce(alice, "orders", BATCH)
    assert answer is not None and answer.responses[0].partition_responses[0].error_code == 0
    assert fetch(alice, "orders", 0).responses[0].partitions[0].error_code == 0


def test_prefixed_and_deny_acls() -> None:
    admin, alice = setup()
    create_acls(
        admin,
        acl(Rt.TOPIC, "pay-", "User:alice", Op.ALL, pattern=Pt.PREFIXED),
        acl(Rt.TOPIC, "pay-eu", "User:alice", Op.WRITE, permission=2),
    )
    answer = produce(alice, "pay-eu", BATCH)
    assert answer is not None and answer.responses[0].partition_responses[0].error_code == TAF
    assert fetch(alice, "pay-eu", 0).responses[0].partitions[0].error_code == 0


def test_metadata_hides_and_refuses_what_may_not_be_described() -> None:
    admin, alice = setup()
    assert [t.name for t in metadata(alice).topics] == []
    create_acls(admin, acl(Rt.TOPIC, "orders", "User:alice", Op.READ))
    assert [t.name for t in metadata(alice).topics] == ["orders"]
    [orders, secret] = metadata(alice, "orders", "secret").topics
    assert orders.error_code == 0 and secret.error_code == TAF
    # auto-creation needs CREATE on the cluster or the topic
    create_acls(admin, acl(Rt.TOPIC, "new-", "User:alice", Op.DESCRIBE, pattern=Pt.PREFIXED))
    [new] = metadata(alice, "new-one", auto=True).topics
    assert new.error_code == TAF
    create_acls(admin, acl(Rt.TOPIC, "new-", "User:alice", Op.CREATE, pattern=Pt.PREFIXED))
    [new] = metadata(alice, "new-one", auto=True).topics
    assert new.error_code in (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE)
    ops = metadata(alice, "orders").topics[0].topic_authorized_operations
    reply = alice.request(
        MetadataRequest(
            topics=[MetadataRequestTopic(name="orders")], include_topic_authorized_operations=True
        ),
        12,
    )
    assert isinstance(reply.body, MetadataResponse)
    assert reply.body.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert ops == -(2**31)


def test_admin_apis() -> None:
    admin, alice = setup()
    created = create(alice, "mine")
    assert created.topics[0].error_code == TAF
    reply = alice.request(DeleteTopicsRequest(topics=[DeleteTopicsRequestDeleteTopicState(name="orders")]), 6)
    assert isinstance(reply.body, DeleteTopicsResponse) and reply.body.responses[0].error_code == TAF
    reply = alice.request(
        DescribeConfigsRequest(
            resources=[DescribeConfigsRequestResource(resource_type=2, resource_name="orders")]
        )
    )
    assert isinstance(reply.body, DescribeConfigsResponse) and reply.body.results[0].error_code == TAF
    reply = alice.request(
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequestTopic(
                    name="orders", partitions=[ListOffsetsRequestPartition(partition_index=0, timestamp=-1)]
                )
            ],
        )
    )
    assert (
        isinstance(reply.body, ListOffsetsResponse) and reply.body.topics[0].partitions[0].error_code == TAF
    )
    reply = alice.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert isinstance(reply.body, InitProducerIdResponse)
    assert reply.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    create_acls(
        admin,
        acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.CREATE),
        acl(Rt.TOPIC, "*", "User:alice", Op.DELETE),
        acl(Rt.TOPIC, "orders", "User:alice", Op.ALTER_CONFIGS),
        acl(Rt.TOPIC, "orders", "User:alice", Op.WRITE),
    )
    assert create(alice, "mine").topics[0].error_code == 0
    reply = alice.request(
        DescribeConfigsRequest(
            resources=[DescribeConfigsRequestResource(resource_type=2, resource_name="orders")]
        )
    )
    assert isinstance(reply.body, DescribeConfigsResponse) and reply.body.results[0].error_code == 0
    reply = alice.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000))
    assert isinstance(reply.body, InitProducerIdResponse) and reply.body.error_code == 0
    reply = alice.request(DeleteTopicsRequest(topics=[DeleteTopicsRequestDeleteTopicState(name="secret")]), 6)
    assert isinstance(reply.body, DeleteTopicsResponse) and reply.body.responses[0].error_code == 0


def test_group_apis_need_the_group() -> None:
    admin, alice = setup()
    reply = alice.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert isinstance(reply.body, FindCoordinatorResponse) and reply.body.coordinators[0].error_code == GAF
    reply = alice.request(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"))
    assert isinstance(reply.body, HeartbeatResponse) and reply.body.error_code == GAF
    commit = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequestTopic(
                name=n, partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=0)]
            )
            for n in ("orders", "secret")
        ],
    )
    reply = alice.request(commit, 8)
    assert isinstance(reply.body, OffsetCommitResponse)
    assert [p.error_code for t in reply.body.topics for p in t.partitions] == [GAF, GAF]
    create_acls(
        admin, acl(Rt.GROUP, "g", "User:alice", Op.READ), acl(Rt.TOPIC, "orders", "User:alice", Op.READ)
    )
    for _ in range(20):  # __consumer_offsets is created on the first lookup
        reply = alice.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
        assert isinstance(reply.body, FindCoordinatorResponse)
        if reply.body.coordinators[0].error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            break
        alice.engine.advance(100)
    assert isinstance(reply.body, FindCoordinatorResponse) and reply.body.coordinators[0].error_code == 0
    reply = alice.request(commit, 8)
    assert isinstance(reply.body, OffsetCommitResponse)
    assert {t.name: t.partitions[0].error_code for t in reply.body.topics} == {"orders": 0, "secret": TAF}
    reply = alice.request(ListGroupsRequest())
    assert isinstance(reply.body, ListGroupsResponse) and [g.group_id for g in reply.body.groups] == ["g"]
    reply = login(alice.engine, 3, "bob").request(ListGroupsRequest())
    assert isinstance(reply.body, ListGroupsResponse) and reply.body.groups == []


def test_the_other_admin_and_replica_apis() -> None:
    admin, alice = setup()
    reply = alice.request(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequestTopic(
                    name="orders", partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=0)]
                )
            ]
        )
    )
    assert (
        isinstance(reply.body, DeleteRecordsResponse) and reply.body.topics[0].partitions[0].error_code == TAF
    )
    reply = alice.request(
        CreatePartitionsRequest(
            topics=[CreatePartitionsRequestTopic(name="orders", count=2, assignments=None)]
        )
    )
    assert isinstance(reply.body, CreatePartitionsResponse) and reply.body.results[0].error_code == TAF
    reply = alice.request(ElectLeadersRequest(election_type=0, topic_partitions=None))
    assert isinstance(reply.body, ElectLeadersResponse)
    assert reply.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    reply = alice.request(DescribeLogDirsRequest(topics=None))
    assert isinstance(reply.body, DescribeLogDirsResponse)
    assert reply.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and reply.body.results == []
    reply = alice.request(
        DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequestTopicRequest(name=n) for n in ("orders", "secret")]
        )
    )
    assert isinstance(reply.body, DescribeTopicPartitionsResponse)
    assert [t.error_code for t in reply.body.topics] == [TAF, TAF]
    reply = alice.request(
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderEpochRequestOffsetForLeaderPartition(partition=0, leader_epoch=0)
                    ],
                )
            ],
        )
    )
    assert (
        isinstance(reply.body, OffsetForLeaderEpochResponse)
        and reply.body.topics[0].partitions[0].error_code == TAF
    )
    create_acls(admin, acl(Rt.TOPIC, "orders", "User:alice", Op.ALL))
    reply = alice.request(
        CreatePartitionsRequest(
            topics=[CreatePartitionsRequestTopic(name="orders", count=2, assignments=None)]
        )
    )
    assert isinstance(reply.body, CreatePartitionsResponse) and reply.body.results[0].error_code == 0
    reply = alice.request(DescribeTopicPartitionsRequest(topics=[]))
    assert isinstance(reply.body, DescribeTopicPartitionsResponse)
    assert [t.name for t in reply.body.topics] == ["orders"]  # listing all: only what it may describe
    assert reply.body.topics[0].topic_authorized_operations == 0b0000_1101_1111_1000  # ALL on the topic


def test_delete_on_the_cluster_deletes_any_topic() -> None:
    admin, alice = setup()
    create_acls(admin, acl(Rt.CLUSTER, "kafka-cluster", "User:alice", Op.DELETE))
    reply = alice.request(DeleteTopicsRequest(topics=[DeleteTopicsRequestDeleteTopicState(name="secret")]), 6)
    assert isinstance(reply.body, DeleteTopicsResponse) and reply.body.responses[0].error_code == 0


def test_transaction_verification_needs_cluster_action() -> None:
    admin, alice = setup()
    verify = AddPartitionsToTxnRequest(
        transactions=[
            AddPartitionsToTxnRequestTransaction(
                transactional_id="t",
                producer_id=1,
                producer_epoch=0,
                verify_only=True,
                topics=[AddPartitionsToTxnRequestTopic(name="orders", partitions=[0])],
            )
        ]
    )
    reply = alice.request(verify, 4)
    assert isinstance(reply.body, AddPartitionsToTxnResponse)
    assert reply.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    reply = admin.request(verify, 4)
    assert isinstance(reply.body, AddPartitionsToTxnResponse)
    assert reply.body.error_code != ErrorCode.CLUSTER_AUTHORIZATION_FAILED
