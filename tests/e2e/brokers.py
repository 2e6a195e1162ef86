"""Broker processes for the end-to-end suite: Tansu and ``kafka-wire serve``.

:class:`BrokerProcess` starts a server on a fixed port (chosen free once) with a data directory,
and can stop it (SIGTERM), kill it (SIGKILL) and start it again on the same port and data
directory. :func:`tansu` and :func:`kafka_wire` build one for each broker; the e2e fixtures
(``conftest.py``) use them, and so does ``bench/bench_broker.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from tests.interop.harness import (
    _TANSU_ENV,
    Address,
    free_port,
    stop_process_group,
    tansu_binary,
    wait_until_accepting,
)

#: How long a broker may take to be ready (Tansu: tens of ms; kafka-wire serve: a Python start).
START_TIMEOUT_S: Final = 30.0
#: How long a SIGTERM'd broker may take to exit before the stop counts as failed.
STOP_TIMEOUT_S: Final = 10.0
#: ``kafka-wire serve`` prints one line when it is ready:
#: ``kafka-wire serve: listening on 127.0.0.1:PORT (data in DIR)``.
SERVE_READY_MARK: Final = "listening on"
#: What the session brokers of the e2e suite (Kafka 4.4 and ``kafka-wire serve``) set beyond their
#: defaults: a classic group's first rebalance starts at once instead of after 3 s, as Kafka 3's
#: example ``server.properties`` set it for development and testing (every test of
#: ``test_codecs.py`` reads through a new group), and KIP-848 members heartbeat every second
#: instead of every 5 s (a member learns of an assignment change at its next heartbeat, so a
#: rebalance takes a few heartbeats).
QUICK_GROUPS: Final = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def kafka_wire_cli() -> Path:
    """The ``kafka-wire`` script of the venv running the tests."""
    return Path(sys.executable).parent / "kafka-wire"


@dataclass
class BrokerProcess:
    """A broker server process that can be stopped, killed and restarted on one port and data dir."""

    name: str
    address: Address
    data_dir: Path
    log_path: Path
    #: Whether records survive a restart (Tansu's memory storage: no).
    persistent: bool
    #: Seconds from process start until ready, per start.
    startups_s: list[float] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    _drain: threading.Thread | None = None
    _log: IO[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def _wait_ready(self, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float) -> float:
        return wait_until_accepting(self.address, timeout_s, process)

    @property
    def bootstrap(self) -> str:
        return self.address.bootstrap

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> float:
        """Start the server and wait until it is ready; return the seconds that took."""
        assert not self.running(), f"{self.name} is already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self._log = self.log_path.open("ab")
        log.write(f"--- start {time.strftime('%H:%M:%S')}: {' '.join(self.command())}\n".encode())
        log.flush()
        start = time.monotonic()
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=self.env(),
            start_new_session=True,  # its own process group, killed whole at teardown
        )
        try:
            self._wait_ready(self.process, log, timeout_s)
        except RuntimeError as exc:
            stop_process_group(self.process)
            self._finish_drain()
            raise RuntimeError(f"{self.name} did not start: {exc}\n{self.log()}") from None
        startup = time.monotonic() - start
        self.startups_s.append(startup)
        if self._drain is None:  # keep copying stdout to the log so the server never blocks on it
            self._drain = threading.Thread(target=_copy, args=(self.process.stdout, log), daemon=True)
            self._drain.start()
        return startup

    def _finish_drain(self) -> None:
        """After the process exited: finish copying its output, close the pipe and the log."""
        if self._drain is not None:
            self._drain.join(5.0)
            self._drain = None
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM the server and wait for it to exit; return its exit status (None: it did not
        exit in time and was killed)."""
        process = self.process
        if process is None or process.poll() is not None:
            self._finish_drain()
            return None if process is None else process.returncode
        os.killpg(process.pid, signal.SIGTERM)
        try:
            status: int | None = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            status = None
            stop_process_group(process)
        self._finish_drain()
        return status

    def kill(self) -> int:
        """SIGKILL the server's process group; return its exit status."""
        process = self.process
        assert process is not None
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        status = process.wait()
        self._finish_drain()
        return status

    def restart(self, timeout_s: float = START_TIMEOUT_S) -> float:
        """Start again on the same port and data dir (after stop or kill)."""
        assert not self.running(), f"stop or kill {self.name} before restarting it"
        return self.start(timeout_s)

    def close(self) -> None:
        """Teardown: stop whatever is still running."""
        if self.process is not None:
            stop_process_group(self.process)
        self._finish_drain()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _copy(source: IO[bytes] | None, sink: IO[bytes]) -> None:
    if source is None:
        return
    for line in source:
        sink.write(line)
        sink.flush()


