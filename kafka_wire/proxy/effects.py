"""What a proxy pair asks its adapter to do besides writing bytes: run an awaitable (an async
filter's verdict, fed back with ``ProxyPair.resume``) and write a log line."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass

from kafka_wire.proxy.filters import Verdict


@dataclass(frozen=True, slots=True, eq=False)
class Await:
    """Run ``awaitable`` and call ``pair.resume(token, verdict or exception, now_ms=...)``."""

    token: int
    awaitable: Awaitable[Verdict]
    connection_id: int


@dataclass(frozen=True, slots=True)
class LogLine:
    """A line for the proxy's log, at a :mod:`logging` level."""

    level: int
    message: str


Effect = Await | LogLine
