from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from tests.e2e.apache_kafka import KafkaNode

#: The fault-injection fixtures (also a pytest11 entry point once kafka_wire is installed).
pytest_plugins = ["kafka_wire.testing.fixtures"]

ROOT = Path(__file__).resolve().parents[1]
#: Request frames recorded from the real clients by ``tools/record_captures.py`` (``make captures``).
CAPTURES = ROOT / "tests" / "data" / "captures"

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("KW_MAX_EXAMPLES", "12")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "nightly",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: What the pure run of tools/test_flavours.py leaves to the compiled run: the compiled-against-pure
#: comparisons (they need the compiled flavour; left out rather than listed as thousands of skips)
#: and the differential against Kafka's own classes (one run is enough: test_native holds the
#: flavours to identical bytes).
COMPILED_RUN_ONLY = (
    "tests/codec/test_native.py",
    "tests/records/test_native.py",
    "tests/records/test_summarize_walk.py",
    "tests/codec/test_kafka_differential.py",
)


def _pure_run() -> bool:
    return os.environ.get("KAFKA_WIRE_EXPECT_FLAVOUR") == "pure"


def pytest_report_header() -> str | None:
    if _pure_run():
        return f"pure-flavour run: {', '.join(COMPILED_RUN_ONLY)} deselected (the compiled run has them)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _pure_run():
        return
    dropped = [item for item in items if item.nodeid.split("::")[0] in COMPILED_RUN_ONLY]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid.split("::")[0] not in COMPILED_RUN_ONLY]


@pytest.fixture(scope="session")
def apache_kafka_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """One Apache Kafka 4.4 node (KRaft, broker and controller in one JVM) for the whole session,
    started when a test first asks for it and shared by every test that runs against Kafka: the
    ``apache_kafka`` param of the e2e ``target`` and of the interop ``peer``. Tests on it use their
    own topic and group names. It runs with ``QUICK_GROUPS`` (no initial rebalance delay), as the
    e2e suite's ``kafka-wire serve`` does. Without ``make peers`` it fails with a RuntimeError
    saying so."""
    from tests.e2e.apache_kafka import apache_kafka
    from tests.e2e.brokers import QUICK_GROUPS

    node = apache_kafka(tmp_path_factory.mktemp("apache_kafka"), overrides=QUICK_GROUPS)
    node.start()
    try:
        yield node
    finally:
        node.close()
