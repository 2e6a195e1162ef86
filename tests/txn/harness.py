"""Running the transactions scenario's drivers (``clients/common.py``) and checking what they saw.

Clients: ``confluent`` (confluent-kafka), ``aiokafka``, ``kafkajs``, ``java`` (kafka-clients
3.9.1 from pyflink/lib: transaction version 1), ``java4`` (kafka-clients 4.4.0 from ``make
peers``: transaction version 2 once the cluster finalizes it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from confluent_kafka import KafkaError

from tests.interop.harness import ROOT, java_jars

Client = Literal["confluent", "aiokafka", "kafkajs", "java", "java4"]
CLIENTS: Final[tuple[Client, ...]] = ("confluent", "aiokafka", "kafkajs", "java", "java4")
#: What a group's coordinator answers (through confluent-kafka) while ``__consumer_offsets`` is
#: created or loaded, or the group's coordinator moves: asked again.
COORDINATOR_ERRORS: Final = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)
JAVA_SOURCE: Final = Path(__file__).parent / "java" / "TxnDriver.java"
PEERS_LIB: Final = ROOT / "build" / "peers" / "kafka-4.4" / "lib"
#: The 4.4 client's jars, by file name prefix.
JAVA4_JARS: Final = ("kafka-clients-4.4.0", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")


def java4_jars() -> list[Path]:
    jars = [next(iter(sorted(PEERS_LIB.glob(f"{prefix}*.jar"))), None) for prefix in JAVA4_JARS]
    missing = [p for p, jar in zip(JAVA4_JARS, jars, strict=True) if jar is None]
    if missing:
        raise RuntimeError(f"no {missing} in {PEERS_LIB}: run `make peers`")
    return [jar for jar in jars if jar is not None]


def _java_command(jars: list[Path], *args: str) -> list[str]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        raise RuntimeError("java/javac are not on PATH: the Java peer needs a JDK 17")
    digest = hashlib.sha256(JAVA_SOURCE.read_bytes())
    for jar in jars:
        digest.update(str(jar).encode())
    classes = Path(tempfile.gettempdir()) / f"kafka-wire-txn-java-{digest.hexdigest()[:16]}"
    if not (classes / "TxnDriver.class").is_file():
        staging = Path(tempfile.mkdtemp(prefix="kafka-wire-txn-java-"))
        result = subprocess.run(
            [javac, "-d", str(staging), "-cp", os.pathsep.join(map(str, jars)), str(JAVA_SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"javac failed:\n{result.stderr}")
        try:
            staging.rename(classes)
        except OSError:  # compiled meanwhile by another process
            shutil.rmtree(staging, ignore_errors=True)
    classpath = os.pathsep.join(map(str, [classes, *jars]))
    return [java, "-XX:TieredStopAtLevel=1", "-cp", classpath, "TxnDriver", *args]


def command(client: Client, bootstrap: str, options: list[str]) -> list[str]:
    if client == "java":
        return _java_command(java_jars(), client, bootstrap, *options)
    if client == "java4":
        return _java_command(java4_jars(), client, bootstrap, *options)
    if client == "kafkajs":
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH: the kafkajs peer needs Node.js")
        return [node, str(Path(__file__).parent / "clients" / "kafkajs_txn.js"), bootstrap, *options]
    return [sys.executable, "-m", f"tests.txn.clients.{client}_txn", bootstrap, *options]


@dataclass
class Outcome:
    """What one run of the scenario saw (see ``clients/common.py``)."""

    client: Client
    events: list[dict[str, Any]]
    stderr: str

    def event(self, name: str, **match: Any) -> dict[str, Any]:
        for event in self.events:
            if event["event"] == name and all(event.get(k) == v for k, v in match.items()):
                return event
        raise AssertionError(
            f"{self.client}: no {name} {match} event; events {self.events}\n{self.stderr[-3000:]}"
        )

    def consumed(self, isolation: str) -> dict[int, list[str]]:
        """The values a consumer read, by partition, in offset order (offsets checked increasing)."""
        by_partition: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for partition, offset, value in self.event("consumed", isolation=isolation)["records"]:
            by_partition[partition].append((offset, value))
        out = {}
        for partition, records in by_partition.items():
            offsets = [o for o, _ in records]
            assert offsets == sorted(set(offsets)), f"{self.client} {isolation}: offsets {offsets}"
            out[partition] = [v for _, v in records]
        return out


def run_scenario(
    client: Client, bootstrap: str, *, topic: str, source: str, count: int = 10, timeout_s: float = 90.0
) -> Outcome:
    options = [
        "--topic", topic, "--source", source, "--group", f"{topic}-group", "--txn-id", f"{topic}-txn",
        "--count", str(count), "--partitions", "2", "--timeout-s", str(timeout_s),
    ]  # fmt: skip
    result = subprocess.run(
        command(client, bootstrap, options),
        capture_output=True,
        text=True,
        timeout=timeout_s + 30,
        cwd=ROOT,
        check=False,
    )
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    outcome = Outcome(client, events, result.stderr)
    outcome.event("done")
    return outcome


def check(outcome: Outcome, partitions: int = 2) -> None:
    """read_committed saw exactly the committed records, in order; read_uncommitted every record
    sent, in order; the group's offset is the last transaction's."""
    transacted = outcome.event("transacted")
    committed: dict[int, list[str]] = defaultdict(list)
    everything: dict[int, list[str]] = defaultdict(list)
    for partition, value in transacted["committed"]:
        committed[partition].append(value)
    for partition, value in transacted["committed"] + transacted["aborted"]:
        everything[partition].append(value)
    phase = {"A": 0, "B": 1, "C": 2}
    for values in everything.values():  # in the order sent: A, then B, then C
        values.sort(key=lambda v: (phase[v.split("-")[-2]], int(v.split("-")[-1])))
    assert outcome.consumed("read_committed") == dict(committed), outcome.client
    assert outcome.consumed("read_uncommitted") == dict(everything), outcome.client
    assert outcome.event("committed")["offset"] == 9, outcome.client
