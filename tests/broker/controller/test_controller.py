"""QuorumController flows against a fake raft log (tests/broker/controller/harness.py)."""

from __future__ import annotations

import random
import uuid

import pytest

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import PartitionState
from kafka_wire.broker.config import BrokerConfig, BrokerConfigError
from kafka_wire.broker.controller.controller import ControllerConfig, QuorumController
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    ApiKey,
    BrokerRegistrationChangeRecord,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    ErrorCode,
    FeatureLevelRecord,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    RegisterBrokerRecord,
)
from tests.broker.controller.harness import CLUSTER_ID, FakeRaft, Harness


def cluster(*brokers: int, hooks: Hooks = OFF, **config: object) -> Harness:
    h = Harness(hooks=hooks, **config)
    h.start_brokers(*brokers)
    return h


def partition(h: Harness, topic: str = "t", index: int = 0) -> PartitionState:
    p = h.controller.committed.partition(topic, index)
    assert p is not None
    return p


def alter_isr(
    h: Harness,
    p: PartitionState,
    isr: list[int],
    *,
    version: int = 3,
    leader: int | None = None,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    broker_epochs: dict[int, int] | None = None,
) -> AlterPartitionResponse:
    sender = p.leader if leader is None else leader
    body = AlterPartitionRequest(
        broker_id=sender,
        broker_epoch=h.epochs[sender],
        topics=[
            AlterPartitionRequestTopicData(
                topic_id=p.topic_id,
                topic_name=p.topic,
                partitions=[
                    AlterPartitionRequestPartitionData(
                        partition_index=p.partition,
                        leader_epoch=p.leader_epoch if leader_epoch is None else leader_epoch,
                        partition_epoch=p.partition_epoch if partition_epoch is None else partition_epoch,
                        new_isr_with_epochs=[
                            AlterPartitionRequestBrokerState(
                                broker_id=b, broker_epoch=(broker_epochs or h.epochs).get(b, -1)
                            )
                            for b in isr
                        ],
                        new_isr=isr,
                    )
                ],
            )
        ],
    )
    response = h.call(ApiKey.ALTER_PARTITION, version, body)
    assert isinstance(response, AlterPartitionResponse)
    return response


def only(response: AlterPartitionResponse) -> AlterPartitionResponsePartitionData:
    assert response.error_code == 0
    return response.topics[0].partitions[0]


# -- registration and heartbeats -----------------------------------------------------------------


def test_activation_finalizes_metadata_version() -> None:
    h = Harness()
    h.register(1)
    assert isinstance(h.raft.records()[0], FeatureLevelRecord)
    assert h.controller.committed.features == {"metadata.version": 21, "transaction.version": 2}


def test_registration_epoch_is_the_offset_of_its_record_and_broker_starts_fenced() -> None:
    h = Harness()
    response = h.register(1)
    records = h.raft.records()
    assert isinstance(records[response.broker_epoch], RegisterBrokerRecord)
    info = h.controller.committed.broker(1)
    assert info is not None and info.fenced and info.epoch == response.broker_epoch
    # Behind its registration: still fenced, not caught up.
    behind = h.heartbeat(1, offset=response.broker_epoch - 1)
    assert (behind.is_caught_up, behind.is_fenced) == (False, True)
    # At its registration: unfenced by a BrokerRegistrationChangeRecord.
    caught_up = h.heartbeat(1, offset=response.broker_epoch)
    assert (caught_up.is_caught_up, caught_up.is_fenced) == (True, False)
    assert isinstance(h.raft.records()[-1], BrokerRegistrationChangeRecord)
    info = h.controller.committed.broker(1)
    assert info is not None and not info.fenced


def test_duplicate_registration_is_refused_while_the_session_lives() -> None:
    h = cluster(1)
    first = h.incarnations[1]
    assert h.register(1, uuid.UUID(int=999)).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    # The same incarnation may register again (a retry): same epoch, still unfenced ...
    epoch = h.epochs[1]
    assert (h.register(1, first).broker_epoch, h.epochs[1]) == (epoch, epoch)
    info = h.controller.committed.broker(1)
    assert info is not None and not info.fenced
    # ... and another one once the session expired.
    h.now_ms += 9_001
    assert h.register(1, uuid.UUID(int=998)).error_code == 0


def test_registration_errors() -> None:
    h = Harness()
    good = h.register(1)
    assert good.error_code == 0
    wrong_cluster = h.call(
        ApiKey.BROKER_REGISTRATION,
        4,
        BrokerRegistrationRequest(
            broker_id=2, cluster_id="other", incarnation_id=uuid.uuid4(), log_dirs=[uuid.uuid4()]
        ),
    )
    assert isinstance(wrong_cluster, BrokerRegistrationResponse)
    assert wrong_cluster.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    # Without metadata.version in its features the broker is assumed to support 3.0-IV1 only.
    old = h.call(
        ApiKey.BROKER_REGISTRATION,
        4,
        BrokerRegistrationRequest(
            broker_id=2,
            cluster_id=h.controller.config.cluster_id,
            incarnation_id=uuid.uuid4(),
            log_dirs=[uuid.uuid4()],
        ),
    )
    assert isinstance(old, BrokerRegistrationResponse) and old.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_stale_broker_epoch_heartbeat() -> None:
    h = cluster(1)
    h.epochs[1] += 100
    assert h.heartbeat(1).error_code == ErrorCode.STALE_BROKER_EPOCH


