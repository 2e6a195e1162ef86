"""DescribeCluster (v0, v1: endpoint types, v2: fenced brokers) and DescribeLogDirs (v1, v3: error
codes, v4: sizes of the directories) of the same topics on both brokers."""

from __future__ import annotations

from typing import Final

import pytest

from kafka_wire.messages import (
    DescribeClusterRequest,
    DescribeLogDirsRequest,
    DescribeLogDirsRequestDescribableLogDirTopic,
)
from tests.differential.compare import Rule, ignored, positive
from tests.differential.pair import Pair
from tests.differential.records import batch, now_ms, produce

BROKERS, CONTROLLERS = 1, 2


@pytest.mark.parametrize("operations", [False, True])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(pair: Pair, version: int, operations: bool) -> None:
    pair.check(DescribeClusterRequest(include_cluster_authorized_operations=operations), version)


def test_describe_cluster_fenced_brokers(pair: Pair) -> None:
    pair.check(DescribeClusterRequest(include_fenced_brokers=True), 2)


@pytest.mark.parametrize("version", [1, 2])
def test_describe_cluster_controllers_from_a_broker(pair: Pair, version: int) -> None:
    """The controllers' endpoints are asked of a broker listener: Kafka refuses."""
    pair.check(DescribeClusterRequest(endpoint_type=CONTROLLERS), version)


#: A log directory's path and the file system's free space are each node's own.
LOG_DIR_RULES: Final = (
    Rule("results[].log_dir", ignored, "each node's own data directory"),
    Rule("results[].total_bytes", positive, "the file system's size"),
    Rule("results[].usable_bytes", positive, "the file system's free space"),
)
TOPIC: Final = "ld-data"


@pytest.fixture(scope="module")
def data(pair_module: Pair) -> None:
    pair_module.create_topic(TOPIC, 2)
    at = now_ms()
    pair_module.both(produce(TOPIC, batch(5, timestamp_ms=at)), 9)


#: DescribeLogDirs v4+ reports the file system's size and free space; kafka-wire's engine does no
#: I/O and is not told them.
NO_SIZES: Final = pytest.mark.deliberate(
    "results[].total_bytes",
    "results[].usable_bytes",
    reason="kafka-wire does not report the size and free space of its log directory's file system",
)


@pytest.mark.parametrize("version", [1, 3, pytest.param(4, marks=NO_SIZES)])
def test_describe_log_dirs(pair: Pair, data: None, version: int) -> None:
    """Both partitions (one holding a batch), one that does not exist, an unknown topic."""
    request = DescribeLogDirsRequest(
        topics=[
            DescribeLogDirsRequestDescribableLogDirTopic(topic=TOPIC, partitions=[0, 1, 7]),
            DescribeLogDirsRequestDescribableLogDirTopic(topic="ld-unknown", partitions=[0]),
        ]
    )
    pair.check(request, version, LOG_DIR_RULES)


@pytest.mark.parametrize("version", [1, pytest.param(4, marks=NO_SIZES)])
def test_describe_log_dirs_of_no_topics(pair: Pair, version: int) -> None:
    pair.check(DescribeLogDirsRequest(topics=[]), version, LOG_DIR_RULES)
