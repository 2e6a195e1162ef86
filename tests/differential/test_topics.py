"""CreateTopics, DeleteTopics and CreatePartitions: every refusal Kafka names, validate-only, and the
answers of what succeeds; CreateTopics v2 (Kafka 4's lowest), v5 (configs in the answer) and v7
(topic ids), DeleteTopics v1, v5 and v6 (topics by id), CreatePartitions v0 and v3."""

from __future__ import annotations

from typing import Final
from uuid import UUID

import pytest

from kafka_wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestAssignment,
    CreatePartitionsRequestTopic,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsRequestCreatableTopicConfig,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    ErrorCode,
    MetadataRequest,
    MetadataRequestTopic,
)
from tests.differential.configs import LISTED_RULES, TOPIC_CONFIG_RULES, UNLISTED_TOPIC_CONFIGS
from tests.differential.pair import Pair

Topic = CreateTopicsRequestCreatableTopic
Config = CreateTopicsRequestCreatableTopicConfig
Assign = CreateTopicsRequestCreatableReplicaAssignment

CREATE_VERSIONS: Final = [2, 5, 7]
#: Refusals: validate-only at the lowest and highest version, for real at the highest.
MODES: Final = [(2, True), (7, True), (7, False)]
GROW_MODES: Final = [(0, True), (3, True), (3, False)]
MODE_IDS: Final = ["lowest-validate-only", "validate-only", "for-real"]


def create(*topics: Topic, validate_only: bool = False) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=list(topics), timeout_ms=10_000, validate_only=validate_only)


def topic(name: str, partitions: int = 1, replication: int = 1, **configs: str | None) -> Topic:
    return Topic(
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        configs=[Config(name=k.replace("_", "."), value=v) for k, v in configs.items()],
    )


def assigned(name: str, *replicas: list[int], partitions: int = -1) -> Topic:
    assignments = [Assign(partition_index=i, broker_ids=r) for i, r in enumerate(replicas)]
    return Topic(name=name, num_partitions=partitions, replication_factor=-1, assignments=assignments)


