"""Apache Kafka 4.4.0 as a test peer: the reference broker, started from the jars of ``make peers``.

``make peers`` (a dependency of ``make test``) resolves Kafka 4.4.0's broker, tools and clients
from Maven Central into ``build/peers/kafka-4.4/lib`` (``tools/peers/pom.xml``). A node here is
what Kafka's quickstart runs: one KRaft process with ``process.roles=broker,controller``, its
storage formatted by Kafka's own ``kafka.tools.StorageTool format`` (``--standalone``; the
clusters of ``tests/cluster`` format theirs for static voters), then ``kafka.Kafka
server.properties`` with the JVM options of Kafka's start scripts. Its log4j output goes to the
node's log file in the test's temp dir. It is ready when its client port answers an ApiVersions
request.

A missing peer is an error (``make peers``), never a skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import struct
import subprocess
import time
import uuid
from base64 import urlsafe_b64encode
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from tests.e2e.brokers import BrokerProcess, _copy
from tests.interop.harness import PEERS_LIB, Address, free_port

KAFKA_VERSION: Final = "4.4.0"
#: Where ``make peers`` puts Kafka's jars.
KAFKA_LIB: Final = PEERS_LIB
#: Kafka's ``kafka-server-start.sh`` heap (``KAFKA_HEAP_OPTS``).
HEAP_OPTS: Final = ("-Xmx1G", "-Xms1G")
#: Kafka's ``kafka-run-class.sh`` defaults (``KAFKA_JVM_PERFORMANCE_OPTS``).
JVM_PERFORMANCE_OPTS: Final = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
#: A Kafka node takes 3-6 s from exec to answering on two cores; a loaded machine takes longer.
START_TIMEOUT_S: Final = 90.0
#: Log4j 2 configuration: INFO and above to stdout (the node's log file), as Kafka's console appender.
LOG4J2: Final = """\
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""
#: The properties of Kafka 4's example ``config/server.properties`` that are not addresses or
#: directories (the rest is set per node below).
EXAMPLE_PROPERTIES: Final = {
    "num.network.threads": "3",
    "num.io.threads": "8",
    "socket.send.buffer.bytes": "102400",
    "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "num.partitions": "1",
    "num.recovery.threads.per.data.dir": "1",
    "offsets.topic.replication.factor": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "log.retention.hours": "168",
    "log.segment.bytes": "1073741824",
    "log.retention.check.interval.ms": "300000",
}


