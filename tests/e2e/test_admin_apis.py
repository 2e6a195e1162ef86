"""The replication admin APIs of one broker (Kafka 4.4 and ``kafka-wire serve``: ``disk_target``)
against the Java admin client, 3.9.1 and 4.4.0: ``describeTopics`` (DescribeTopicPartitions),
``describeLogDirs``, ``describeProducers``, ``describeMetadataQuorum``, ``electLeaders`` and
``listPartitionReassignments`` (``tests/e2e/java/AdminProbe.java``, compiled once per release).
Both brokers are single KRaft nodes with node id 1 that are their own quorum's one voter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.brokers import BrokerProcess
from tests.interop.harness import JAVA_CLIENTS, JavaClient, java_command

PROBE = Path(__file__).resolve().parent / "java" / "AdminProbe.java"


@pytest.mark.parametrize("client", JAVA_CLIENTS)
def test_the_java_admin_client_sees_a_one_broker_cluster(
    disk_target: BrokerProcess, client: JavaClient
) -> None:
    result = subprocess.run(
        java_command(PROBE, disk_target.bootstrap, f"admin-probe-{client}", client=client),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 0, (lines, result.stderr[-3000:])
    facts = [line.split(" ", 1) for line in lines]
    by_key: dict[str, list[str]] = {}
    for key, value in facts:
        by_key.setdefault(key, []).append(value)
    assert by_key["partition"] == ["0 leader 1 replicas [1] isr [1]", "1 leader 1 replicas [1] isr [1]"]
    assert by_key["topic_id"][0] != "AAAAAAAAAAAAAAAAAAAAAA"
    data_dir = str(disk_target.data_dir.resolve())
    logdirs = sorted(by_key["logdir"])
    assert [d.split(" ")[:2] for d in logdirs] == [[data_dir, "0"], [data_dir, "1"]]
    size_0 = int(logdirs[0].split(" ")[2])
    assert size_0 > 0 and logdirs[1].endswith(" 0 0")  # partition 1 is empty; no lag
    (producer,) = by_key["producer"]
    _, epoch, last_sequence, has_coordinator_epoch, has_txn_start = producer.split(" ")
    assert (epoch, last_sequence, has_coordinator_epoch, has_txn_start) == ("0", "2", "false", "false")
    assert by_key["quorum"] == ["leader 1 epoch 1 voters [1] observers 0"]
    assert by_key["elect"] == ["ElectionNotNeededException"]
    assert by_key["reassignments"] == ["0"]
