"""``kafka-wire proxy`` as a test process, and the upstreams the proxy tests put behind it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from tests.e2e.brokers import BrokerProcess, kafka_wire_cli, wait_for_stdout
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
        expected = len(self.upstream.split(","))

        def ready(line: bytes) -> bool:
            text = line.decode()
            if text.startswith(READY_MARK):
                here, _, there = text[len(READY_MARK) :].strip().partition(" -> ")
                self.routes[int(here.rpartition(":")[2])] = there
            return len(self.routes) >= expected

        return wait_for_stdout(process, log, timeout_s, ready)


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
