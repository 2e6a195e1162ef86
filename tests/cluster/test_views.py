"""kcat's and the Java admin client's views of the cluster are the cluster's own (issue 15).

For each partition of a three-partition, replication-factor-3 topic, ``kcat -L`` (its text
output, parsed) and the Java client's ``Admin.describeTopics`` show the leader, replicas and ISR
that the cluster reports itself through kafka_wire's client, both in Metadata and in
DescribeTopicPartitions: first with every node up, then after the leader of partition 0 was
SIGKILLed and the cluster moved on without it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Final

import pytest

from tests.cluster.harness import LocalCluster, wait_until
from tests.cluster.producers import CLUSTER_CLIENT_SOURCE
from tests.interop.harness import JAVA_CLIENTS, JavaClient, java_command

pytestmark = pytest.mark.cluster

TOPIC: Final = "views"
PARTITIONS: Final = 3
#: (leader, replicas, isr as a sorted tuple) of each partition.
View = dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]
_KCAT_PARTITION: Final = re.compile(
    r"^\s*partition (\d+), leader (-?\d+), replicas: ([\d,]*), isrs: ([\d,]*)(?:, Broker: .*)?$"
)


def _ids(text: str) -> tuple[int, ...]:
    return tuple(sorted(int(i) for i in text.split(",") if i))


def kcat_view(bootstrap: str) -> View:
    """``kcat -L -b BOOTSTRAP -t TOPIC``, its partition lines parsed."""
    kcat = shutil.which("kcat")
    assert kcat is not None, (
        "kcat is not on PATH: the kcat peer is installed by `make install` (Debian's kcat)"
    )
    result = subprocess.run(
        [kcat, "-L", "-b", bootstrap, "-t", TOPIC, "-m", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, f"kcat -L exited {result.returncode}: {result.stderr}"
    view: View = {}
    for line in result.stdout.splitlines():
        if line.strip().startswith("partition "):
            match = _KCAT_PARTITION.match(line)
            assert match is not None, f"unparsed kcat line {line!r} in:\n{result.stdout}"
            view[int(match[1])] = (int(match[2]), _ids(match[3]), _ids(match[4]))
    return view


def java_view(bootstrap: str, client: JavaClient) -> View:
    """The Java client's ``Admin.describeTopics`` (``ClusterClient describe``) in one release."""
    result = subprocess.run(
        java_command(CLUSTER_CLIENT_SOURCE, "describe", bootstrap, TOPIC, client=client),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, (
        f"ClusterClient describe exited {result.returncode}: {result.stderr[-2000:]}"
    )
    view: View = {}
    for line in result.stdout.splitlines():
        item = json.loads(line)
        view[item["partition"]] = (
            item["leader"],
            tuple(sorted(item["replicas"])),
            tuple(sorted(item["isr"])),
        )
    return view


def own_views(cluster: LocalCluster) -> dict[str, View]:
    """What each live node answers, in Metadata and in DescribeTopicPartitions."""
    views: dict[str, View] = {}
    for node in cluster.alive():
        for name, answer in (
            ("Metadata", cluster.metadata(TOPIC, node)),
            ("DescribeTopicPartitions", cluster.describe_partitions(TOPIC, node)),
        ):
            views[f"{name} of node {node.node_id}"] = {
                p: (v.leader, tuple(sorted(v.replicas)), tuple(sorted(v.isr))) for p, v in answer.items()
            }
    return views


def check_views_agree(cluster: LocalCluster, what: str) -> View:
    """Until the cluster's own answers agree with each other and with kcat and the Java admin
    client in both releases (their metadata may lag a moment behind a change); the agreed view."""
    bootstrap = ",".join(n.bootstrap for n in cluster.alive())
    seen: dict[str, View] = {}

    def agree() -> View | None:
        seen.clear()
        seen.update(own_views(cluster))
        seen["kcat -L"] = kcat_view(bootstrap)
        for client in JAVA_CLIENTS:
            seen[f"Java describeTopics ({client})"] = java_view(bootstrap, client)
        distinct = {json.dumps(sorted(v.items())) for v in seen.values()}
        first = next(iter(seen.values()))
        return first if len(distinct) == 1 and len(first) == PARTITIONS else None

    try:
        return wait_until(f"every view to agree ({what})", agree, 30.0, 1.0)
    except AssertionError as e:
        raise AssertionError(f"{e}; the views: {json.dumps(seen, indent=1)}") from None


def test_views_match(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC, PARTITIONS, 3)
    cluster.wait_full_isr(TOPIC)
    everyone = tuple(sorted(cluster.nodes))
    before = check_views_agree(cluster, "every node up")
    assert all(replicas == everyone and isr == everyone for _, replicas, isr in before.values()), before

    victim = before[0][0]
    cluster.kill(victim)
    cluster.wait_leader(TOPIC, 0, allowed=[n for n in cluster.nodes if n != victim])
    cluster.wait_isr(TOPIC, lambda v: victim not in v.isr, f"node {victim} out of every ISR")
    after = check_views_agree(cluster, f"node {victim} killed")
    for p, (leader, replicas, isr) in after.items():
        assert leader != victim and victim not in isr and replicas == everyone, f"partition {p}: {after[p]}"