#: What Kafka refuses, by the error it answers; each is sent validate-only and for real.
REFUSED: Final = {
    "existing": ([topic("ct-existing")], ErrorCode.TOPIC_ALREADY_EXISTS),
    "bad characters": ([topic("bad name!")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "too long": ([topic("x" * 250)], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "dot": ([topic(".")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "dot dot": ([topic("..")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "empty name": ([topic("")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "collides with an existing topic": ([topic("ct_dotted")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    "zero partitions": ([topic("ct-zero", partitions=0)], ErrorCode.INVALID_PARTITIONS),
    "negative partitions": ([topic("ct-neg", partitions=-5)], ErrorCode.INVALID_PARTITIONS),
    "too many partitions": ([topic("ct-huge", partitions=10_001)], ErrorCode.POLICY_VIOLATION),
    "too many partitions in all": (
        [topic("ct-many-1", partitions=5_000), topic("ct-many-2", partitions=5_001)],
        ErrorCode.POLICY_VIOLATION,
    ),
    "replication 0": ([topic("ct-rf0", replication=0)], ErrorCode.INVALID_REPLICATION_FACTOR),
    "replication -2": ([topic("ct-rf-2", replication=-2)], ErrorCode.INVALID_REPLICATION_FACTOR),
    "replication over the brokers": ([topic("ct-rf3", replication=3)], ErrorCode.INVALID_REPLICATION_FACTOR),
    "unknown config": ([topic("ct-c1", no_such="1")], ErrorCode.INVALID_CONFIG),
    "config not a number": ([topic("ct-c2", retention_ms="abc")], ErrorCode.INVALID_CONFIG),
    "config null": ([topic("ct-c3", retention_ms=None)], ErrorCode.INVALID_CONFIG),
    "config not in its set": ([topic("ct-c4", cleanup_policy="nope")], ErrorCode.INVALID_CONFIG),
    "config under its minimum": ([topic("ct-c5", min_insync_replicas="0")], ErrorCode.INVALID_CONFIG),
    "duplicate names": ([topic("ct-dup"), topic("ct-dup", partitions=2)], ErrorCode.INVALID_REQUEST),
    "assignment with a partition count": (
        [assigned("ct-a1", [1], partitions=2)],
        ErrorCode.INVALID_REQUEST,
    ),
    "assignment of an unknown broker": ([assigned("ct-a2", [7])], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    "assignment naming a broker twice": ([assigned("ct-a3", [1, 1])], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    "assignment with an empty replica list": ([assigned("ct-a4", [])], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    "assignment not numbered from 0": (
        [
            Topic(
                name="ct-a5",
                num_partitions=-1,
                replication_factor=-1,
                assignments=[Assign(partition_index=1, broker_ids=[1])],
            )
        ],
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    ),
    "the metadata topic": ([topic("__cluster_metadata")], ErrorCode.INVALID_REQUEST),
}


@pytest.fixture(scope="module")
def existing(pair_module: Pair) -> None:
    pair_module.create_topic("ct-existing")
    pair_module.create_topic("ct.dotted")


@pytest.mark.parametrize(("version", "validate_only"), MODES, ids=MODE_IDS)
@pytest.mark.parametrize("case", list(REFUSED))
def test_create_refused(pair: Pair, existing: None, case: str, version: int, validate_only: bool) -> None:
    topics, error = REFUSED[case]
    kafka, _ = pair.check(create(*topics, validate_only=validate_only), version)
    assert {t.error_code for t in kafka.topics} == {error}


@pytest.mark.parametrize("version", CREATE_VERSIONS)
def test_create(pair: Pair, version: int) -> None:
    """Defaults (-1 and -1), configs set, a manual assignment; then the same validate-only, which
    says the topics exist."""
    topics = [
        topic(f"ct-ok-{version}", partitions=2),
        topic(f"ct-defaults-{version}", partitions=-1, replication=-1),
        topic(f"ct-configs-{version}", retention_ms="3600000", cleanup_policy="compact,delete"),
        assigned(f"ct-assigned-{version}", [1], [1], [1]),
    ]
    rules = TOPIC_CONFIG_RULES
    kafka, _ = pair.check(create(*topics, validate_only=True), version, rules)
    assert {t.error_code for t in kafka.topics} == {ErrorCode.NONE}
    pair.check(create(*topics), version, rules)
    kafka, _ = pair.check(create(*topics, validate_only=True), version, rules)
    assert {t.error_code for t in kafka.topics} == {ErrorCode.TOPIC_ALREADY_EXISTS}


@pytest.mark.deliberate(
    *UNLISTED_TOPIC_CONFIGS, reason="kafka-wire does not list the topic configs it does not implement"
)
def test_create_lists_every_config(pair: Pair) -> None:
    pair.check(create(topic("ct-listed")), 7, LISTED_RULES)


# -- DeleteTopics ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 5, 6])
def test_delete(pair: Pair, version: int) -> None:
    """An existing topic, an unknown one, one named twice; at v6 by name and by id (unknown ids,
    the zero id), then what Metadata says of the deleted one."""
    pair.create_topic(f"dt-{version}")
    pair.create_topic(f"dt-twice-{version}")
    names = [f"dt-{version}", f"dt-unknown-{version}", f"dt-twice-{version}", f"dt-twice-{version}"]
    if version >= 6:
        states = [DeleteTopicsRequestDeleteTopicState(name=n) for n in names]
        states.append(DeleteTopicsRequestDeleteTopicState(name=None, topic_id=UUID(int=0x1234)))
        request = DeleteTopicsRequest(topics=states, timeout_ms=10_000)
    else:
        request = DeleteTopicsRequest(topic_names=names, timeout_ms=10_000)
    pair.check(request, version)
    gone = MetadataRequest(
        topics=[MetadataRequestTopic(name=f"dt-{version}")], allow_auto_topic_creation=False
    )
    pair.check(gone, 12)


def test_delete_by_id(pair: Pair) -> None:
    """Each broker deletes its own topic by its own id."""
    pair.create_topic("dt-by-id")
    lookup = MetadataRequest(topics=[MetadataRequestTopic(name="dt-by-id")], allow_auto_topic_creation=False)
    kafka, wire = pair.both(lookup, 12)
    answers = [
        peer.request(
            DeleteTopicsRequest(
                topics=[DeleteTopicsRequestDeleteTopicState(name=None, topic_id=found.topics[0].topic_id)],
                timeout_ms=10_000,
            ),
            6,
        )
        for peer, found in ((pair.kafka, kafka), (pair.kafka_wire, wire))
    ]
    pair.judge(answers[0], answers[1], "DeleteTopicsRequest v6 by id")


def test_delete_internal_and_invalid(pair: Pair) -> None:
    request = DeleteTopicsRequest(topic_names=["__consumer_offsets-nope", "bad name!", ""], timeout_ms=10_000)
    pair.check(request, 5)


# -- CreatePartitions -----------------------------------------------------------------------------

Grow = CreatePartitionsRequestTopic


def grow(name: str, count: int, *assignments: list[int]) -> Grow:
    return Grow(
        name=name,
        count=count,
        assignments=[CreatePartitionsRequestAssignment(broker_ids=a) for a in assignments] or None,
    )


GROW_REFUSED: Final = {
    "unknown topic": [grow("cp-unknown", 2)],
    "fewer partitions": [grow("cp-three", 2)],
    "as many partitions": [grow("cp-three", 3)],
    "too many partitions": [grow("cp-three", 10_004)],
    "assignments for too few": [grow("cp-three", 5, [1])],
    "assignment of an unknown broker": [grow("cp-three", 4, [7])],
    "assignment naming a broker twice": [grow("cp-three", 4, [1, 1])],
    "empty assignment": [grow("cp-three", 4, [])],
    "duplicate topics": [grow("cp-three", 4), grow("cp-three", 5)],
}


@pytest.fixture(scope="module")
def three(pair_module: Pair) -> None:
    pair_module.create_topic("cp-three", 3)


@pytest.mark.parametrize(("version", "validate_only"), GROW_MODES, ids=MODE_IDS)
@pytest.mark.parametrize("case", list(GROW_REFUSED))
def test_create_partitions_refused(
    pair: Pair, three: None, case: str, version: int, validate_only: bool
) -> None:
    request = CreatePartitionsRequest(
        topics=GROW_REFUSED[case], timeout_ms=10_000, validate_only=validate_only
    )
    kafka, _ = pair.check(request, version)
    assert all(r.error_code != ErrorCode.NONE for r in kafka.results)


@pytest.mark.parametrize("version", [0, 3])
def test_create_partitions(pair: Pair, version: int) -> None:
    """Validate-only, then for real (with and without an assignment), then Metadata shows them."""
    pair.create_topic(f"cp-grow-{version}", 1)
    pair.create_topic(f"cp-assigned-{version}", 1)
    topics = [grow(f"cp-grow-{version}", 3), grow(f"cp-assigned-{version}", 3, [1], [1])]
    pair.check(CreatePartitionsRequest(topics=topics, timeout_ms=10_000, validate_only=True), version)
    pair.check(CreatePartitionsRequest(topics=topics, timeout_ms=10_000), version)
    pair.wait_for_leaders(f"cp-grow-{version}", 3)
    shown = MetadataRequest(
        topics=[MetadataRequestTopic(name=t.name) for t in topics], allow_auto_topic_creation=False
    )
    pair.check(shown, 12)