def kafka_lib() -> Path:
    """The directory of Kafka 4.4's jars; an error naming ``make peers`` when it is missing."""
    if not (KAFKA_LIB / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file():
        raise RuntimeError(f"Apache Kafka {KAFKA_VERSION} is not in {KAFKA_LIB}: run `make peers`")
    return KAFKA_LIB


def kafka_classpath() -> str:
    """Every jar of Kafka 4.4 (the broker, tools, clients and Streams), as a Java class path."""
    return os.pathsep.join(str(jar) for jar in sorted(kafka_lib().glob("*.jar")))


def java() -> str:
    path = shutil.which("java")
    if path is None:
        raise RuntimeError("java is not on PATH: Apache Kafka 4.4 needs a JDK 17")
    return path


def format_storage(properties: Path, cluster_id: str, quorum: list[str]) -> None:
    """``kafka-storage.sh format``: Kafka's ``StorageTool`` writes ``meta.properties`` (and the
    bootstrap metadata) into every log directory of ``properties``. ``quorum`` is
    ``["--standalone"]``, ``["--initial-controllers", ...]`` or empty (static
    ``controller.quorum.voters``)."""
    result = subprocess.run(
        [
            java(),
            "-XX:TieredStopAtLevel=1",
            "-cp",
            kafka_classpath(),
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            cluster_id,
            "--config",
            str(properties),
            *quorum,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"kafka-storage format failed:\n{result.stdout}{result.stderr}")


def server_command(properties: Path, log4j2: Path) -> list[str]:
    """``kafka-server-start.sh properties``: ``kafka.Kafka`` with the start scripts' JVM options,
    logging as ``log4j2`` (write :data:`LOG4J2` there) says."""
    return [
        java(),
        *HEAP_OPTS,
        *JVM_PERFORMANCE_OPTS,
        f"-Dlog4j2.configurationFile={log4j2}",
        "-cp",
        kafka_classpath(),
        "kafka.Kafka",
        str(properties),
    ]


def random_cluster_id() -> str:
    """A cluster id as Kafka's ``StorageTool random-uuid`` prints one (a base64url UUID). Like
    Kafka's ``Uuid.randomUuid``, never one that starts with ``-`` (a command line would read it as
    an option: ``--cluster-id -x...`` fails)."""
    while True:
        text = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def answers_api_versions(address: Address, timeout_s: float = 1.0, tls: ssl.SSLContext | None = None) -> bool:
    """Whether ``address`` answers an ApiVersions v0 request with a whole response (over TLS with
    ``tls``)."""
    request = struct.pack(">hhih", 18, 0, 1, -1)
    try:
        plain = socket.create_connection(address, timeout=timeout_s)
        with plain if tls is None else tls.wrap_socket(plain, server_hostname=address.host) as sock:
            sock.sendall(struct.pack(">i", len(request)) + request)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                data += chunk
    except OSError:
        return False
    correlation_id: int = struct.unpack_from(">i", data, 4)[0]
    return correlation_id == 1


@dataclass
class KafkaNode(BrokerProcess):
    """One Apache Kafka 4.4 KRaft node (broker and controller in one process)."""

    node_id: int = 1
    controller_port: int = 0
    cluster_id: str = ""
    #: Properties over the example's (``auto.create.topics.enable``, replication factors, ...).
    overrides: dict[str, str] | None = None
    #: The TLS the node's client listener speaks, when its overrides make it SSL or SASL_SSL: the
    #: readiness probe's.
    probe_tls: ssl.SSLContext | None = None

    @property
    def workdir(self) -> Path:
        return self.log_path.parent

    @property
    def properties_path(self) -> Path:
        return self.workdir / f"server-{self.node_id}.properties"

    def properties(self) -> dict[str, str]:
        host, port = self.address
        props = dict(EXAMPLE_PROPERTIES)
        props |= {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.bootstrap.servers": f"{host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{self.controller_port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir),
        }
        props |= self.overrides or {}
        return props

    def write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{key}={value}\n" for key, value in self.properties().items())
        self.properties_path.write_text(text)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)

    def format(self) -> None:
        """Format the data directory with Kafka's storage tool (once: a restart keeps it)."""
        self.write_config()
        format_storage(self.properties_path, self.cluster_id, ["--standalone"])

    def command(self) -> list[str]:
        return server_command(self.properties_path, self.workdir / "log4j2.properties")

    def start(self, timeout_s: float = START_TIMEOUT_S) -> float:
        if not (self.data_dir / "meta.properties").is_file():
            self.format()
        return super().start(timeout_s)

    def _wait_ready(self, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float) -> float:
        import threading

        self._drain = threading.Thread(target=_copy, args=(process.stdout, log), daemon=True)
        self._drain.start()
        start = time.monotonic()
        while not answers_api_versions(self.address, tls=self.probe_tls):
            if process.poll() is not None:
                raise RuntimeError(f"exited with status {process.returncode} before answering ApiVersions")
            if time.monotonic() - start > timeout_s:
                raise RuntimeError(f"no ApiVersions answer within {timeout_s} s")
            time.sleep(0.05)
        return time.monotonic() - start


def apache_kafka(
    workdir: Path, host: str = "127.0.0.1", overrides: dict[str, str] | None = None
) -> KafkaNode:
    """A single Apache Kafka 4.4 node (not started) on free ports, its data and log in ``workdir``."""
    return KafkaNode(
        "apache_kafka",
        Address(host, free_port(host)),
        workdir / "data",
        workdir / "kafka.log",
        persistent=True,
        controller_port=free_port(host),
        cluster_id=random_cluster_id(),
        overrides=overrides,
    )
