"""The fault-injection fixtures (``kafka_wire.testing.fixtures``) seen by a real client,
confluent-kafka (librdkafka): injected errors, added latency, a broker down and up, a connection
closed mid-response, and (on a cluster) a leader move."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.adapters.local_cluster import FaultError, LocalCluster
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.testing.fixtures import ClusterFactory

#: librdkafka settings that keep the tests quick: short backoffs, no batching delay.
QUICK = {
    "linger.ms": 0,
    "retry.backoff.ms": 50,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 200,
    "broker.address.family": "v4",
}


def _producer(cluster: LocalCluster, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap, **QUICK, **extra})


def _deliver(producer: Producer, topic: str, value: bytes, timeout_s: float = 30.0) -> Message:
    """Produce one record and wait for its delivery report."""
    reports: list[Message] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        reports.append(msg)

    producer.produce(topic, value, on_delivery=on_delivery)
    assert producer.flush(timeout_s) == 0, "the delivery report did not come"
    [report] = reports
    return report


def test_an_injected_produce_error_reaches_the_delivery_report(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.create_topic("errors")
    producer = _producer(kafka_cluster)
    assert _deliver(producer, "errors", b"first").error() is None
    kafka_cluster.push_errors(ApiKey.PRODUCE, ErrorCode.INVALID_RECORD)
    report = _deliver(producer, "errors", b"refused")
    error = report.error()
    assert error is not None and error.code() == KafkaError.INVALID_RECORD
    assert _deliver(producer, "errors", b"after").offset() == 1  # the refused one was not written


def test_an_injected_admin_error_fails_the_admin_call(kafka_cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap, "broker.address.family": "v4"})
    kafka_cluster.push_errors(ApiKey.CREATE_TOPICS, ErrorCode.POLICY_VIOLATION)
    future = admin.create_topics([NewTopic("refused", 1, 1)])["refused"]
    with pytest.raises(KafkaException) as raised:
        future.result(30)
    assert raised.value.args[0].code() == KafkaError.POLICY_VIOLATION
    admin.create_topics([NewTopic("refused", 1, 1)])["refused"].result(30)  # only the next one failed


def test_added_latency_is_observed(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.create_topic("slow")
    producer = _producer(kafka_cluster)
    _deliver(producer, "slow", b"warm-up")  # metadata and connections
    start = time.monotonic()
    _deliver(producer, "slow", b"fast")
    fast_s = time.monotonic() - start
    kafka_cluster.add_latency(300, ApiKey.PRODUCE)
    start = time.monotonic()
    _deliver(producer, "slow", b"slow")
    slow_s = time.monotonic() - start
    assert slow_s >= 0.3 and slow_s - fast_s >= 0.25, (fast_s, slow_s)
    kafka_cluster.clear()
    start = time.monotonic()
    _deliver(producer, "slow", b"fast again")
    assert time.monotonic() - start < 0.3


def test_a_broker_down_then_up(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.create_topic("downs")
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap, "broker.address.family": "v4"})
    producer = _producer(kafka_cluster, **{"message.timeout.ms": 30_000})
    _deliver(producer, "downs", b"before")
    kafka_cluster.down()
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=1.5)  # every connection is closed as it comes
    reports: list[Message] = []
    producer.produce("downs", b"while down", on_delivery=lambda err, msg: reports.append(msg))
    producer.poll(1.0)
    assert reports == []  # held by the client while the broker is down
    kafka_cluster.up()
    assert producer.flush(30) == 0
    assert [(m.error(), m.offset()) for m in reports] == [(None, 1)]
    assert "downs" in admin.list_topics(timeout=10).topics


def test_a_connection_closed_mid_response_then_the_client_succeeds(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.create_topic("cut")
    producer = _producer(kafka_cluster, **{"enable.idempotence": True})
    _deliver(producer, "cut", b"before")
    kafka_cluster.close_mid_response(ApiKey.PRODUCE)
    report = _deliver(producer, "cut", b"answer lost")
    # The write was made; its answer was cut: the idempotent producer's retry is recognised as
    # the same batch and answered with the offset it got the first time.
    assert (report.error(), report.offset()) == (None, 1)
    assert _deliver(producer, "cut", b"after").offset() == 2


def test_a_single_node_has_no_leader_to_move_to(kafka_cluster: LocalCluster) -> None:
    kafka_cluster.create_topic("one")
    with pytest.raises(FaultError):
        kafka_cluster.move_leader("one", 0, 2)


@pytest.mark.cluster
def test_a_leader_move_is_seen_by_the_client(kafka_cluster_factory: ClusterFactory) -> None:
    cluster = kafka_cluster_factory(3)
    cluster.create_topic("moves", partitions=1, replication_factor=3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    producer = _producer(cluster, **{"acks": "all", "enable.idempotence": True})
    assert _deliver(producer, "moves", b"before").error() is None
    before = admin.list_topics("moves", timeout=10).topics["moves"].partitions[0].leader
    target = next(node for node in (1, 2, 3) if node != before)
    cluster.move_leader("moves", 0, target)
    after = admin.list_topics("moves", timeout=10).topics["moves"].partitions[0].leader
    assert (before, after) == (before, target)
    report = _deliver(producer, "moves", b"after")
    assert (report.error(), report.offset()) == (None, 1)
    assert cluster.leader("moves", 0) == target
