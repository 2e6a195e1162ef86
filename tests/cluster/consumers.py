"""The moved-leader test's consumers as processes: confluent-kafka and the Java client, one protocol.

Both programs (``confluent_consumer.py`` and ``java/ClusterClient.java consume-moved``) take
``BOOTSTRAP TOPIC WARM PARTITION COUNT``: they read partition WARM until a record arrives and
print ``warm``; on a ``go`` line from stdin they print ``leader <id>`` (PARTITION's leader in the
client's own metadata), add PARTITION from offset 0 and print ``record <offset> <value>`` per
record of it until COUNT, then ``done``. :class:`ConsumerProcess` drives that and collects the
lines. :data:`CONSUMERS` maps each client to its command, for the tests' parametrisation.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from tests.cluster.producers import CLUSTER_CLIENT_SOURCE, spawn, stop
from tests.interop.harness import JAVA_CLIENTS, JavaClient, java_command

ConsumerCommand = Callable[[str, str, int, int, int], list[str]]


def confluent_consumer_command(
    bootstrap: str, topic: str, warm: int, partition: int, count: int
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.cluster.confluent_consumer",
        bootstrap,
        topic,
        str(warm),
        str(partition),
        str(count),
    ]


def java_consumer(client: JavaClient) -> ConsumerCommand:
    """The command of ``ClusterClient.java consume-moved`` on the Java client release ``client``."""

    def command(bootstrap: str, topic: str, warm: int, partition: int, count: int) -> list[str]:
        return java_command(
            CLUSTER_CLIENT_SOURCE,
            "consume-moved",
            bootstrap,
            topic,
            str(warm),
            str(partition),
            str(count),
            client=client,
        )

    return command


#: The consumers by client name: confluent-kafka, the Java client 3.9.1 (``java``) and 4.4 (``java4``).
CONSUMERS: Final[dict[str, ConsumerCommand]] = {
    "confluent": confluent_consumer_command,
    **{client: java_consumer(client) for client in JAVA_CLIENTS},
}


@dataclass
class ConsumerProcess:
    """A running consumer program and the lines it printed so far."""

    name: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, name: str, command: list[str]) -> ConsumerProcess:
        consumer = cls(name, spawn(command))
        for target in (consumer._read_stdout, consumer._read_stderr):
            threading.Thread(target=target, daemon=True).start()
        return consumer

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._lock:
                self.stderr.append(line)

    def wait_line(self, prefix: str, timeout_s: float) -> str:
        """The first line starting with ``prefix``, waited for up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                found = next((line for line in self.lines if line.startswith(prefix)), None)
            if found is not None:
                return found
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.name}: no line {prefix!r} within {timeout_s} s. {self.describe()}"
                )
            time.sleep(0.05)  # bounded polling of the consumer's output

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def records(self) -> list[tuple[int, str]]:
        """``(offset, value)`` of every ``record`` line so far."""
        with self._lock:
            rows = [line.split(" ", 2) for line in self.lines if line.startswith("record ")]
        return [(int(offset), value) for _, offset, value in rows]

    def kill(self) -> None:
        stop(self.process)

    def describe(self) -> str:
        with self._lock:
            errors = sorted({line for line in self.lines if line.startswith("error ")})
            return (
                f"{self.name}: exit {self.process.returncode}, {len(self.lines)} lines "
                f"(last {self.lines[-3:]}), errors {errors}; stderr tail:\n{''.join(self.stderr[-20:])}"
            )
