"""The client quotas that are not byte rates, on Apache Kafka 4.4 (the reference, which checks
the test itself) and on ``kafka-wire serve``, the same test one broker after the other:

- ``controller_mutation_rate`` (KIP-599): the Java 4.4 admin client (``java/MutationQuota.java``)
  gets THROTTLING_QUOTA_EXCEEDED, with a throttle time, for CreateTopics, CreatePartitions and
  DeleteTopics once its partitions went over the rate; confluent-kafka's AdminClient speaks the
  versions before the error (CreateTopics v4, ...), and its calls succeed as on Kafka; such an
  old version is answered with the throttle time only (a raw CreateTopics v5);
- ``request_percentage`` (KIP-124): a client sending requests back to back under a tiny quota is
  answered with a throttle time, at most one quota window;
- ``connection_creation_rate`` for an IP (KIP-612): the connection over the rate is held, then
  closed unanswered after its throttle time;
- ``max.connection.creation.rate``: connections beyond the rate wait to be served (on a Kafka
  node and a ``kafka-wire serve`` of their own, started with it).

Every quota names its own client id or source address (127.0.0.x), so the session's brokers
serve the other tests as before.
"""

from __future__ import annotations

import random
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntityData,
    AlterClientQuotasRequestEntryData,
    AlterClientQuotasRequestOpData,
    AlterClientQuotasResponse,
    ApiVersionsRequest,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponentData,
    DescribeClientQuotasResponse,
    MetadataRequest,
    MetadataResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire
from tests.interop.harness import java_command

MUTATION_QUOTA: Final = Path(__file__).resolve().parent / "java" / "MutationQuota.java"
ALTER, DESCRIBE, METADATA, API_VERSIONS, CREATE_TOPICS = 49, 48, 3, 18, 19
BROKER_RATE: Final = "max.connection.creation.rate"


class _Wire:
    """One raw connection (from ``source``, an address of the loopback network), requests one
    at a time."""

    def __init__(self, broker: BrokerProcess, client_id: str, source: str = "") -> None:
        self.client_id = client_id
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(30.0)
        if source:
            self.sock.bind((source, 0))
        self.sock.connect(broker.address)
        self._correlation = 0

    def ask(self, body: Message, api_key: int, version: int, timeout_s: float = 30.0) -> Message | None:
        """The answer, or None when the connection closed (or stayed silent ``timeout_s``)."""
        self._correlation += 1
        header = RequestHeader(correlation_id=self._correlation, client_id=self.client_id)
        self.sock.settimeout(timeout_s)
        try:
            self.sock.sendall(encode_request(header, body, version))
            size = self._read(4)
            frame = size + self._read(struct.unpack(">i", size)[0])
        except (OSError, EOFError):
            return None
        return decode_response(frame, api_key, version)[1]

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def _set_quota(broker: BrokerProcess, entity_type: str, name: str, key: str, value: float) -> None:
    """Set one quota, then wait until the broker describes it (a Kafka broker enforces what its
    metadata image holds, which trails the controller's answer)."""
    wire = _Wire(broker, "quota-setter")
    try:
        entry = AlterClientQuotasRequestEntryData(
            entity=[AlterClientQuotasRequestEntityData(entity_type=entity_type, entity_name=name)],
            ops=[AlterClientQuotasRequestOpData(key=key, value=value)],
        )
        answer = wire.ask(AlterClientQuotasRequest(entries=[entry]), ALTER, 1)
        assert isinstance(answer, AlterClientQuotasResponse), answer
        assert [e.error_code for e in answer.entries] == [0], answer
        component = DescribeClientQuotasRequestComponentData(
            entity_type=entity_type, match_type=0, match=name
        )
        deadline = time.monotonic() + 30.0
        while True:
            described = wire.ask(DescribeClientQuotasRequest(components=[component]), DESCRIBE, 1)
            assert isinstance(described, DescribeClientQuotasResponse)
            if any(v.key == key for e in described.entries or [] for v in e.values):
                return
            assert time.monotonic() < deadline, f"{broker.name} never applied {key} for {name}"
            time.sleep(0.05)
    finally:
        wire.close()


# -- controller_mutation_rate -----------------------------------------------------------------


