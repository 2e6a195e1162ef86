"""KIP-848 consumer groups (``group.protocol=consumer``) on a three-node ``kafka-wire`` cluster:
the scenario of ``tests/e2e/test_consumer_protocol.py`` (three members, one leaves and only its
partitions move, every record processed and committed), then every node restarts and a new
member of the group starts from the committed offsets. The group coordinator is the leader of the
group's ``__consumer_offsets`` partition, replicated to the others: the group's records and
offsets are read back from the log by whichever node leads it after the restart."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import ClusterFactory
from tests.e2e.brokers import QUICK_GROUPS
from tests.e2e.test_consumer_protocol import consume_from_committed
from tests.e2e.test_group_rebalance import members_leave_and_rebalance
from tests.interop.harness import Client


@pytest.mark.parametrize("client", ["confluent", "java4"])
def test_consumer_group_on_a_cluster(cluster_factory: ClusterFactory, client: Client) -> None:
    cluster = cluster_factory(QUICK_GROUPS)
    cluster.start_all()
    name = f"kip848-cluster-{client}"
    produced = members_leave_and_rebalance(cluster, client, "consumer", name=name)
    cluster.stop_all()
    cluster.start_many(cluster.nodes)
    cluster.wait_brokers(set(cluster.nodes))
    consume_from_committed(cluster, client, name, produced)
