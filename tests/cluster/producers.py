"""The failover test's producers as processes: confluent-kafka and the Java client, one protocol.

Both programs (``confluent_producer.py`` and ``java/ClusterClient.java produce``) send ``count``
numbered records with values ``<name>-<n>``, never past the credit written to their stdin, and
print a line per completed delivery. :class:`ProducerProcess` feeds the credit and collects the
acknowledgements (number -> partition and offset) and failures while the process runs.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.cluster.harness import ROOT
from tests.interop.harness import JavaClient, java_command, stop_process_group

CLUSTER_CLIENT_SOURCE: Final = Path(__file__).resolve().parent / "java" / "ClusterClient.java"


def spawn(command: list[str]) -> subprocess.Popen[str]:
    """A client program in its own process group, from the repository root, its stdin, stdout and
    stderr piped as text."""
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a program :func:`spawn` started and close its pipes."""
    stop_process_group(process, timeout_s=2.0)
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()


def confluent_command(bootstrap: str, topic: str, count: int, name: str) -> list[str]:
    return [sys.executable, "-m", "tests.cluster.confluent_producer", bootstrap, topic, str(count), name]


def java_producer_command(
    bootstrap: str, topic: str, count: int, name: str, client: JavaClient = "java4"
) -> list[str]:
    return java_command(CLUSTER_CLIENT_SOURCE, "produce", bootstrap, topic, str(count), name, client=client)


@dataclass
class ProducerProcess:
    """A running producer program: its acknowledged and failed sends, read as they come."""

    name: str
    count: int
    process: subprocess.Popen[str]
    acked: dict[int, tuple[int, int]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    done: str | None = None
    stderr: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    @classmethod
    def start(cls, name: str, command: list[str], count: int) -> ProducerProcess:
        producer = cls(name, count, spawn(command))
        producer._threads = [
            threading.Thread(target=producer._read_stdout, daemon=True),
            threading.Thread(target=producer._read_stderr, daemon=True),
        ]
        for thread in producer._threads:
            thread.start()
        return producer

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            parts = line.split()
            with self._lock:
                if len(parts) == 4 and parts[0] == "ack":
                    self.acked[int(parts[1])] = (int(parts[2]), int(parts[3]))
                elif len(parts) >= 2 and parts[0] == "fail":
                    self.failed[int(parts[1])] = " ".join(parts[2:])
                elif parts and parts[0] == "done":
                    self.done = line.strip()
                else:
                    self.unparsed.append(line)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._lock:
                self.stderr.append(line)

    def credit(self, limit: int) -> None:
        """Let the producer send the records numbered below ``limit``."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"credit {min(limit, self.count)}\n")
        self.process.stdin.flush()

    def completed(self) -> int:
        """Sends completed so far (acknowledged or failed)."""
        with self._lock:
            return len(self.acked) + len(self.failed)

    def wait_completed(self, at_least: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.completed() < at_least:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.name}: {self.completed()} sends completed, waited for {at_least}. {self.describe()}"
                )
            time.sleep(0.05)  # bounded polling of the producer's output

    def finish(self, timeout_s: float) -> None:
        """Let it send everything, wait for it to exit, and check it reported every send."""
        self.credit(self.count)
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            stop_process_group(self.process)
            raise AssertionError(
                f"{self.name} did not finish within {timeout_s} s. {self.describe()}"
            ) from None
        for thread in self._threads:
            thread.join(5.0)
        assert self.process.returncode == 0 and self.done is not None, self.describe()
        assert len(self.acked) + len(self.failed) == self.count, self.describe()

    def kill(self) -> None:
        stop(self.process)

    def describe(self) -> str:
        with self._lock:
            tail = "".join(self.stderr[-20:])
            return (
                f"{self.name}: exit {self.process.returncode}, {len(self.acked)} acked, "
                f"{len(self.failed)} failed (first {sorted(self.failed.items())[:5]}), done {self.done!r}, "
                f"unparsed {self.unparsed[:5]}; stderr tail:\n{tail}"
            )
