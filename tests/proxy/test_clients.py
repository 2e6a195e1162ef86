"""Real clients through ``kafka-wire proxy`` to every upstream: topics created, records produced
with every codec and consumed in groups, and metadata that names only the proxy's addresses.

The Java client runs in both releases the harness has (``java``: 3.9.1, ``java4``: 4.4.0).
Codecs are spread so that each client uses every codec once over the upstreams: client ``c`` on
upstream ``u`` produces with codec ``(u + c) % 5``, and on ``kafka-wire serve`` once more with
codec ``(4 + c) % 5``. The clients of one upstream run at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.interop.harness import ALL_CLIENTS, COMPRESSIONS, DriverOptions, DriverRun, run_driver
from tests.proxy.conftest import UPSTREAMS, Upstream
from tests.proxy.harness import ProxyProcess, proxy

COUNT = 6
PARTITIONS = 3


@pytest.fixture(scope="module")
def plain_proxy(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    # Only the first node is given: the proxy learns the others from the answers and opens a port
    # for each as it appears.
    first = upstream.bootstrap.split(",")[0]
    process = proxy(tmp_path_factory.mktemp(f"proxy-{upstream.name}"), first)
    try:
        process.start()
        yield process
    finally:
        process.close()


def _run(client: str, bootstrap: str, topic: str, codec: str, *, create: bool = True) -> DriverRun:
    if not create:  # another client creates the topic (see the test)
        run_driver(
            "confluent",
            bootstrap,
            "create",
            topic=topic,
            timeout_s=60,
            options=DriverOptions(partitions=PARTITIONS),
        ).check()
    return run_driver(
        client,  # type: ignore[arg-type]  # one of ALL_CLIENTS
        bootstrap,
        "metadata,create,produce,consume" if create else "metadata,produce,consume",
        topic=topic,
        count=COUNT,
        # Six clients at once beside the rest of the suite: a group's join and first fetch through
        # the proxy have taken most of a minute there (kafka-python consumed nothing in 60 s once).
        timeout_s=120,
        options=DriverOptions(partitions=PARTITIONS, compression=codec),
    )


def test_every_client_through_the_proxy(
    upstream: Upstream, plain_proxy: ProxyProcess, tmp_path: Path
) -> None:
    u = UPSTREAMS.index(upstream.name)
    jobs = [(client, COMPRESSIONS[(u + c) % 5]) for c, client in enumerate(ALL_CLIENTS)]
    if upstream.name == "kafka_wire":
        jobs += [(client, COMPRESSIONS[(4 + c) % 5]) for c, client in enumerate(ALL_CLIENTS)]
    # kafkajs's create step waits for the new topic's leaders and gives up on the first
    # UNKNOWN_TOPIC_OR_PARTITION, which a broker whose metadata lags its controller answers
    # (Apache Kafka 4.4 and a kafka_wire cluster, directly as through the proxy): on those,
    # confluent-kafka creates kafkajs's topic.
    lagging = upstream.name in ("kafka_wire_cluster", "apache_kafka")

    def one(job: tuple[str, str]) -> DriverRun:
        client, codec = job
        create = not (lagging and client == "kafkajs")
        return _run(client, plain_proxy.bootstrap, f"px-{client}-{codec}", codec, create=create)

    # One group consumer first: the first FindCoordinator makes the broker create its offsets
    # topic, which takes seconds while six clients share the two cores, longer than kafkajs's
    # driver retries a coordinator that is not available.
    _run("confluent", plain_proxy.bootstrap, "px-first-group", "none").check()
    with ThreadPoolExecutor(len(ALL_CLIENTS)) as pool:
        runs = list(pool.map(one, jobs))
    proxy_ports = set(plain_proxy.routes)
    for (client, codec), run in zip(jobs, runs, strict=True):
        run.check()
        brokers = run.event("metadata")["brokers"]
        expected_nodes = 3 if upstream.name == "kafka_wire_cluster" else 1
        assert len(brokers) == expected_nodes, (client, brokers)
        for _, host, port in brokers:
            assert host == "127.0.0.1" and port != int(upstream.bootstrap.split(",")[0].rpartition(":")[2])
        produced = run.event("produced")
        consumed = run.event("consumed")
        # A string, not a tuple: pytest shortens each item of a tuple message to a line.
        assert sorted(consumed["values"]) == sorted(f"{_name(client)}-{i}" for i in range(COUNT)), (
            f"{client} {codec}: {run.describe(lines=80)}\nproxy log tail:\n{plain_proxy.log()[-4000:]}"
        )
        assert len(produced["records"]) == COUNT
    # Every broker the clients were told about is a port the proxy listens on: one per node.
    listening = _ports_in_log(plain_proxy)
    seen = {port for run in runs for _, _, port in run.event("metadata")["brokers"]}
    assert seen <= listening and proxy_ports <= listening, (seen, listening)
    assert len(listening) == len(upstream.bootstrap.split(","))


def _name(client: str) -> str:
    """The value prefix each driver uses (see clients/driver_common.py)."""
    return "kafka-python" if client == "kafka_python" else client


def _ports_in_log(process: ProxyProcess) -> set[int]:
    """Every proxy port the proxy's log says it listens on."""
    ports = set()
    for line in process.log().splitlines():
        if "proxy port " in line:
            ports.add(int(line.split("proxy port ", 1)[1].split()[0]))
    return ports