def test_not_controller_when_raft_does_not_lead() -> None:
    h = cluster(1)
    h.raft.is_leader = False
    assert h.heartbeat(1).error_code == ErrorCode.NOT_CONTROLLER
    assert h.create_topic("x", replication=1).topics[0].error_code == ErrorCode.NOT_CONTROLLER


def test_held_answer_fails_when_leadership_is_lost_or_times_out() -> None:
    h = cluster(1)
    held = h.controller.handle(
        ApiKey.ALLOCATE_PRODUCER_IDS,
        0,
        AllocateProducerIdsRequest(broker_id=1, broker_epoch=h.epochs[1]),
        h.now_ms,
    )
    assert not isinstance(held, Message)
    assert held.poll(h.now_ms) is None  # not committed yet
    assert isinstance(late := held.poll(h.now_ms + 30_000), AllocateProducerIdsResponse)
    assert late.error_code == ErrorCode.REQUEST_TIMED_OUT
    h.raft.is_leader = False
    lost = held.poll(h.now_ms)
    assert isinstance(lost, AllocateProducerIdsResponse) and lost.error_code == ErrorCode.NOT_CONTROLLER


# -- topics ----------------------------------------------------------------------------------------


def test_create_topic_rf3_places_replicas_on_all_brokers() -> None:
    h = cluster(1, 2, 3)
    response = h.create_topic("t", partitions=6, replication=3)
    result = response.topics[0]
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 6, 3)
    parts = h.controller.committed.partitions_of("t")
    assert len(parts) == 6
    for p in parts:
        assert sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert len({p.leader for p in parts}) == 3  # leaders spread round-robin
    assert h.controller.committed.topics["t"].topic_id == result.topic_id


def test_create_topic_errors_and_validate_only() -> None:
    h = cluster(1, 2)
    assert h.create_topic("t", replication=3).topics[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert h.create_topic("bad name").topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (
        h.create_topic("t", partitions=0, replication=1).topics[0].error_code == ErrorCode.INVALID_PARTITIONS
    )
    assert h.create_topic("t", replication=1, configs={"cleanup.policy": "nope"}).topics[0].error_code == (
        ErrorCode.INVALID_CONFIG
    )
    assert h.create_topic("t", replication=2).topics[0].error_code == 0
    assert h.create_topic("t", replication=2).topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    before = len(h.raft.log)
    checked = h.call(
        ApiKey.CREATE_TOPICS,
        7,
        CreateTopicsRequest(
            topics=[CreateTopicsRequestCreatableTopic(name="v", num_partitions=1, replication_factor=-1)],
            validate_only=True,
        ),
    )
    assert checked.topics[0].error_code == 0  # type: ignore[attr-defined]
    assert len(h.raft.log) == before and "v" not in h.controller.committed.topics


def test_create_topics_refusals_as_kafka_answers_them() -> None:
    """A name given twice is answered once; more than 10,000 partitions in all is POLICY_VIOLATION
    for every topic; a null config value is INVALID_CONFIG; a name that differs from an existing
    one only by '.' against '_' collides; a created topic's answer has no message (null) and, from
    v5, lists its configs."""
    h = cluster(1)
    Topic = CreateTopicsRequestCreatableTopic

    def create(*topics: CreateTopicsRequestCreatableTopic) -> list[tuple[str, int, str | None]]:
        response = h.call(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=list(topics)))
        assert isinstance(response, CreateTopicsResponse)
        return [(t.name, t.error_code, t.error_message) for t in response.topics]

    assert create(
        Topic(name="a", num_partitions=1, replication_factor=1),
        Topic(name="b.c", num_partitions=2, replication_factor=1),
        Topic(name="a", num_partitions=1, replication_factor=1),
    ) == [
        ("b.c", 0, None),
        ("a", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]
    assert (
        create(Topic(name="b_c", num_partitions=1, replication_factor=1))[0][1]
        == ErrorCode.INVALID_TOPIC_EXCEPTION
    )
    huge = [
        Topic(name="x", num_partitions=5_000, replication_factor=1),
        Topic(name="y", num_partitions=5_001, replication_factor=1),
    ]
    assert {code for _, code, _ in create(*huge)} == {ErrorCode.POLICY_VIOLATION}
    null = Topic(
        name="n",
        num_partitions=1,
        replication_factor=1,
        configs=[CreateTopicsRequestCreatableTopicConfig(name="retention.ms", value=None)],
    )
    assert create(null)[0][1] == ErrorCode.INVALID_CONFIG
    assert set(h.controller.committed.topics) == {"b.c"}
    listed = h.create_topic("listed", replication=1, configs={"retention.ms": "5"}).topics[0]
    configs = {c.name: (c.value, c.config_source) for c in listed.configs or ()}
    assert configs["retention.ms"] == ("5", 1) and configs["segment.bytes"] == ("1073741824", 5)


def test_delete_topics_and_create_partitions_refusals_as_kafka_answers_them() -> None:
    h = cluster(1)
    h.create_topic("t", replication=1)
    deleted = h.call(ApiKey.DELETE_TOPICS, 5, DeleteTopicsRequest(topic_names=["x", "x", "nope"]))
    assert isinstance(deleted, DeleteTopicsResponse)
    assert sorted((r.name, r.error_code, r.error_message is not None) for r in deleted.responses) == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
        ("x", ErrorCode.INVALID_REQUEST, True),
    ]
    grown = h.call(
        ApiKey.CREATE_PARTITIONS,
        3,
        CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequestTopic(name="t", count=10_002),
                CreatePartitionsRequestTopic(name="u", count=2),
                CreatePartitionsRequestTopic(name="u", count=3),
            ]
        ),
    )
    assert isinstance(grown, CreatePartitionsResponse)
    assert sorted((r.name, r.error_code) for r in grown.results) == [
        ("t", ErrorCode.POLICY_VIOLATION),
        ("u", ErrorCode.INVALID_REQUEST),
    ]
    assert len(h.controller.committed.partitions_of("t")) == 1


