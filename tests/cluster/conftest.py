"""Fixtures of the cluster tests: a :class:`~tests.cluster.harness.LocalCluster` per test.

``cluster_factory(overrides)`` builds (does not start) a three-node cluster in the test's temp
dir; every cluster it built is SIGKILLed at the end of the test whatever happened.
When a test fails (or its setup does), the tail of each node's stderr and stdout of the clusters
it used (those it built, and any cluster fixture it takes) is added to the failure's report as a
"node logs" section.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path

import pytest

from tests.cluster.harness import LocalCluster

ClusterFactory = Callable[..., LocalCluster]

_CLUSTERS = pytest.StashKey[list[LocalCluster]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed setup or test shows the end of every node's output."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        used: list[LocalCluster] = [*item.stash.get(_CLUSTERS, [])]
        arguments = getattr(item, "funcargs", {})
        used += [c for c in arguments.values() if isinstance(c, LocalCluster) and c not in used]
        for cluster in used:
            report.sections.append((f"node logs ({cluster.workdir.name})", cluster.log_tails()))
    return report


@pytest.fixture
def cluster_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClusterFactory]:
    built = request.node.stash.setdefault(_CLUSTERS, [])

    def build(
        overrides: Mapping[str, str] | None = None, size: int = 3, controllers: int = 0
    ) -> LocalCluster:
        cluster = LocalCluster(tmp_path / f"cluster-{len(built)}", size, overrides, controllers)
        built.append(cluster)
        return cluster

    try:
        yield build
    finally:
        for cluster in built:
            cluster.close()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    """A started three-node cluster with the default settings."""
    started = cluster_factory()
    started.start_all()
    return started
