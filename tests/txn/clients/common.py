"""The transactions scenario every client driver of ``tests/txn`` runs, and its output.

``python -m tests.txn.clients.DRIVER BOOTSTRAP [OPTIONS]`` (the JS and Java drivers take the
same arguments) runs, with one real client:

1. ``initTransactions`` with ``--txn-id``;
2. transaction A: ``--count`` records (key ``k<i>``, value ``<client>-A-<i>``, to partition
   ``i % --partitions``), the offset 5 of ``--source`` partition 0 sent for ``--group``; commit;
3. transaction B: the same with ``-B-`` values, flushed to the broker, then aborted;
4. transaction C: ``-C-`` values and the source offset 9; commit;
5. a read_committed consumer, then a read_uncommitted one, each of a new group, read ``--topic``
   from the start until they have every record they may see (and half a second more);
6. the offset ``--group`` committed for ``--source`` partition 0.

Output, one JSON object a line:

    {"event": "transacted", "committed": [[partition, value], ...], "aborted": [...]}
    {"event": "consumed", "isolation": "read_committed", "records": [[partition, offset, value], ...]}
    {"event": "consumed", "isolation": "read_uncommitted", "records": [...]}
    {"event": "committed", "offset": N}
    {"event": "error", "step": STEP, "message": "..."}    (then exit status 1)
    {"event": "done"}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The source offsets transactions A and C send.
OFFSET_A = 5
OFFSET_C = 9
#: How long a consumer keeps polling once it has what it may see (to catch any record too many).
SETTLE_S = 0.5


@dataclass(frozen=True)
class Args:
    bootstrap: str
    topic: str
    source: str
    group: str
    txn_id: str
    count: int
    partitions: int
    deadline: float

    @property
    def remaining_s(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def records(self, client: str, phase: str) -> list[tuple[int, str, str]]:
        """(partition, key, value) of one transaction's records."""
        return [(i % self.partitions, f"k{i}", f"{client}-{phase}-{i}") for i in range(self.count)]


def parse_args() -> Args:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--txn-id", required=True)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    ns = parser.parse_args()
    return Args(
        ns.bootstrap,
        ns.topic,
        ns.source,
        ns.group,
        ns.txn_id,
        ns.count,
        ns.partitions,
        time.monotonic() + ns.timeout_s,
    )


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def main(scenario: Callable[[Args], None]) -> None:
    """Run the scenario; report a failure and exit 1 (without waiting for the client's threads)."""
    args = parse_args()
    watchdog = threading.Timer(args.remaining_s + 1.0, _give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        scenario(args)
    except Exception as exc:
        emit("error", step="scenario", message=f"{type(exc).__name__}: {exc}")
        traceback.print_exc(file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    watchdog.cancel()
    emit("done")
    sys.stdout.flush()
    os._exit(0)


def _give_up() -> None:
    emit("error", step="watchdog", message="gave up")
    os._exit(1)
