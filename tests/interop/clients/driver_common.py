"""Shared command line and output format of the Python peer drivers.

A driver is run from the repository root as
``python -m tests.interop.clients.DRIVER BOOTSTRAP STEPS [OPTIONS]``, where STEPS is a
comma-separated list of ``metadata``, ``create``, ``produce``, ``consume`` and ``group``. It
performs the steps in order with a real Kafka client and prints one JSON object a line on stdout:

    {"event": "metadata", "brokers": [[id, host, port], ...], "topics": [...]}
    {"event": "created", "topic": T}
    {"event": "produced", "topic": T, "partition": [P, ...], "offsets": [...],
     "records": [[partition, offset], ...]}                   (in the order the records were sent)
    {"event": "consumed", "topic": T, "values": [...],
     "records": [[partition, offset, key, value, [[header, value], ...]], ...]}
    {"event": "error", "step": STEP, "message": "..."}       (then exit status 1)
    {"event": "done"}                                         (then exit status 0)

Options: ``--topic T`` (default ``interop``), ``--count N`` records to produce or to wait for (3),
``--timeout-s S`` for all the steps (10), ``--security JSON`` to connect over TLS and/or SASL
(a flat object of strings: ``protocol`` SSL, SASL_SSL or SASL_PLAINTEXT; ``ca`` the PEM file of
the authority that signed the broker's certificate; ``cert`` and ``key`` the client's certificate
chain and key, and ``keystore`` both in one PEM file (Java reads that); ``mechanism`` PLAIN or
SCRAM-SHA-256/512 with ``username`` and ``password``), ``--partitions P`` for ``create``, and for ``produce``,
which then sends record i to partition i % P (with P = 1 it names no partition and lets the client
choose), ``--compression C`` (none, gzip, snappy, lz4, zstd) for ``produce``, ``--headers`` to
give each record the headers ``i`` = i and ``client`` = the client's name, ``--value-size B`` to
pad each value to B bytes (compressible text), ``--golden`` for the golden-capture workload of
``tools/record_captures.py`` (record i: key ``k<i>``, value ``value-<i>-`` repeated 20 times,
header ``h`` = ``x<i>``, timestamp 1700000000000 + i, all records in one batch), and ``--group G``
for the consumer group (default ``kw-interop-<client>-<topic>``), ``--group-protocol consumer`` for
the KIP-848 protocol (``group.protocol``; no session timeout or heartbeat interval is set then: the
coordinator owns them).

Produced values are ``"<client>-<i>"`` (padded with ``--value-size``) with keys ``"k<i>"``. Keys,
values and header values are printed as text (they are ASCII). The JS and Java drivers speak the
same format.

``group`` is a long-lived group member (confluent-kafka and Java drivers only): it subscribes with
``--group``, and until SIGTERM (or the timeout) polls batches of at most ``--batch`` records,
printing each batch, then commits the batch's offsets synchronously and prints the commit:

    {"event": "assigned", "partitions": [...], "t": T}       (the whole assignment, after every change)
    {"event": "processed", "records": [[partition, offset, value], ...], "t": T}
    {"event": "committed", "offsets": [[partition, next_offset], ...], "t": T}
    {"event": "commit_failed", "offsets": [...], "message": "...", "t": T}   (batch left uncommitted)
    {"event": "closed", "t": T}                               (after a clean close on SIGTERM)

``t`` is ``time.monotonic()`` seconds (CLOCK_MONOTONIC, shared by every process on the machine),
taken when the batch was returned by the client or after the commit returned.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STEPS = ("metadata", "create", "produce", "consume", "group")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
#: The first record's timestamp in the golden workload (``--golden``).
GOLDEN_TIMESTAMP_MS = 1_700_000_000_000
#: How long a golden producer lingers, so that its records leave in one batch.
GOLDEN_LINGER_MS = 200
#: A golden producer's request timeout: fixed, so that re-recorded Produce frames are the same bytes.
GOLDEN_REQUEST_TIMEOUT_MS = 10_000


@dataclass(frozen=True, kw_only=True)
class Security:
    """``--security``: how to reach a TLS or SASL listener (see the module docstring)."""

    protocol: str
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    keystore: str | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


@dataclass(frozen=True)
class Args:
    bootstrap: str
    steps: tuple[str, ...]
    topic: str
    count: int
    timeout_s: float
    deadline: float  # time.monotonic() value after which the driver gives up
    partitions: int = 1
    compression: str = "none"
    headers: bool = False
    value_size: int = 0
    group: str | None = None
    batch: int = 50
    golden: bool = False
    #: ``group.protocol`` of ``group``: ``classic`` or ``consumer`` (KIP-848).
    group_protocol: str = "classic"
    #: ``--security``: None for PLAINTEXT.
    security: Security | None = None

    @property
    def remaining_s(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def values(self, client: str) -> list[str]:
        if self.golden:
            return [f"value-{i}-" * 20 for i in range(self.count)]
        return [pad(f"{client}-{i}", self.value_size) for i in range(self.count)]

    def record_headers(self, client: str, i: int) -> list[tuple[str, bytes]]:
        if self.golden:
            return [("h", f"x{i}".encode())]
        return [("i", str(i).encode()), ("client", client.encode())] if self.headers else []

    def request_timeout_ms(self) -> int:
        """The produce step's request timeout: what is left of the run, or the golden constant."""
        return GOLDEN_REQUEST_TIMEOUT_MS if self.golden else int(self.remaining_s * 1000)

    def timestamp_ms(self, i: int) -> int | None:
        """Record ``i``'s timestamp, or None to let the client stamp it."""
        return GOLDEN_TIMESTAMP_MS + i if self.golden else None

    def partition_of(self, i: int) -> int | None:
        """The partition record ``i`` is sent to, or None to let the client choose."""
        return i % self.partitions if self.partitions > 1 else None

    def group_id(self, client: str) -> str:
        return self.group or f"kw-interop-{client}-{self.topic}"