def test_brokers_create_internal_topics_but_nobody_creates_the_metadata_log() -> None:
    h = cluster(1, 2, 3)
    assert h.create_topic("__consumer_offsets", partitions=3, replication=3).topics[0].error_code == 0
    assert len(h.controller.committed.partitions_of("__consumer_offsets")) == 3
    refused = h.create_topic("__cluster_metadata", replication=1).topics[0]
    assert refused.error_code == ErrorCode.INVALID_REQUEST
    assert "__cluster_metadata" not in h.controller.committed.topics


def test_default_replication_factor_and_topic_configs() -> None:
    h = cluster(1, 2, 3, default_replication_factor=2)
    result = h.create_topic("t", replication=-1, configs={"min.insync.replicas": "2"}).topics[0]
    assert result.replication_factor == 2
    assert h.controller.committed.topic_configs("t") == {"min.insync.replicas": "2"}


def test_delete_topic_and_create_partitions() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t", partitions=2)
    grown = h.call(
        ApiKey.CREATE_PARTITIONS,
        3,
        CreatePartitionsRequest(topics=[CreatePartitionsRequestTopic(name="t", count=5)]),
    )
    assert isinstance(grown, CreatePartitionsResponse) and grown.results[0].error_code == 0
    assert [len(p.replicas) for p in h.controller.committed.partitions_of("t")] == [3] * 5
    shrink = h.call(
        ApiKey.CREATE_PARTITIONS,
        3,
        CreatePartitionsRequest(topics=[CreatePartitionsRequestTopic(name="t", count=2)]),
    )
    assert shrink.results[0].error_code == ErrorCode.INVALID_PARTITIONS  # type: ignore[attr-defined]
    deleted = h.call(ApiKey.DELETE_TOPICS, 5, DeleteTopicsRequest(topic_names=["t", "nope"]))
    assert isinstance(deleted, DeleteTopicsResponse)
    assert [r.error_code for r in deleted.responses] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert "t" not in h.controller.committed.topics


def test_incremental_alter_configs_on_topic_and_broker() -> None:
    h = cluster(1)
    h.create_topic("t", replication=1)

    def alter(rtype: int, name: str, key: str, value: str | None, op: int = 0) -> int:
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=rtype,
                        resource_name=name,
                        configs=[
                            IncrementalAlterConfigsRequestAlterableConfig(
                                name=key, config_operation=op, value=value
                            )
                        ],
                    )
                ]
            ),
        )
        assert isinstance(response, IncrementalAlterConfigsResponse)
        return response.responses[0].error_code

    assert alter(2, "t", "retention.ms", "1000") == 0
    assert h.controller.committed.topic_configs("t") == {"retention.ms": "1000"}
    assert alter(2, "t", "retention.ms", None, op=1) == 0
    assert h.controller.committed.topic_configs("t") == {}
    assert alter(2, "t", "retention.ms", "soon") == ErrorCode.INVALID_CONFIG
    assert alter(2, "nope", "retention.ms", "1") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(4, "", "unclean.leader.election.enable", "true") == 0
    assert h.controller.committed.configs[(4, "")] == {"unclean.leader.election.enable": "true"}


# -- fencing and elections ------------------------------------------------------------------------------