def _java_mutations(broker: BrokerProcess) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    client_id, prefix = f"mut-{tag}", f"mut-{tag}"
    _set_quota(broker, "client-id", client_id, "controller_mutation_rate", 1.0)
    result = subprocess.run(
        java_command(MUTATION_QUOTA, broker.bootstrap, client_id, prefix, client="java4"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, (result.stdout, result.stderr[-3000:])
    return [line.replace(prefix, "T") for line in result.stdout.splitlines()]


def test_the_java_admin_is_refused_over_its_mutation_rate_as_by_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    expected = _java_mutations(apache_kafka_node)
    # 14 partitions of an 11-credit bucket (1 per second over 11 windows) leave it at -3: the
    # next topic is refused, told to wait 3 s; the client waits it out (KIP-219), so the 3
    # partitions after it pass (the bucket is back at 0) and leave it at -3 again: the deletion is
    # refused. (Each step has 3 s to spare on a slow machine.)
    assert expected == [
        "create T-a ok",
        "create T-b ThrottlingQuotaExceededException throttled",
        "partitions T-a ok",
        "delete T-a ThrottlingQuotaExceededException throttled",
    ]
    assert _java_mutations(kafka_wire_node) == expected


def _outcome(future: object) -> str:
    try:
        future.result(timeout=60)  # type: ignore[attr-defined]  # a concurrent.futures.Future
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "ok"


def _librdkafka_mutations(broker: BrokerProcess) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    client_id, prefix = f"rdmut-{tag}", f"rdmut-{tag}"
    _set_quota(broker, "client-id", client_id, "controller_mutation_rate", 1.0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": client_id})
    outcomes = []
    for name, partitions in ((f"{prefix}-a", 12), (f"{prefix}-b", 1)):
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        outcomes.append(f"create {name} {_outcome(futures[name])}")
    futures = admin.create_partitions([NewPartitions(f"{prefix}-a", 13)])
    outcomes.append(f"partitions {prefix}-a {_outcome(futures[f'{prefix}-a'])}")
    futures = admin.delete_topics([f"{prefix}-a"])
    outcomes.append(f"delete {prefix}-a {_outcome(futures[f'{prefix}-a'])}")
    return [line.replace(prefix, "T") for line in outcomes]


def test_confluent_kafka_admin_sees_the_mutation_rate_as_with_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    # librdkafka asks CreateTopics v4, CreatePartitions v1 and DeleteTopics v4 (or so): versions
    # that are never refused, only told to wait (which librdkafka does).
    expected = _librdkafka_mutations(apache_kafka_node)
    assert expected == ["create T-a ok", "create T-b ok", "partitions T-a ok", "delete T-a ok"]
    assert _librdkafka_mutations(kafka_wire_node) == expected


def _old_version_throttles(broker: BrokerProcess) -> list[tuple[int, bool]]:
    """Two CreateTopics v5 (before THROTTLING_QUOTA_EXCEEDED) over the rate: (error code,
    throttled) of each. The first leaves the bucket at -1 (12 of 11 credits) and the connection
    muted until it is back at 0; the second's 3 partitions take it to -3."""
    tag = uuid.uuid4().hex[:8]
    _set_quota(broker, "client-id", f"old-{tag}", "controller_mutation_rate", 1.0)
    wire = _Wire(broker, f"old-{tag}")
    facts = []
    try:
        for name, partitions in ((f"old-{tag}-a", 12), (f"old-{tag}-b", 3)):
            topic = CreateTopicsRequestCreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1
            )
            answer = wire.ask(CreateTopicsRequest(topics=[topic], timeout_ms=30_000), CREATE_TOPICS, 5)
            assert isinstance(answer, CreateTopicsResponse)
            facts.append((answer.topics[0].error_code, answer.throttle_time_ms > 0))
    finally:
        wire.close()
    return facts


def test_old_versions_are_throttled_without_the_error_as_by_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    expected = _old_version_throttles(apache_kafka_node)
    assert expected == [(0, True), (0, True)]  # both created; each answer says to wait
    assert _old_version_throttles(kafka_wire_node) == expected


# -- request_percentage -------------------------------------------------------------------------


def _until_throttled(broker: BrokerProcess) -> int:
    """Metadata requests back to back under ``request_percentage`` 0.01 (a hundredth of a
    percent of one thread: about 1 ms of handling over the 10 s the windows span at first):
    the first throttle time answered (0: none within 2,000 requests)."""
    client_id = f"req-{uuid.uuid4().hex[:8]}"
    _set_quota(broker, "client-id", client_id, "request_percentage", 0.01)
    wire = _Wire(broker, client_id)
    try:
        for _ in range(2000):
            answer = wire.ask(MetadataRequest(topics=[]), METADATA, 12)
            assert isinstance(answer, MetadataResponse)
            if answer.throttle_time_ms > 0:
                return answer.throttle_time_ms
        return 0
    finally:
        wire.close()


def test_requests_over_their_request_percentage_are_throttled_as_by_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    for broker in (apache_kafka_node, kafka_wire_node):
        throttle_ms = _until_throttled(broker)
        assert 0 < throttle_ms <= 1000, (broker.name, throttle_ms)  # at most one window (1 s)


# -- connection creation rates ---------------------------------------------------------------


def _connections_until_held(broker: BrokerProcess, source: str) -> tuple[int, float]:
    """Connections from ``source``, one after the other, each asking ApiVersions, under its IP's
    ``connection_creation_rate`` of 1 per second: how many were answered before one was not,
    and how long the broker held that one before closing it."""
    _set_quota(broker, "ip", source, "connection_creation_rate", 1.0)
    for served in range(30):
        wire = _Wire(broker, "conn-rate", source)
        began = time.monotonic()
        try:
            answer = wire.ask(ApiVersionsRequest(), API_VERSIONS, 0, timeout_s=10.0)
        finally:
            wire.close()
        if answer is None:
            return served, time.monotonic() - began
    return 30, 0.0


def test_connections_over_their_ip_rate_are_closed_late_as_by_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    sources = random.sample(range(2, 250), 2)
    facts = {
        broker.name: _connections_until_held(broker, f"127.0.0.{last}")
        for broker, last in zip((apache_kafka_node, kafka_wire_node), sources, strict=True)
    }
    print(facts)
    # 10 connections over the 10 s the windows span at first are 1 per second; the 11th is over,
    # held for its throttle time (at most one window: 1 s), then closed unanswered.
    for name, (served, held_s) in facts.items():
        assert served == 10, (name, facts)
        assert 0.5 <= held_s <= 5.0, (name, facts)


@pytest.fixture
def rate_limited_brokers(tmp_path: Path) -> Iterator[dict[str, BrokerProcess]]:
    """A Kafka 4.4 node and a ``kafka-wire serve`` of their own, each started with
    ``max.connection.creation.rate=5``: connections other tests made in the last seconds would
    count against a shared node's rate (the session's Kafka node once let only 2 go at once)."""
    brokers: dict[str, BrokerProcess] = {
        "kafka": apache_kafka(tmp_path / "kafka", overrides={BROKER_RATE: "5"}),
        "kafka_wire": kafka_wire(tmp_path / "kafka_wire", settings={BROKER_RATE: "5"}),
    }
    try:
        for broker in brokers.values():
            broker.start()
        yield brokers
    finally:
        for broker in brokers.values():
            broker.close()


def _connection_waits(broker: BrokerProcess, waits: int) -> tuple[int, list[float], float]:
    """Connections opened one after the other, each asking ApiVersions, until ``waits`` of them
    were answered 0.1 s or more after the one before (at most 100): how many went before the
    first wait, the waits (s), and how long those that went at once took (s)."""
    prompt, late = 0, []
    start = last = time.monotonic()
    prompt_s = 0.0
    for i in range(100):
        wire = _Wire(broker, f"rate-{i}")
        try:
            assert wire.ask(ApiVersionsRequest(), API_VERSIONS, 0) is not None, i  # none refused
        finally:
            wire.close()
        now = time.monotonic()
        if now - last >= 0.1:
            late.append(now - last)
            if len(late) == waits:
                break
        elif not late:
            prompt += 1
            prompt_s = now - start
        last = now
    return prompt, late, prompt_s


def test_connections_over_the_broker_rate_wait_to_be_served_as_on_kafka(
    rate_limited_brokers: dict[str, BrokerProcess],
) -> None:
    """5 connections per second over the 10 s the windows span at first: up to 50 connections
    go at once (fewer when the broker's other connections of the last seconds count too), then
    each waits for its throttle time (a fifth of a second; at most one window, 1 s) before it is
    served, and none is refused."""
    facts = {name: _connection_waits(broker, 3) for name, broker in rate_limited_brokers.items()}
    print(facts)
    for name, (prompt, late, prompt_s) in facts.items():
        # Served at once up to the burst (fewer when the broker's connections of the last seconds
        # count too: Kafka 4.4 and kafka-wire alike), and the 5 per second of the time the burst
        # itself took (about 0.3 s on an idle machine, longer on a loaded one), then 0.2 s or more
        # each, at most a window.
        assert 20 <= prompt <= 50 + 5 * prompt_s + 2, (name, facts)
        assert len(late) == 3 and max(late) <= 2.5, (name, facts)
