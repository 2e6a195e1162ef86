"""What a user without ACLs gets from every API, differential: kafka-wire serve and Apache Kafka
4.4, both with SASL PLAIN users and the StandardAuthorizer (``super.users=User:admin``), get the
same requests from ``alice`` at the same versions, first without ACLs, then with a few granted
(:data:`ROUNDS`); each answer is reduced to its error codes, authorized operations, list lengths
and entry names (``acl_answers.reduced``) and both brokers must agree."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafka_wire import messages as m
from kafka_wire.codec.structs import Message
from tests.cluster.harness import wait_until
from tests.e2e.acl_answers import Session, reduced
from tests.e2e.brokers import BrokerProcess
from tests.e2e.test_acls import USERS, kafka_secured, kafka_wire_secured

ORDERS = "orders"


def requests() -> dict[str, tuple[Message, int]]:
    """Each probe: a name, the request and its version."""
    return {
        # tokens made in earlier rounds (each round starts once its ACLs, recorded after them,
        # are described: the broker's image has the tokens too)
        "describe tokens": (m.DescribeDelegationTokenRequest(owners=None), 3),
        "create a token": (m.CreateDelegationTokenRequest(), 3),
        "create carol's token": (
            m.CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="carol"),
            3,
        ),
        "metadata all": (m.MetadataRequest(topics=None), 12),
        "metadata named": (
            m.MetadataRequest(
                topics=[m.MetadataRequestTopic(name=n) for n in (ORDERS, "nowhere")],
                allow_auto_topic_creation=True,
            ),
            12,
        ),
        "produce": (
            m.ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    m.ProduceRequestTopicProduceData(
                        name=n,
                        partition_data=[m.ProduceRequestPartitionProduceData(index=0, records=_batch())],
                    )
                    for n in (ORDERS, "nowhere")
                ],
            ),
            9,
        ),
        "fetch": (
            m.FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                session_epoch=-1,
                topics=[
                    m.FetchRequestTopic(
                        topic=ORDERS,
                        partitions=[
                            m.FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                        ],
                    )
                ],
            ),
            12,
        ),
        "list offsets": (
            m.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    m.ListOffsetsRequestTopic(
                        name=ORDERS,
                        partitions=[m.ListOffsetsRequestPartition(partition_index=0, timestamp=-1)],
                    )
                ],
            ),
            7,
        ),
        "create topics": (
            m.CreateTopicsRequest(
                topics=[
                    m.CreateTopicsRequestCreatableTopic(name="mine", num_partitions=1, replication_factor=1)
                ],
                timeout_ms=5000,
            ),
            7,
        ),
        "create topics it may create": (
            m.CreateTopicsRequest(
                topics=[
                    m.CreateTopicsRequestCreatableTopic(name="alices", num_partitions=1, replication_factor=1)
                ],
                timeout_ms=5000,
                validate_only=True,
            ),
            7,
        ),
        "delete topics": (
            m.DeleteTopicsRequest(
                topics=[m.DeleteTopicsRequestDeleteTopicState(name=ORDERS)], timeout_ms=5000
            ),
            6,
        ),
        "create partitions": (
            m.CreatePartitionsRequest(
                topics=[m.CreatePartitionsRequestTopic(name=ORDERS, count=2, assignments=None)],
                timeout_ms=5000,
            ),
            3,
        ),
        "describe configs": (
            m.DescribeConfigsRequest(
                resources=[
                    m.DescribeConfigsRequestResource(
                        resource_type=2, resource_name=ORDERS, configuration_keys=None
                    ),
                    m.DescribeConfigsRequestResource(
                        resource_type=4, resource_name="1", configuration_keys=None
                    ),
                ]
            ),
            4,
        ),
        "incremental alter configs": (
            m.IncrementalAlterConfigsRequest(
                resources=[
                    m.IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=2,
                        resource_name=ORDERS,
                        configs=[
                            m.IncrementalAlterConfigsRequestAlterableConfig(
                                name="retention.ms", config_operation=0, value="1000"
                            )
                        ],
                    )
                ]
            ),
            1,
        ),
        "incremental alter group configs": (
            m.IncrementalAlterConfigsRequest(
                resources=[
                    m.IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=32,
                        resource_name=g,
                        configs=[
                            m.IncrementalAlterConfigsRequestAlterableConfig(
                                name="consumer.session.timeout.ms", config_operation=0, value="45000"
                            )
                        ],
                    )
                    for g in ("g",)  # (READ only: refused in every round)
                ],
                validate_only=True,
            ),
            1,
        ),
        "delete records": (
            m.DeleteRecordsRequest(
                topics=[
                    m.DeleteRecordsRequestTopic(
                        name=ORDERS, partitions=[m.DeleteRecordsRequestPartition(partition_index=0, offset=0)]
                    )
                ],
                timeout_ms=5000,
            ),
            2,
        ),
        "find coordinator group": (m.FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4),
        "find coordinator txn": (m.FindCoordinatorRequest(key_type=1, coordinator_keys=["t"]), 4),
        "heartbeat": (m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4),
        "offset commit": (
            m.OffsetCommitRequest(
                group_id="g",
                generation_id_or_member_epoch=-1,
                topics=[
                    m.OffsetCommitRequestTopic(
                        name=ORDERS,
                        partitions=[m.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)],
                    )
                ],
            ),
            8,
        ),
        "offset fetch": (
            m.OffsetFetchRequest(groups=[m.OffsetFetchRequestGroup(group_id="g", topics=None)]),
            8,
        ),
        "describe groups": (m.DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), 5),
        "describe groups h": (m.DescribeGroupsRequest(groups=["h"], include_authorized_operations=True), 5),
        "metadata all operations": (
            m.MetadataRequest(topics=None, include_topic_authorized_operations=True),
            12,
        ),
        "list groups": (m.ListGroupsRequest(), 4),
        "delete groups": (m.DeleteGroupsRequest(groups_names=["g"]), 2),
        "init producer id": (m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4),
        "init producer id txn": (
            m.InitProducerIdRequest(transactional_id="t", transaction_timeout_ms=1000),
            4,
        ),
        "end txn": (
            m.EndTxnRequest(transactional_id="t", producer_id=1, producer_epoch=0, committed=True),
            3,
        ),
        "add offsets to txn": (
            m.AddOffsetsToTxnRequest(transactional_id="t", producer_id=1, producer_epoch=0, group_id="g"),
            3,
        ),
        "describe transactions": (m.DescribeTransactionsRequest(transactional_ids=["t"]), 0),
        "list transactions": (m.ListTransactionsRequest(), 1),
        "describe log dirs": (m.DescribeLogDirsRequest(topics=None), 4),
        "describe producers": (
            m.DescribeProducersRequest(
                topics=[m.DescribeProducersRequestTopicRequest(name=ORDERS, partition_indexes=[0])]
            ),
            0,
        ),
        "elect leaders": (m.ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=5000), 2),
        "list partition reassignments": (
            m.ListPartitionReassignmentsRequest(topics=None, timeout_ms=5000),
            0,
        ),
        "describe cluster": (m.DescribeClusterRequest(include_cluster_authorized_operations=True), 1),
        "describe topic partitions": (
            m.DescribeTopicPartitionsRequest(
                topics=[m.DescribeTopicPartitionsRequestTopicRequest(name=n) for n in (ORDERS, "nowhere")]
            ),
            0,
        ),
        "offset for leader epoch": (
            m.OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    m.OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                        topic=ORDERS,
                        partitions=[
                            m.OffsetForLeaderEpochRequestOffsetForLeaderPartition(partition=0, leader_epoch=0)
                        ],
                    )
                ],
            ),
            4,
        ),
        "metadata with operations": (
            m.MetadataRequest(
                topics=[m.MetadataRequestTopic(name=ORDERS)],
                include_cluster_authorized_operations=True,
                include_topic_authorized_operations=True,
            ),
            10,
        ),
        "describe acls": (
            m.DescribeAclsRequest(
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            ),
            3,
        ),
    }


def _finds_coordinator(admin: Session, key_type: int) -> Callable[[], bool | None]:
    def found() -> bool | None:
        answer = admin.request(m.FindCoordinatorRequest(key_type=key_type, coordinator_keys=["warm"]), 4)
        ok = isinstance(answer, m.FindCoordinatorResponse) and answer.coordinators[0].error_code == 0
        return ok or None

    return found


def _gets_producer_id(admin: Session, transactional_id: str | None) -> Callable[[], bool | None]:
    def got() -> bool | None:
        answer = admin.request(
            m.InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000), 4
        )
        return (isinstance(answer, m.InitProducerIdResponse) and answer.error_code == 0) or None

    return got


def _describes_grants(admin: Session, count: int) -> Callable[[], bool | None]:
    def described() -> bool | None:
        answer = admin.request(
            m.DescribeAclsRequest(
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter="User:alice",
                host_filter=None,
                operation=1,
                permission_type=1,
            ),
            3,
        )
        assert isinstance(answer, m.DescribeAclsResponse)
        return sum(len(r.acls) for r in answer.resources) == count or None

    return described


def _normalized(answer: Message) -> Message:
    """What Kafka leaves unordered, sorted (DescribeAcls' resources, ElectLeaders' and Produce's
    topics come from hash maps); the
    internal topics left out of DescribeLogDirs (how many partitions they have is no ACL's doing)."""
    if isinstance(answer, m.DescribeAclsResponse):
        answer.resources.sort(key=lambda r: (r.resource_type, r.resource_name, r.pattern_type))
        for r in answer.resources:
            r.acls.sort(key=lambda a: (a.principal, a.host, a.operation, a.permission_type))
    if isinstance(answer, m.ProduceResponse):
        answer.responses.sort(key=lambda r: r.name)
    if isinstance(answer, m.ElectLeadersResponse):
        answer.replica_election_results.sort(key=lambda r: r.topic)
    if isinstance(answer, m.DescribeLogDirsResponse):
        for result in answer.results:
            result.topics = [t for t in result.topics if not t.name.startswith("__")]
    return answer


def _batch() -> bytes:
    from kafka_wire.records import NewRecord, build_batch

    return build_batch([NewRecord(key=None, value=b"v")])


#: What the super user grants alice before each round: (resource type, name, operation,
#: permission), added to what the rounds before granted.
ROUNDS: dict[str, list[tuple[int, str, int, int]]] = {
    "without ACLs": [],
    "with ACLs": [
        (2, ORDERS, 3, 3),  # TOPIC orders READ
        (2, ORDERS, 10, 3),  # TOPIC orders DESCRIBE_CONFIGS
        (3, "g", 3, 3),  # GROUP g READ
        (4, "kafka-cluster", 8, 3),  # CLUSTER DESCRIBE
        (5, "t", 8, 3),  # TRANSACTIONAL_ID t DESCRIBE
        (2, "alices", 5, 3),  # TOPIC alices CREATE (not DESCRIBE_CONFIGS)
        (3, "h", 2, 3),  # GROUP h ALL
        (7, "User:carol", 13, 3),  # USER carol CREATE_TOKENS
    ],
    # everything on the cluster but DELETE (a DENY), and WRITE on the transactional id t
    # and DESCRIBE_TOKENS on carol
    "with the cluster": [
        (4, "kafka-cluster", 2, 3),
        (4, "kafka-cluster", 6, 2),
        (5, "t", 4, 3),
        (7, "User:carol", 14, 3),
    ],
}


def observe(broker: BrokerProcess) -> dict[str, object]:
    """Every probe as alice in each of :data:`ROUNDS`, once the super user granted its ACLs."""
    address = (broker.address.host, broker.address.port)
    admin = Session(address, "admin", USERS["admin"])
    created = admin.request(
        m.CreateTopicsRequest(
            topics=[m.CreateTopicsRequestCreatableTopic(name=ORDERS, num_partitions=1, replication_factor=1)],
            timeout_ms=10000,
        ),
        7,
    )
    assert isinstance(created, m.CreateTopicsResponse) and created.topics[0].error_code == 0, created
    for key_type in (0, 1):  # the coordinators' topics first, so that no answer waits for them
        wait_until("a coordinator", _finds_coordinator(admin, key_type), 60.0)
    for transactional_id in (None, "warm"):  # and producer ids (Kafka asks its controller for a block)
        wait_until("a producer id", _gets_producer_id(admin, transactional_id), 60.0)
    seen: dict[str, object] = {}
    granted_so_far = 0
    for round_, grants in ROUNDS.items():
        if grants:
            granted = admin.request(
                m.CreateAclsRequest(
                    creations=[
                        m.CreateAclsRequestAclCreation(
                            resource_type=rtype,
                            resource_name=name,
                            resource_pattern_type=3,
                            principal="User:alice",
                            host="*",
                            operation=op,
                            permission_type=permission,
                        )
                        for rtype, name, op, permission in grants
                    ]
                ),
                3,
            )
            assert isinstance(granted, m.CreateAclsResponse), granted
            assert [r.error_code for r in granted.results] == [0] * len(grants)
            granted_so_far += len(grants)
            # Kafka's brokers load committed ACLs into their authorizer after the answer
            wait_until("the ACLs described", _describes_grants(admin, granted_so_far), 30.0)
        for name, (body, version) in requests().items():
            alice = Session(address, "alice", USERS["alice"])
            answer = alice.request(body, version)
            seen[f"{name} ({round_})"] = answer if isinstance(answer, str) else reduced(_normalized(answer))
            alice.close()
    admin.close()
    return seen


@pytest.fixture(scope="module")
def observations(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, object], dict[str, object]]]:
    seen = []
    for build in (kafka_wire_secured, kafka_secured):
        broker = build(Path(tmp_path_factory.mktemp(build.__name__)))
        broker.start()
        try:
            seen.append(observe(broker))
        finally:
            broker.close()
    yield seen[0], seen[1]


@pytest.mark.parametrize("probe", [f"{p} ({r})" for r in ROUNDS for p in requests()])
def test_a_user_gets_kafkas_answer(
    observations: tuple[dict[str, object], dict[str, object]], probe: str
) -> None:
    ours, kafka = observations
    assert ours[probe] == kafka[probe]