def test_missed_heartbeats_fence_the_broker_and_its_leaderships_move() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t", partitions=3)
    led_by_1 = [p for p in h.controller.committed.partitions_of("t") if p.leader == 1]
    assert led_by_1
    assert h.controller.next_deadline_ms() == h.now_ms + 9_000
    h.now_ms += 5_000
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(4_001)  # 9001 ms after broker 1's last heartbeat
    info = h.controller.committed.broker(1)
    assert info is not None and info.fenced
    for old in led_by_1:
        new = partition(h, "t", old.partition)
        assert new.leader in (2, 3) and new.leader_epoch == old.leader_epoch + 1
    for p in h.controller.committed.partitions_of("t"):
        assert 1 not in p.isr
        assert p.partition_epoch >= 1
    assert all(not b.fenced for b in h.controller.committed.brokers() if b.node_id != 1)


def test_brokers_expiring_together_are_fenced_the_longest_silent_first() -> None:
    # Seed 481: the controller's clock jumped past every session at once. Fenced in id order,
    # brokers 1 and 2 left every ISR and broker 3, silent longest (a dead incarnation), stayed
    # the last member standing, to be elected on its return with what it had left.
    h = cluster(1, 2, 3)
    h.create_topic("t", partitions=3)
    h.now_ms += 1_000
    h.heartbeat(1)
    h.now_ms += 1_000
    h.heartbeat(2)
    h.tick(20_000)  # every session expired; broker 3 silent longest, broker 2 heard last
    assert all(b.fenced for b in h.controller.committed.brokers())
    for p in h.controller.committed.partitions_of("t"):
        assert p.isr == (2,), p


