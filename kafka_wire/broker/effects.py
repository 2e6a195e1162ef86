"""What the engine asks its driver to do: small frozen values.

Storage effects name files by POSIX paths relative to the data directory
(``"orders-0/00000000000000000000.log"``). The storage effects of one call are one *batch*: a
driver applies the batches in the order they were returned, each one's effects in order, and
reports each batch's outcome in that order (``Broker.storage_applied`` or, at the first failure,
``Broker.storage_failed``), while it goes on feeding the engine other input
(``kafka_wire.broker.storage_pipeline`` has the contract). A read through the
:class:`~kafka_wire.broker.storage.StorageReader` sees what earlier calls wrote. Network effects
(``Send``, ``CloseConnection``) never depend on the storage effects returned with them: answers
that do are returned by the outcome reports. :func:`kafka_wire.broker.driving.settle` does all of
this for a synchronous driver.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from kafka_wire.errors import LocalProtocolError
from kafka_wire.quick_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``size`` bytes of a stored file from ``position``: sent with ``sendfile`` where possible."""

    path: str
    position: int
    size: int


# -- network -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """Write ``parts`` (bytes, and file regions for zero-copy fetch) to a connection, in order."""

    conn_id: int
    parts: tuple[bytes | FileRegion, ...]


@dataclass(frozen=True, slots=True)
class CloseConnection:
    """Close a connection after writing what was sent before."""

    conn_id: int


@dataclass(frozen=True, slots=True)
class OpenConnection:
    """Connect to another node (``kafka_wire.broker.peers``). Outbound connection ids are
    negative, so they never meet the driver's ids of accepted connections. The driver reports
    ``connection_established`` or ``connection_closed`` (refused, or lost later) for it, then
    carries its bytes with ``receive_data`` / ``Send`` / ``CloseConnection`` like any other."""

    conn_id: int
    host: str
    port: int
    #: The listener of the other node it reaches (``listeners``' name): the driver speaks that
    #: listener's security protocol (TLS for an SSL listener).
    listener: str = ""


@dataclass(frozen=True, slots=True)
class PauseReading:
    """Stop reading from a connection: leave further bytes in the kernel (flow control). The
    engine sends this while the connection has a request in flight, while ``queued.max.requests``
    requests are held, and while a failed authentication waits to be answered."""

    conn_id: int


@dataclass(frozen=True, slots=True)
class ResumeReading:
    """Read from a connection again after :class:`PauseReading`."""

    conn_id: int


# -- storage -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MakeDir:
    path: str


@dataclass(frozen=True, slots=True)
class Append:
    """Append ``data`` to a file, creating it when missing."""

    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class WriteAt:
    """Write ``data`` at ``position`` (files grow as needed; used for small metadata files)."""

    path: str
    position: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Truncate:
    """Cut a file to ``size`` bytes."""

    path: str
    size: int


@dataclass(frozen=True, slots=True)
class Fsync:
    """Make a file's content durable (and its directory entry)."""

    path: str


@dataclass(frozen=True, slots=True)
class Rename:
    """Atomically rename ``source`` to ``target`` (replacing it)."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete a file, or a directory with everything in it."""

    path: str


# -- the engine itself ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StopBroker:
    """The broker cannot go on (its only log directory failed): stop serving and exit.

    It comes after the answers and closes the driver must still carry out; the engine takes no
    further input but ``connection_closed``.
    """

    reason: str


StorageEffect = MakeDir | Append | WriteAt | Truncate | Fsync | Rename | Delete
Effect = Send | CloseConnection | OpenConnection | PauseReading | ResumeReading | StopBroker | StorageEffect


class WriteProgress:
    """How far the driver got with the engine's storage batches.

    Each engine call that returns storage effects hands out one *batch*, numbered from 1 in the
    order they are returned; the driver reports each batch's outcome in that order. Files whose
    bytes are in a batch not yet applied keep those bytes in memory and register with
    :meth:`when_applied` to drop them once the batch is reported applied
    (``kafka_wire.broker.log.files``): until then no read of those bytes goes to storage.
    """

    __slots__ = ("_waiting", "applied", "handed_out")

    def __init__(self) -> None:
        #: Batches handed to the driver.
        self.handed_out = 0
        #: Batches the driver reported applied (the oldest first).
        self.applied = 0
        self._waiting: deque[tuple[int, Callable[[int], None]]] = deque()

    @property
    def forming(self) -> int:
        """The number the batch of the call in progress gets if it writes anything."""
        return self.handed_out + 1

    @property
    def in_flight(self) -> int:
        return self.handed_out - self.applied

    def when_applied(self, batch: int, settle: Callable[[int], None]) -> None:
        """Call ``settle(batch)`` once ``batch`` is applied (at once if it is)."""
        if batch <= self.applied:
            settle(batch)
        else:
            self._waiting.append((batch, settle))

    def hand_out(self) -> int:
        """The call in progress hands out its batch: its number."""
        self.handed_out += 1
        return self.handed_out

    def apply_one(self) -> None:
        """The oldest batch in flight was applied: settle what waited for it."""
        if self.applied >= self.handed_out:
            raise LocalProtocolError("no storage batch is in flight")
        self.applied += 1
        waiting = self._waiting
        while waiting and waiting[0][0] <= self.applied:
            batch, settle = waiting.popleft()
            settle(batch)


class EffectSink:
    """Where the storage effects of the engine's current call gather, in the order they are
    emitted. Whatever changes what is stored receives the sink as an argument (a handler in its
    ``Context``, a ``BrokerState`` method as a parameter, a job from the handler that made it);
    ``Broker`` takes the effects at the end of the call and hands them to its driver as one batch.
    ``progress`` (the broker's) counts the batches handed out and applied; the logs opened with it
    keep their bytes in flight until they are applied. Without one, whoever takes the effects
    applies them before the next call (a component driven alone, in tests)."""

    __slots__ = ("_effects", "progress")

    def __init__(self, progress: WriteProgress | None = None) -> None:
        self._effects: list[StorageEffect] = []
        self.progress = progress

    def __len__(self) -> int:
        return len(self._effects)

    def emit(self, effect: StorageEffect) -> None:
        self._effects.append(effect)

    def extend(self, effects: Iterable[StorageEffect]) -> None:
        self._effects.extend(effects)

    def take(self) -> list[StorageEffect]:
        """The effects emitted since the last take, in order."""
        effects, self._effects = self._effects, []
        return effects
