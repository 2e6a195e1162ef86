"""Fixtures of the differential suite: one Apache Kafka 4.4 node and one kafka-wire node for the
session, started side by side, and :class:`~tests.differential.pair.Pair` for each test.

A test marked ``@pytest.mark.deliberate(pattern, ..., reason=...)`` shows a difference documented
in ``docs/reference/kafka-differences.md``: it becomes a strict xfail that only
:class:`~tests.differential.pair.DeliberateDifference` satisfies (see ``pair.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    ErrorCode,
)
from tests.differential.compare import Side
from tests.differential.pair import (
    CREATE_TOPICS_VERSION,
    DeliberateDifference,
    Pair,
    Peer,
    Statistics,
    poll,
)
from tests.differential.peers import COMMON, kafka_node, kafka_wire_node
from tests.differential.wire import Connection
from tests.e2e.apache_kafka import KafkaNode
from tests.e2e.brokers import BrokerProcess

STATISTICS = Statistics()


@dataclass
class Nodes:
    """A Kafka node and a kafka-wire node with the same properties, both running."""

    kafka: KafkaNode
    kafka_wire: BrokerProcess

    def sides(self) -> tuple[Side, Side]:
        return (
            Side("Kafka", self.kafka.address.port, self.kafka.controller_port, self.kafka.cluster_id),
            Side(
                "kafka-wire",
                self.kafka_wire.address.port,
                getattr(self.kafka_wire, "controller_port", 0),
                getattr(self.kafka_wire, "cluster_id", None),
            ),
        )

    def close(self) -> None:
        """Kill both (their data is the session's temporary directory: nothing to shut down
        cleanly for, and a Kafka node's controlled shutdown takes seconds)."""
        for node in (self.kafka, self.kafka_wire):
            if node.running():
                node.kill()
            else:
                node.close()


def start_nodes(workdir: Path, configurations: Mapping[str, Mapping[str, str]]) -> dict[str, Nodes]:
    """A Kafka node and a kafka-wire node per configuration (name -> broker properties), in
    ``workdir/<name>``, all started at once."""
    started = {
        name: Nodes(
            kafka_node(workdir / name / "kafka", overrides),
            kafka_wire_node(workdir / name / "kafka-wire", overrides),
        )
        for name, overrides in configurations.items()
    }
    processes = [node for nodes in started.values() for node in (nodes.kafka, nodes.kafka_wire)]
    with ThreadPoolExecutor(len(processes)) as pool:
        futures = [pool.submit(node.start) for node in processes]
        try:
            for future in futures:
                future.result()
            for nodes in started.values():
                wait_until_serving(nodes)
        except BaseException:
            for future in futures:
                future.exception()
            for nodes in started.values():
                nodes.close()
            raise
    return started


def wait_until_serving(nodes: Nodes) -> None:
    """Wait until each node's controller takes a (validate-only) CreateTopics: a Kafka node answers
    ApiVersions once it serves, kafka-wire prints its ready line as its quorum elects itself."""
    probe = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(
                name="differential-ready", num_partitions=1, replication_factor=1
            )
        ],
        timeout_ms=5_000,
        validate_only=True,
    )
    for node in (nodes.kafka, nodes.kafka_wire):
        connection = Connection(node.address)

        def serving(connection: Connection = connection) -> bool:
            answer = connection.request(probe, CREATE_TOPICS_VERSION)
            assert isinstance(answer, CreateTopicsResponse)
            return answer.topics[0].error_code == ErrorCode.NONE

        try:
            poll(f"{node.name} to serve CreateTopics", serving)
        finally:
            connection.close()


#: The broker properties of each pair of nodes a test may use, by the fixture that gives it.
CONFIGURATIONS: Final[Mapping[str, Mapping[str, str]]] = {
    "nodes": COMMON,
    "no_auto_create_nodes": {**COMMON, "auto.create.topics.enable": "false"},
}


@pytest.fixture(scope="session")
def all_nodes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Nodes]]:
    """Every pair of nodes the session's tests use, started side by side (JVMs start slowly)."""
    used = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
    wanted = {name: props for name, props in CONFIGURATIONS.items() if name in used or name == "nodes"}
    started = start_nodes(tmp_path_factory.mktemp("differential"), wanted)
    try:
        yield started
    finally:
        for nodes in started.values():
            nodes.close()


@pytest.fixture(scope="session")
def nodes(all_nodes: dict[str, Nodes]) -> Nodes:
    """The session's main pair (Kafka's defaults: topics are created automatically)."""
    return all_nodes["nodes"]


@pytest.fixture(scope="session")
def no_auto_create_nodes(all_nodes: dict[str, Nodes]) -> Nodes:
    """A pair with ``auto.create.topics.enable=false``."""
    return all_nodes["no_auto_create_nodes"]


def pair_of(nodes: Nodes, request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A pair of fresh connections to ``nodes``, with the test's deliberate patterns."""
    kafka_side, wire_side = nodes.sides()
    pair = Pair(
        Peer(kafka_side, Connection(nodes.kafka.address)),
        Peer(wire_side, Connection(nodes.kafka_wire.address)),
        STATISTICS,
    )
    mark = request.node.get_closest_marker("deliberate")
    if mark is not None:
        pair.deliberate = tuple(mark.args)
    try:
        yield pair
    finally:
        pair.kafka.connection.close()
        pair.kafka_wire.connection.close()


@pytest.fixture
def pair(nodes: Nodes, request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Both brokers of the session, for one test."""
    yield from pair_of(nodes, request)


@pytest.fixture(scope="module")
def pair_module(nodes: Nodes, request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Both brokers of the session, for a module's set-up fixtures."""
    yield from pair_of(nodes, request)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        mark = item.get_closest_marker("deliberate")
        if mark is not None:
            reason = mark.kwargs["reason"]
            item.add_marker(pytest.mark.xfail(strict=True, raises=DeliberateDifference, reason=reason))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STATISTICS.checks:
        apis = ", ".join(f"{api} {count}" for api, count in sorted(STATISTICS.by_api.items()))
        terminalreporter.write_line(f"differential: {STATISTICS.checks} comparisons ({apis})")