def test_alter_partition_shrink_and_expand_with_epochs() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t")
    p = partition(h)
    shrunk = only(alter_isr(h, p, [p.leader, p.replicas[1]]))
    assert shrunk.error_code == 0 and shrunk.isr == [p.leader, p.replicas[1]]
    assert (shrunk.leader_epoch, shrunk.partition_epoch) == (p.leader_epoch, p.partition_epoch + 1)
    # A stale partition epoch, an old leader epoch, a non-leader: refused.
    assert only(alter_isr(h, p, list(p.replicas))).error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert only(alter_isr(h, p, list(p.replicas), leader_epoch=p.leader_epoch - 1)).error_code == (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    q = partition(h)
    other = q.replicas[1]
    assert only(alter_isr(h, q, list(q.replicas), leader=other)).error_code == ErrorCode.INVALID_REQUEST
    # Expand back.
    grown = only(alter_isr(h, q, list(q.replicas)))
    assert (grown.error_code, sorted(grown.isr), grown.partition_epoch) == (
        0,
        [1, 2, 3],
        q.partition_epoch + 1,
    )
    assert partition(h).isr == q.replicas


def test_alter_partition_refuses_ineligible_replicas() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t")
    p = partition(h)
    shrunk = only(alter_isr(h, p, [p.leader]))
    assert shrunk.error_code == 0
    follower = p.replicas[1]
    h.heartbeat(follower, want_fence=True)
    q = partition(h)
    assert only(alter_isr(h, q, [q.leader, follower])).error_code == ErrorCode.INELIGIBLE_REPLICA
    assert (
        only(alter_isr(h, q, [q.leader, follower], version=1)).error_code == ErrorCode.OPERATION_NOT_ATTEMPTED
    )
    # A stale broker epoch for a replica makes it ineligible too.
    live = p.replicas[2]
    assert only(
        alter_isr(h, q, [q.leader, live], broker_epochs={live: 12345, q.leader: h.epochs[q.leader]})
    ).error_code == (ErrorCode.INELIGIBLE_REPLICA)


def test_the_last_isr_member_stays_in_the_isr_and_leads_again_when_it_returns() -> None:
    """Without ELR (Kafka 3.9's default) the ISR never empties: the partition is offline until
    its last member is back, and an unclean election is the only other way out."""
    h = cluster(1, 2)
    h.create_topic("t", replication=2)
    p = partition(h)
    only(alter_isr(h, p, [p.leader]))  # the follower fell behind
    h.heartbeat(p.leader, want_fence=True)
    offline = partition(h)
    assert (offline.leader, offline.isr, offline.elr) == (-1, (p.leader,), ())
    h.heartbeat(p.leader)  # back, caught up with the metadata: unfenced, and elected at once
    back = partition(h)
    assert (back.leader, back.isr) == (p.leader, (p.leader,)) and back.leader_epoch > offline.leader_epoch


def unclean_election(h: Harness) -> None:
    elected = h.call(
        ApiKey.ELECT_LEADERS,
        2,
        ElectLeadersRequest(
            election_type=1, topic_partitions=[ElectLeadersRequestTopicPartitions(topic="t", partitions=[0])]
        ),
    )
    assert isinstance(elected, ElectLeadersResponse)
    assert elected.replica_election_results[0].partition_result[0].error_code == 0


@pytest.mark.parametrize("elr", [False, True])
def test_unclean_election_only_when_enabled(elr: bool) -> None:
    h = cluster(1, 2, elr_enabled=elr)
    h.create_topic("t", replication=2)
    p = partition(h)
    only(alter_isr(h, p, [p.leader]))  # the follower fell behind
    follower = p.replicas[1]
    h.heartbeat(p.leader, want_fence=True)
    offline = partition(h)
    if elr:  # ELR keeps the old leader as eligible, out of the ISR
        assert (offline.leader, offline.isr, offline.elr) == (-1, (), (p.leader,))
    else:
        assert (offline.leader, offline.isr, offline.elr) == (-1, (p.leader,), ())
    # ElectLeaders UNCLEAN picks the live out-of-sync replica: ISR := [leader], RECOVERING.
    unclean_election(h)
    after = partition(h)
    assert (after.leader, after.isr, int(after.leader_recovery_state)) == (follower, (follower,), 1)


def test_controlled_shutdown_moves_leadership_then_says_shut_down() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t", partitions=3)
    first = h.heartbeat(1, want_shut_down=True)
    assert (first.is_fenced, first.should_shut_down) == (False, False)
    info = h.controller.committed.broker(1)
    assert info is not None and info.in_controlled_shutdown
    assert all(p.leader != 1 and 1 not in p.isr for p in h.controller.committed.partitions_of("t"))
    # The other brokers have not seen the moves yet: not yet.
    assert not h.heartbeat(1, want_shut_down=True).should_shut_down
    h.heartbeat(2)
    h.heartbeat(3)
    done = h.heartbeat(1, want_shut_down=True)
    assert (done.should_shut_down, done.is_fenced) == (True, True)
    info = h.controller.committed.broker(1)
    assert info is not None and info.fenced


def test_preferred_election_and_auto_rebalance() -> None:
    h = cluster(1, 2, 3, leader_imbalance_check_interval_ms=60_000)
    h.create_topic("t", partitions=3)
    preferred = {p.partition: p.replicas[0] for p in h.controller.committed.partitions_of("t")}

    def bounce(broker: int) -> None:
        h.heartbeat(broker, want_fence=True)
        h.heartbeat(broker)  # caught up: unfenced again, but out of every ISR
        for p in h.controller.committed.partitions_of("t"):
            if broker not in p.isr:
                only(alter_isr(h, p, [*p.isr, broker]))

    bounce(1)
    moved = [p for p in h.controller.committed.partitions_of("t") if p.leader != preferred[p.partition]]
    assert moved
    elect = h.call(
        ApiKey.ELECT_LEADERS,
        2,
        ElectLeadersRequest(
            election_type=0,
            topic_partitions=[ElectLeadersRequestTopicPartitions(topic="t", partitions=[0, 1, 2])],
        ),
    )
    assert isinstance(elect, ElectLeadersResponse)
    codes = {r.partition_id: r.error_code for r in elect.replica_election_results[0].partition_result}
    assert {codes[p.partition] for p in moved} == {0}
    assert all(p.leader == preferred[p.partition] for p in h.controller.committed.partitions_of("t"))
    again = h.call(
        ApiKey.ELECT_LEADERS,
        2,
        ElectLeadersRequest(
            election_type=0, topic_partitions=[ElectLeadersRequestTopicPartitions(topic="t", partitions=[0])]
        ),
    )
    assert again.replica_election_results[0].partition_result[0].error_code == (  # type: ignore[attr-defined]
        ErrorCode.ELECTION_NOT_NEEDED
    )
    # Automatic: the same imbalance is repaired at the next check.
    bounce(2)
    assert any(p.leader != preferred[p.partition] for p in h.controller.committed.partitions_of("t"))
    h.now_ms += 60_000
    for b in (1, 2, 3):
        h.heartbeat(b)
    h.tick()
    for b in (1, 2, 3):
        h.heartbeat(b)
    assert all(p.leader == preferred[p.partition] for p in h.controller.committed.partitions_of("t"))


def test_reassignment_adds_catches_up_then_moves_leadership_and_removes() -> None:
    h = cluster(1, 2, 3)
    h.call(
        ApiKey.CREATE_TOPICS,
        7,
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequestCreatableTopic(
                    name="t",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=[1])
                    ],
                )
            ]
        ),
    )
    assert partition(h).replicas == (1,)

    def reassign(replicas: list[int] | None) -> int:
        response = h.call(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            AlterPartitionReassignmentsRequest(
                topics=[
                    AlterPartitionReassignmentsRequestReassignableTopic(
                        name="t",
                        partitions=[
                            AlterPartitionReassignmentsRequestReassignablePartition(
                                partition_index=0, replicas=replicas
                            )
                        ],
                    )
                ]
            ),
        )
        assert isinstance(response, AlterPartitionReassignmentsResponse)
        return response.responses[0].partitions[0].error_code

    assert reassign(None) == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert reassign([2, 3]) == 0
    p = partition(h)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader) == ((2, 3, 1), (2, 3), (1,), 1)
    listed = h.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, ListPartitionReassignmentsRequest(topics=None))
    assert isinstance(listed, ListPartitionReassignmentsResponse)
    ongoing = listed.topics[0].partitions[0]
    assert (ongoing.replicas, ongoing.adding_replicas, ongoing.removing_replicas) == ([2, 3, 1], [2, 3], [1])
    # Broker 2 catches up: joins the ISR; the move is not complete yet.
    step = only(alter_isr(h, p, [1, 2]))
    assert step.error_code == 0 and partition(h).adding_replicas == (2, 3)
    # Broker 3 catches up: the move completes, 1 leaves, leadership moves to 2.
    q = partition(h)
    done = only(alter_isr(h, q, [1, 2, 3]))
    assert done.error_code == ErrorCode.NEW_LEADER_ELECTED
    final = partition(h)
    assert (final.replicas, final.isr, final.leader, final.adding_replicas, final.removing_replicas) == (
        (2, 3),
        (2, 3),
        2,
        (),
        (),
    )
    assert final.leader_epoch == p.leader_epoch + 1


