"""Metadata: known and unknown topics, auto-creation allowed by the broker and the request or not,
invalid names, topics by id, authorized operations, every topic; v1 (auto-creation implied), v4
(the first with ``allow_auto_topic_creation``), v8-v10 (cluster operations), v12 and v13."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import pytest

from kafka_wire.messages import ErrorCode, MetadataRequest, MetadataRequestTopic
from tests.differential.conftest import Nodes, pair_of
from tests.differential.pair import Pair
from tests.differential.peers import COMMON

KNOWN = "md-known"
VERSIONS = [1, 4, 8, 12, 13]


def request(
    *names: str | None, version: int, allow: bool = False, by_id: UUID | None = None
) -> MetadataRequest:
    topics = [MetadataRequestTopic(name=name) for name in names]
    if by_id is not None:
        topics.append(MetadataRequestTopic(name=None, topic_id=by_id))
    return MetadataRequest(
        topics=topics,
        allow_auto_topic_creation=allow if version >= 4 else True,
        include_cluster_authorized_operations=8 <= version <= 10,
        include_topic_authorized_operations=version >= 8,
    )


@pytest.fixture(scope="module")
def known(pair_module: Pair) -> None:
    pair_module.create_topic(KNOWN, 3)


@pytest.mark.parametrize("version", VERSIONS)
def test_known_topic(pair: Pair, known: None, version: int) -> None:
    kafka, _ = pair.check(request(KNOWN, version=version), version)
    assert [p.partition_index for p in kafka.topics[0].partitions] == [0, 1, 2]


@pytest.mark.parametrize("version", [4, 12, 13])
def test_unknown_topic_not_created(pair: Pair, version: int) -> None:
    name = f"md-unknown-v{version}"
    kafka, _ = pair.check(request(name, version=version, allow=False), version)
    assert kafka.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    pair.check(request(name, version=version, allow=False), version)


@pytest.mark.parametrize("version", [1, 4, 12, 13])
def test_auto_creation(pair: Pair, version: int) -> None:
    """The first answer (the creation is under way), then the topic once both made it."""
    name = f"md-auto-v{version}"
    kafka, _ = pair.check(request(name, version=version, allow=True), version)
    assert kafka.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    pair.wait_for_leaders(name, int(COMMON["num.partitions"]))
    pair.check(request(name, version=version, allow=True), version)


@pytest.mark.parametrize("version", [4, 12])
@pytest.mark.parametrize(
    "name", ["bad name!", "x" * 250, ".", "..", "", "with/slash"], ids=lambda n: repr(n)[:12]
)
def test_invalid_topic_names(pair: Pair, version: int, name: str) -> None:
    kafka, _ = pair.check(request(name, version=version, allow=True), version)
    assert kafka.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("version", [12, 13])
def test_topic_by_id(pair: Pair, known: None, version: int) -> None:
    """A topic id Kafka does not know, then each broker's own id of the known topic."""
    pair.check(request(version=version, by_id=UUID(int=0x1234)), version)
    kafka, wire = pair.both(request(KNOWN, version=version), version)
    ids = kafka.topics[0].topic_id, wire.topics[0].topic_id
    answers = [
        peer.request(request(version=version, by_id=topic_id), version)
        for peer, topic_id in zip((pair.kafka, pair.kafka_wire), ids, strict=True)
    ]
    pair.judge(answers[0], answers[1], f"MetadataRequest v{version} by id")


@pytest.mark.parametrize("version", [0, 1, 12])
def test_every_topic(pair: Pair, known: None, version: int) -> None:
    """A null list (an empty one at v0) lists every topic: the same topics on both."""
    every = MetadataRequest(topics=[] if version == 0 else None)
    kafka, _ = pair.check(every, version)
    assert KNOWN in {t.name for t in kafka.topics}


# -- a broker with auto.create.topics.enable=false ----------------------------------------------


@pytest.fixture(scope="module")
def no_auto_create(no_auto_create_nodes: Nodes, request: pytest.FixtureRequest) -> Iterator[Pair]:
    """The pair of nodes with ``auto.create.topics.enable=false``."""
    yield from pair_of(no_auto_create_nodes, request)


@pytest.mark.parametrize("version", [1, 4, 12])
def test_broker_forbids_auto_creation(no_auto_create: Pair, version: int) -> None:
    pair = no_auto_create
    name = f"md-never-v{version}"
    kafka, _ = pair.check(request(name, version=version, allow=True), version)
    assert kafka.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    pair.check(MetadataRequest(topics=None), 12)
    assert kafka.topics[0].name not in {t.name for t in pair.both(MetadataRequest(topics=None), 12)[0].topics}
