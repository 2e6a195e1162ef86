"""Bounded work per engine call: a budget, and requests that run in slices.

The engine is single-threaded: whatever one call does, every other connection waits for. A request
whose work grows with its input (a Produce of many partitions or of large compressed batches, a
CreateTopics or CreatePartitions of thousands of partitions, a DeleteTopics of many) runs as a
:class:`Job`, a series of steps (one partition each). Each engine call starts with a fresh
:class:`WorkBudget`: a new request takes its first steps in the call that brought it, jobs in
progress go on only in ``tick``. A job takes steps while the budget lasts, then the broker holds
it like any waiting request (its connection is read no further meanwhile), with its deadline at
the current time, so ``next_deadline_ms()`` is now and the driver serves other connections
before the ``tick`` that continues it. A step is never split, so one call does at most its budget
plus one step.

Work is counted in bytes: the bytes of a batch as received, the bytes it inflates to and
:data:`RECORD_WORK_BYTES` per record decoded, :data:`PARTITION_WORK_BYTES` per partition
created or deleted, and :data:`METADATA_RECORD_WORK_BYTES` per metadata record in each pass over
it. Work that is not a request (the controller proposing a large request's records, the node
replaying and publishing a large committed batch) runs as :data:`Steps`, taken with a
:class:`Stepping` while the budget lasts; its owner's ``next_deadline_ms()`` is then now. The figures are measured costs of the pure-Python flavour expressed in the
same unit (see docs/internals/broker.md, "Bounded work").
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from typing import ClassVar, Final, Generic, TypeVar

from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass

R = TypeVar("R", bound=Message)
T = TypeVar("T")

DEFAULT_MAX_WORK_BYTES_PER_CALL: Final = 1024 * 1024
"""Work one engine call may do before a job yields: about 5 ms of the pure flavour (4,000
records decoded, or 4 partitions created), so that other connections wait well under the 20 ms
the stall goal allows them at the 99th percentile (docs/benchmarks/stall.md). Kafka has no such
setting: its request handler threads run beside its network threads."""

PARTITION_WORK_BYTES: Final = 256 * 1024
"""The work of creating or deleting one partition: its log, replica and effects, about 1 ms of
the pure flavour on a loaded machine (its directory and files are written on the driver's
storage thread, not in the call)."""

RECORD_WORK_BYTES: Final = 256
"""The work of decoding one record: about 1.3 us in the pure flavour, which sets the scale (one
unit is about 5 ns; inflating and copying bytes costs less than a unit per byte)."""

STEP_MIN_WORK_BYTES: Final = 1024
"""The least a step costs, so that a request of many tiny or failing steps is sliced too."""


METADATA_RECORD_WORK_BYTES: Final = 2 * 1024
"""The work of one metadata record in one pass over it (encoding it, applying it to the
controller's parts, to the image, publishing it to the broker): about 10 us of the pure flavour."""

METADATA_SLICE_RECORDS: Final = 64
"""Metadata records a pass takes per step (:data:`Steps`)."""

Steps = Generator[int, None, T]
"""Work in steps: a generator that yields the metadata records each step went over and returns
its result (run with :func:`take_steps`, or :func:`run_steps` all at once)."""


def chunks(items: Sequence[T]) -> Generator[Sequence[T], None, None]:
    """``items`` in slices of :data:`METADATA_SLICE_RECORDS`."""
    for start in range(0, len(items), METADATA_SLICE_RECORDS):
        yield items[start : start + METADATA_SLICE_RECORDS]


@dataclass(slots=True)
class WorkBudget:
    """The work the current engine call may still do (negative once a step overran it)."""

    left: int

    @property
    def exhausted(self) -> bool:
        return self.left <= 0

    def spend(self, amount: int) -> None:
        self.left -= max(amount, STEP_MIN_WORK_BYTES)


class Job(ABC, Generic[R]):
    """A request answered after a series of steps, run as far as the work budget allows.

    Implements :class:`~kafka_wire.broker.state.Waiting`: ``poll`` continues the job and returns
    its response once the last step is done. A connection whose request is an unfinished job
    reads no further request until the job answers (so pipelined requests keep their order).
    ``survives_disconnect``: the job runs to its end when its connection closes (admin jobs, so
    that the metadata and the partition directories agree); other jobs are dropped with it.
    """

    survives_disconnect: ClassVar[bool] = False

    def __init__(self, budget: WorkBudget, now_ms: int) -> None:
        self.budget = budget
        self.deadline_ms = now_ms

    @property
    @abstractmethod
    def done(self) -> bool:
        """No step is left."""

    @abstractmethod
    def step(self, now_ms: int) -> None:
        """Take the next step, spending its work from ``self.budget``."""

    @abstractmethod
    def response(self) -> R:
        """The answer, once :attr:`done`."""

    def poll(self, now_ms: int) -> R | None:
        """Take steps while the budget lasts; the response when the last one is done."""
        self.deadline_ms = now_ms
        while not self.done:
            if self.budget.exhausted:
                return None
            self.step(now_ms)
        return self.response()

    def start(self, now_ms: int) -> R | Job[R]:
        """Run the first slice: the response when it is all done, else the job to hold."""
        body = self.poll(now_ms)
        return self if body is None else body


def unlimited() -> WorkBudget:
    """A budget that never runs out: for a part built without the engine's (all at once)."""
    return WorkBudget(sys.maxsize)


@dataclass(slots=True)
class Stepping(Generic[T]):
    """:data:`Steps` in progress, and their result once done."""

    steps: Steps[T]
    done: bool = False
    result: T | None = None

    def take(self, budget: WorkBudget) -> bool:
        """Take steps while ``budget`` lasts (none once it is exhausted); whether all are done."""
        while not self.done and not budget.exhausted:
            try:
                budget.spend(next(self.steps) * METADATA_RECORD_WORK_BYTES)
            except StopIteration as stop:
                self.done, self.result = True, stop.value
        return self.done


def run_steps(steps: Steps[T]) -> T:
    """All of ``steps`` at once; their result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