def test_reassignment_cancel_restores_the_original_replicas() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t", replication=2)
    p = partition(h)
    spare = ({1, 2, 3} - set(p.replicas)).pop()
    response = h.call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        AlterPartitionReassignmentsRequest(
            topics=[
                AlterPartitionReassignmentsRequestReassignableTopic(
                    name="t",
                    partitions=[
                        AlterPartitionReassignmentsRequestReassignablePartition(
                            partition_index=0, replicas=[spare, p.replicas[0]]
                        )
                    ],
                )
            ]
        ),
    )
    assert response.responses[0].partitions[0].error_code == 0  # type: ignore[attr-defined]
    assert partition(h).adding_replicas == (spare,)
    cancel = h.call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        AlterPartitionReassignmentsRequest(
            topics=[
                AlterPartitionReassignmentsRequestReassignableTopic(
                    name="t",
                    partitions=[
                        AlterPartitionReassignmentsRequestReassignablePartition(
                            partition_index=0, replicas=None
                        )
                    ],
                )
            ]
        ),
    )
    assert cancel.responses[0].partitions[0].error_code == 0  # type: ignore[attr-defined]
    back = partition(h)
    assert (back.replicas, back.adding_replicas, back.removing_replicas) == (p.replicas, (), ())


def test_allocate_producer_ids_in_blocks_of_1000() -> None:
    h = cluster(1)
    blocks = []
    for _ in range(2):
        r = h.call(
            ApiKey.ALLOCATE_PRODUCER_IDS, 0, AllocateProducerIdsRequest(broker_id=1, broker_epoch=h.epochs[1])
        )
        assert isinstance(r, AllocateProducerIdsResponse)
        blocks.append((r.error_code, r.producer_id_start, r.producer_id_len))
    assert blocks == [(0, 0, 1000), (0, 1000, 1000)]
    stale = h.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, AllocateProducerIdsRequest(broker_id=1, broker_epoch=999))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]


def test_snapshot_every_n_committed_bytes_and_standby_replay() -> None:
    h = cluster(1, 2, 3, snapshot_max_bytes=200)
    h.create_topic("t", partitions=4)
    assert h.raft.snapshots
    offset, records = h.raft.snapshots[-1]
    standby_raft = FakeRaft(is_leader=False)
    standby = QuorumController(
        ControllerConfig(node_id=3001, cluster_id=CLUSTER_ID), standby_raft, random.Random(1)
    )
    standby.load_snapshot(offset, records)
    for index in range(offset + 1, len(h.raft.log)):
        standby.replay(index, [h.raft.log[index]])
    assert list(standby.committed.all_partitions()) == list(h.controller.committed.all_partitions())
    assert standby.committed.brokers() == h.controller.committed.brokers()
    # The standby becomes active: it serves from what it replayed.
    standby_raft.is_leader, standby_raft.epoch = True, 2
    standby_raft.log = list(h.raft.log)
    r = standby.handle(
        ApiKey.ALLOCATE_PRODUCER_IDS, 0, AllocateProducerIdsRequest(broker_id=1, broker_epoch=h.epochs[1]), 0
    )
    assert not isinstance(r, Message)
    standby.replay(len(standby_raft.log) - 1, [standby_raft.log[-1]])
    ready = r.poll(0)
    assert isinstance(ready, AllocateProducerIdsResponse) and ready.producer_id_start == 0


def test_a_new_incarnation_leaves_every_isr_before_it_registers() -> None:
    h = cluster(1, 2, 3, elr_enabled=True)
    h.create_topic("t", partitions=3)
    led = [p.partition for p in h.controller.committed.partitions_of("t") if p.leader == 2]
    h.now_ms += 9_001  # broker 2 died without a word; its session is over
    for b in (1, 3):
        h.heartbeat(b)
    start = len(h.raft.log)
    response = h.register(2, uuid.UUID(int=4242))
    assert response.broker_epoch == start  # the first record written for the new incarnation
    assert isinstance(h.raft.records()[-1], RegisterBrokerRecord)
    for p in h.controller.committed.partitions_of("t"):
        assert 2 not in p.isr and p.leader != 2
    assert all(partition(h, "t", i).leader in (1, 3) for i in led)


