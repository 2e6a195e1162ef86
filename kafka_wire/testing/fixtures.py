"""pytest fixtures: a Kafka broker or cluster in this process, with fault injection.

Loaded as a pytest plugin (the ``pytest11`` entry point ``kafka_wire.testing.fixtures``, so any
project with kafka_wire installed has them), or explicitly with
``pytest_plugins = ["kafka_wire.testing.fixtures"]`` in a ``conftest.py``.

- ``kafka_cluster``: one broker, started for the test and stopped after it;
- ``kafka_cluster_factory``: ``factory(size=3, properties={...})`` starts a KRaft cluster of
  ``size`` combined nodes (or one broker) for the test; every cluster it started stops after it.

Both give a :class:`~kafka_wire.adapters.local_cluster.LocalCluster`: ``.bootstrap`` for the
client, and fault methods that may be called from the test's thread (the brokers run on an asyncio
loop in a thread of their own): ``push_errors``, ``add_latency``, ``close_mid_response``,
``clear``, ``down`` / ``up``, ``move_leader``, plus ``create_topic`` and ``leader``. See
docs/guide/fault-injection.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pytest

from kafka_wire.adapters.local_cluster import LocalCluster

#: ``factory(size=1, properties=None) -> LocalCluster``, started.
ClusterFactory = Callable[..., LocalCluster]


@pytest.fixture
def kafka_cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterFactory]:
    """Start clusters of 1..N nodes in this process; each stops after the test."""
    started: list[LocalCluster] = []

    def factory(size: int = 1, properties: Mapping[str, str] | None = None) -> LocalCluster:
        cluster = LocalCluster(tmp_path_factory.mktemp("kafka-cluster"), size, properties)
        cluster.start()
        started.append(cluster)
        return cluster

    try:
        yield factory
    finally:
        for cluster in reversed(started):
            cluster.stop()


@pytest.fixture
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> LocalCluster:
    """One broker on a free port of 127.0.0.1, with fault injection; stopped after the test."""
    return kafka_cluster_factory(1)


__all__ = ["ClusterFactory", "LocalCluster", "kafka_cluster", "kafka_cluster_factory"]