def pad(value: str, size: int) -> str:
    """``value`` padded to ``size`` characters with compressible text."""
    if len(value) >= size:
        return value
    filler = "-abcdefghijklmnopqrstuvwxyz0123456789" * (size // 37 + 1)
    return value + filler[: size - len(value)]


def text(data: bytes | None) -> str | None:
    return None if data is None else data.decode()


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap", help="host:port")
    parser.add_argument("steps", help="comma-separated: " + ",".join(STEPS))
    parser.add_argument("--topic", default="interop")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--compression", choices=COMPRESSIONS, default="none")
    parser.add_argument("--headers", action="store_true")
    parser.add_argument("--value-size", type=int, default=0)
    parser.add_argument("--group", default=None)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"))
    parser.add_argument("--golden", action="store_true")
    parser.add_argument("--security", type=lambda text: Security(**json.loads(text)), default=None)
    ns = parser.parse_args(argv)
    steps = tuple(ns.steps.split(","))
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}")
    return Args(
        ns.bootstrap,
        steps,
        ns.topic,
        ns.count,
        ns.timeout_s,
        time.monotonic() + ns.timeout_s,
        partitions=ns.partitions,
        compression=ns.compression,
        headers=ns.headers,
        value_size=ns.value_size,
        group=ns.group,
        batch=ns.batch,
        golden=ns.golden,
        group_protocol=ns.group_protocol,
        security=ns.security,
    )


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def run(step_functions: dict[str, Callable[[Args], None]]) -> None:
    """Run the steps named on the command line; report the first failure and exit 1.

    A step this client's driver does not offer is reported as an error like any other failure."""
    # The peers' own warnings (kafka-python's import-time DeprecationWarning) are noise here.
    warnings.simplefilter("ignore")
    args = parse_args()
    # A client stuck past its own timeouts (retrying, or waiting on a request never answered) must
    # not hold the test up: report it and leave without waiting for the client's threads.
    watchdog = threading.Timer(args.timeout_s + 1.0, _give_up, args=(args.timeout_s,))
    watchdog.daemon = True
    watchdog.start()
    for step in args.steps:
        try:
            function = step_functions.get(step)
            if function is None:
                raise NotImplementedError(f"this driver has no {step!r} step")
            function(args)
        except Exception as exc:
            emit("error", step=step, message=f"{type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stderr)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)  # without waiting for the client's threads and event loops to wind down
    watchdog.cancel()
    emit("done")


def _give_up(timeout_s: float) -> None:
    emit("error", step="watchdog", message=f"gave up after {timeout_s} s")
    os._exit(1)