def test_config_from_kafka_properties() -> None:
    broker = BrokerConfig.from_properties(
        {
            "broker.session.timeout.ms": "6000",
            "default.replication.factor": "3",
            "unclean.leader.election.enable": "TRUE",
            "leader.imbalance.check.interval.seconds": "30",
        }
    )
    config = ControllerConfig.of(broker, CLUSTER_ID)
    assert (config.session_timeout_ms, config.default_replication_factor) == (6000, 3)
    assert config.unclean_leader_election_enable and config.leader_imbalance_check_interval_ms == 30_000
    with pytest.raises(BrokerConfigError, match=r"min\.insync\.replicas"):
        ControllerConfig(node_id=1, cluster_id=CLUSTER_ID, min_insync_replicas=0)


def test_cluster_wide_min_isr_drives_elr() -> None:
    h = cluster(1, 2, 3, elr_enabled=True)
    h.create_topic("t")
    config = IncrementalAlterConfigsRequestAlterableConfig(name="min.insync.replicas", value="3")
    resource = IncrementalAlterConfigsRequestAlterConfigsResource(
        resource_type=4, resource_name="", configs=[config]
    )
    altered = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(resources=[resource])
    )
    assert isinstance(altered, IncrementalAlterConfigsResponse) and altered.responses[0].error_code == 0
    p = partition(h)
    only(alter_isr(h, p, [p.leader, p.replicas[1]]))
    assert partition(h).elr == (p.replicas[2],)  # below min ISR 3: the leaver stays eligible


@pytest.mark.parametrize("clean", [True, False])
def test_a_restart_after_a_clean_stop_keeps_the_brokers_elr_membership(clean: bool) -> None:
    """KIP-966: a new incarnation that names its old epoch (what the clean-shutdown marker
    recorded) cannot have lost data and stays eligible; one that does not leaves the ELR."""
    h = cluster(1, 2, 3, elr_enabled=True, min_insync_replicas=3)
    h.create_topic("t")
    p = partition(h)
    leaver = p.replicas[2]
    only(alter_isr(h, p, [p.leader, p.replicas[1]]))
    assert partition(h).elr == (leaver,)
    h.tick(10_000)  # every session ends; the others come back
    for b in (1, 2, 3):
        if b != leaver:
            h.heartbeat(b)
    assert leaver in partition(h).elr
    assert h.register(leaver, clean=clean).error_code == 0
    assert (leaver in partition(h).elr) == clean


def test_an_unfenced_broker_takes_leaderless_partitions_it_is_eligible_for() -> None:
    h = cluster(1, 2)
    h.create_topic("t", replication=2)
    p = partition(h)
    only(alter_isr(h, p, [p.leader]))
    h.heartbeat(p.leader, want_fence=True)
    assert partition(h).leader == -1  # offline: the only ISR member is fenced (kept as ELR)
    h.heartbeat(p.leader)  # caught up again: unfenced, and elected from the ELR
    back = partition(h)
    assert (back.leader, back.isr, back.elr) == (p.leader, (p.leader,), ())


def test_alter_partition_unknown_topics_by_version() -> None:
    h = cluster(1)
    h.create_topic("t", replication=1)
    p = partition(h)
    ghost = PartitionState(
        topic="ghost", partition=0, topic_id=uuid.UUID(int=77), replicas=(1,), isr=(1,), leader=1,
        leader_epoch=0, partition_epoch=0,
    )  # fmt: skip
    assert alter_isr(h, ghost, [1]).topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    old = alter_isr(h, ghost, [1], version=1).topics[0].partitions[0]
    assert old.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    by_name = only(alter_isr(h, p, [1], version=1))  # v0-1 name the topic
    assert by_name.error_code == 0
    # RECOVERING cannot come back from RECOVERED; more than one replica while RECOVERING neither.
    q = partition(h)
    body = AlterPartitionRequest(
        broker_id=1,
        broker_epoch=h.epochs[1],
        topics=[
            AlterPartitionRequestTopicData(
                topic_id=q.topic_id,
                partitions=[
                    AlterPartitionRequestPartitionData(
                        partition_index=0,
                        leader_epoch=q.leader_epoch,
                        partition_epoch=q.partition_epoch,
                        new_isr_with_epochs=[
                            AlterPartitionRequestBrokerState(broker_id=1, broker_epoch=h.epochs[1])
                        ],
                        leader_recovery_state=1,
                    )
                ],
            )
        ],
    )
    refused = h.call(ApiKey.ALTER_PARTITION, 3, body)
    assert only(refused).error_code == ErrorCode.INVALID_REQUEST  # type: ignore[arg-type]
    assert alter_isr(h, q, [1], leader=1).error_code == 0
    h.epochs[1] += 1
    assert alter_isr(h, q, [1]).error_code == ErrorCode.STALE_BROKER_EPOCH


