"""Shared command line and output format of the Python peer drivers.

A driver is run as ``python DRIVER BOOTSTRAP STEPS [--topic T] [--count N] [--timeout-s S]``, where
STEPS is a comma-separated list of ``metadata``, ``create``, ``produce`` and ``consume``. It performs
the steps in order with a real Kafka client and prints one JSON object a line on stdout:

    {"event": "metadata", "brokers": [[id, host, port], ...], "topics": [...]}
    {"event": "created", "topic": T}
    {"event": "produced", "topic": T, "partition": P, "offsets": [...]}
    {"event": "consumed", "topic": T, "values": [...]}
    {"event": "error", "step": STEP, "message": "..."}       (then exit status 1)
    {"event": "done"}                                         (then exit status 0)

Produced values are ``"<client>-<i>"`` with keys ``"k<i>"``. The JS driver speaks the same format.
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

STEPS = ("metadata", "create", "produce", "consume")


@dataclass(frozen=True)
class Args:
    bootstrap: str
    steps: tuple[str, ...]
    topic: str
    count: int
    timeout_s: float
    deadline: float  # time.monotonic() value after which the driver gives up

    @property
    def remaining_s(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def values(self, client: str) -> list[str]:
        return [f"{client}-{i}" for i in range(self.count)]


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap", help="host:port")
    parser.add_argument("steps", help="comma-separated: " + ",".join(STEPS))
    parser.add_argument("--topic", default="interop")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=10.0)
    ns = parser.parse_args(argv)
    steps = tuple(ns.steps.split(","))
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}")
    return Args(ns.bootstrap, steps, ns.topic, ns.count, ns.timeout_s, time.monotonic() + ns.timeout_s)


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def run(step_functions: dict[str, Callable[[Args], None]]) -> None:
    """Run the steps named on the command line; report the first failure and exit 1."""
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
            step_functions[step](args)
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