class TansuBroker(BrokerProcess):
    """Tansu with in-memory storage: a restart starts empty (the data dir is unused)."""

    def command(self) -> list[str]:
        url = f"tcp://{self.address.bootstrap}"
        return [
            str(tansu_binary()),
            "broker",
            "--cluster-id",
            "kafka-wire-e2e",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    def env(self) -> dict[str, str]:
        # Tansu also reads its settings from the environment; the flags win, but keep ours clean.
        return {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}

    def _wait_ready(self, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float) -> float:
        # Tansu logs to stdout; copy it to the log from the start.
        self._drain = threading.Thread(target=_copy, args=(process.stdout, log), daemon=True)
        self._drain.start()
        return wait_until_accepting(self.address, timeout_s, process)


@dataclass
class KafkaWireBroker(BrokerProcess):
    """``kafka-wire serve``: ready when it prints its ``listening on`` line on stdout."""

    #: Broker properties given with ``--set``.
    settings: dict[str, str] = field(default_factory=dict)

    def command(self) -> list[str]:
        sets = [arg for key, value in self.settings.items() for arg in ("--set", f"{key}={value}")]
        return [
            str(kafka_wire_cli()),
            "serve",
            "--host",
            self.address.host,
            "--port",
            str(self.address.port),
            "--data-dir",
            str(self.data_dir),
            *sets,
        ]

    def _wait_ready(self, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float) -> float:
        return wait_for_stdout(process, log, timeout_s, lambda line: SERVE_READY_MARK.encode() in line)


def wait_for_stdout(
    process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float, ready: Callable[[bytes], bool]
) -> float:
    """Copy ``process``'s stdout lines into ``log`` until ``ready`` says yes to one; the seconds
    that took. A RuntimeError if the process exits first or ``timeout_s`` passes."""
    start = time.monotonic()
    done = threading.Event()
    seen: list[bytes] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            log.flush()
            seen.append(line)
            if ready(line):
                done.set()
                break

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while not done.wait(0.05):
        if process.poll() is not None:
            raise RuntimeError(
                f"exited with status {process.returncode} before it was ready; stdout {seen!r}"
            )
        if time.monotonic() - start > timeout_s:
            raise RuntimeError(f"not ready within {timeout_s} s; stdout {seen!r}")
    reader.join()
    return time.monotonic() - start


def tansu(workdir: Path, host: str = "127.0.0.1") -> TansuBroker:
    """A Tansu broker (not started) on a free port, logging into ``workdir``."""
    return TansuBroker(
        "tansu", Address(host, free_port(host)), workdir / "data", workdir / "tansu.log", persistent=False
    )


def kafka_wire(
    workdir: Path, host: str = "127.0.0.1", settings: dict[str, str] | None = None
) -> KafkaWireBroker:
    """A ``kafka-wire serve`` broker (not started) on a free port with its data in ``workdir/data``
    and ``settings`` as its ``--set`` properties."""
    return KafkaWireBroker(
        "kafka_wire",
        Address(host, free_port(host)),
        workdir / "data",
        workdir / "kafka-wire.log",
        persistent=True,
        settings=dict(settings or {}),
    )