def test_elect_all_lists_only_the_elected_and_delete_by_topic_id() -> None:
    h = cluster(1, 2, 3)
    h.create_topic("t", partitions=2)
    nothing = h.call(ApiKey.ELECT_LEADERS, 2, ElectLeadersRequest(election_type=0, topic_partitions=None))
    assert isinstance(nothing, ElectLeadersResponse)
    # Kafka lists every topic and leaves out the partitions that need no election.
    assert [(r.topic, r.partition_result) for r in nothing.replica_election_results] == [("t", [])]
    topic_id = h.controller.committed.topics["t"].topic_id
    gone = h.call(
        ApiKey.DELETE_TOPICS,
        6,
        DeleteTopicsRequest(
            topics=[
                DeleteTopicsRequestDeleteTopicState(name=None, topic_id=topic_id),
                DeleteTopicsRequestDeleteTopicState(name=None, topic_id=uuid.UUID(int=5)),
            ]
        ),
    )
    assert isinstance(gone, DeleteTopicsResponse)
    assert [(r.name, r.error_code) for r in gone.responses] == [("t", 0), (None, ErrorCode.UNKNOWN_TOPIC_ID)]


def test_incremental_alter_configs_append_subtract_and_validate_only() -> None:
    h = cluster(1)
    h.create_topic("t", replication=1)

    def alter(op: int, value: str, validate_only: bool = False) -> None:
        config = IncrementalAlterConfigsRequestAlterableConfig(
            name="cleanup.policy", config_operation=op, value=value
        )
        resource = IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=2, resource_name="t", configs=[config]
        )
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            IncrementalAlterConfigsRequest(resources=[resource], validate_only=validate_only),
        )
        assert isinstance(response, IncrementalAlterConfigsResponse) and response.responses[0].error_code == 0

    alter(2, "compact")  # onto the default, "delete", as Kafka appends to an absent key
    alter(2, "delete")
    assert h.controller.committed.topic_configs("t") == {"cleanup.policy": "delete,compact"}
    alter(3, "compact")
    assert h.controller.committed.topic_configs("t") == {"cleanup.policy": "delete"}
    alter(0, "compact", validate_only=True)
    assert h.controller.committed.topic_configs("t") == {"cleanup.policy": "delete"}


def test_incremental_alter_configs_refusals_as_kafka_answers_them() -> None:
    """Duplicates, null values, list operations on scalars, unknown operations; the answer of a
    change that succeeds has no message (null)."""
    h = cluster(1)
    h.create_topic("t", replication=1)
    Op = IncrementalAlterConfigsRequestAlterableConfig

    def answer(
        *resources: tuple[str, list[IncrementalAlterConfigsRequestAlterableConfig]],
    ) -> list[tuple[int, str | None]]:
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=2, resource_name=n, configs=ops
                    )
                    for n, ops in resources
                ]
            ),
        )
        assert isinstance(response, IncrementalAlterConfigsResponse)
        return [(r.error_code, r.error_message) for r in response.responses]

    retention = Op(name="retention.ms", config_operation=0, value="5")
    assert answer(("t", [retention])) == [(0, None)]
    assert (
        answer(("t", [retention]), ("t", [retention]))
        == [(ErrorCode.INVALID_REQUEST, "Duplicate resource.")] * 2
    )
    assert answer(("t", [retention, retention]))[0][0] == ErrorCode.INVALID_REQUEST
    assert (
        answer(("t", [Op(name="retention.ms", config_operation=0, value=None)]))[0][0]
        == ErrorCode.INVALID_REQUEST
    )
    assert (
        answer(("t", [Op(name="retention.ms", config_operation=2, value="5")]))[0][0]
        == ErrorCode.INVALID_CONFIG
    )
    assert answer(("t", [Op(name="retention.ms", config_operation=7, value="5")])) == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    ]
    assert h.controller.committed.topic_configs("t") == {"retention.ms": "5"}


def test_a_new_incarnation_of_an_unfenced_broker_leaves_every_isr_first() -> None:
    """Its session ended and no tick fenced it yet: the restarted broker may have lost what it
    wrote, so it must not lead or count in an ISR until it has caught up again."""
    h = cluster(1, 2, 3)
    assert h.create_topic("t").topics[0].error_code == 0
    h.commit()
    leader = partition(h).leader
    h.now_ms += 9_001  # the session ended; nothing fenced it yet
    assert h.register(leader, uuid.UUID(int=997)).error_code == 0
    h.commit()
    after = partition(h)
    assert leader not in after.isr and after.leader not in (leader, -1)
    info = h.controller.committed.broker(leader)
    assert info is not None and info.fenced
