"""``kafka-wire proxy`` as a test process, and the upstreams the proxy tests put behind it."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from tests.e2e.brokers import BrokerProcess, kafka_wire_cli
from tests.interop.harness import Address, free_port

#: ``kafka-wire proxy`` prints one line per port once it listens: ``kafka-wire proxy: H:P -> U:Q``.
READY_MARK: Final = "kafka-wire proxy: "


@dataclass
class ProxyProcess(BrokerProcess):
    """``kafka-wire proxy`` in front of ``upstream`` (a bootstrap list) with ``filters``."""

    upstream: str = ""
    filters: list[str] = field(default_factory=list)
    #: More command-line arguments (TLS).
    extra: list[str] = field(default_factory=list)
    #: Proxy port -> upstream "host:port", as the proxy printed them at start.
    routes: dict[int, str] = field(default_factory=dict)

    def command(self) -> list[str]:
        argv = [
            str(kafka_wire_cli()),
            "proxy",
            "--upstream",
            self.upstream,
            "--listen",
            f"{self.address.host}:{self.address.port}",
            "--log-level",
            "info",
        ]
        for spec in self.filters:
            argv += ["--filter", spec]
        return argv + self.extra

    def _wait_ready(self, process: subprocess.Popen[bytes], log: IO[bytes], timeout_s: float) -> float:
        start = time.monotonic()
        expected = len(self.upstream.split(","))
        ready = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()
                text = line.decode()
                if text.startswith(READY_MARK):
                    here, _, there = text[len(READY_MARK) :].strip().partition(" -> ")
                    self.routes[int(here.rpartition(":")[2])] = there
                    if len(self.routes) >= expected:
                        ready.set()
                        break

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while not ready.wait(0.05):
            if process.poll() is not None:
                raise RuntimeError(f"exited with status {process.returncode} before its ready lines")
            if time.monotonic() - start > timeout_s:
                raise RuntimeError(f"no {expected} ready lines within {timeout_s} s")
        reader.join()
        return time.monotonic() - start


def proxy(
    workdir: Path, upstream: str, filters: list[str] | None = None, extra: list[str] | None = None
) -> ProxyProcess:
    """A proxy (not started) on a free first port in front of ``upstream``."""
    workdir.mkdir(parents=True, exist_ok=True)
    return ProxyProcess(
        "proxy",
        Address("127.0.0.1", free_port()),
        workdir / "data",
        workdir / "proxy.log",
        persistent=False,
        upstream=upstream,
        filters=list(filters or []),
        extra=list(extra or []),
    )
