"""Feed a connection its input whole, one byte at a time and split at random points (h11's habit).

``outcome(make, data)`` drives a fresh connection from ``make()`` with ``data`` in each of the
three chunkings, collects every event (and the error that ended the run, if any) and asserts that
the three runs agree, then returns that shared outcome.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Protocol, TypeVar

from kafka_wire.errors import KafkaWireError
from kafka_wire.protocol import NEED_DATA

CHUNKINGS = ("whole", "bytewise", "random")


class Connection(Protocol):
    def receive_data(self, data: bytes) -> None: ...
    def receive_eof(self) -> None: ...
    def next_event(self) -> object: ...
    def data_to_send(self) -> bytes: ...


C = TypeVar("C", bound=Connection)


def split(data: bytes, how: str, seed: int = 0) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "bytewise":
        return [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    cuts = (
        sorted(rng.sample(range(1, len(data)), min(len(data) - 1, max(1, len(data) // 5))))
        if len(data) > 1
        else []
    )
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def drive(conn: Connection, data: bytes, how: str, *, eof: bool = False, seed: int = 0) -> list[object]:
    """Events (and a final ``(ErrorType, message)``) from feeding ``data`` in ``how`` chunks."""
    events: list[object] = []
    try:
        for chunk in split(data, how, seed):
            conn.receive_data(chunk)
            events += _drain(conn)
        if eof:
            conn.receive_eof()
            events += _drain(conn, stop_at_close=True)
    except KafkaWireError as exc:
        events.append((type(exc), str(exc)))
    return events


def _drain(conn: Connection, stop_at_close: bool = False) -> list[object]:
    out: list[object] = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
        if stop_at_close and type(event).__name__ == "ConnectionClosed":
            break
    return out


def outcome(
    make: Callable[[], Connection], data: bytes, *, eof: bool = False, seeds: tuple[int, ...] = (0, 1, 2)
) -> tuple[list[object], bytes]:
    """The events and the bytes the connection wrote itself, identical across chunkings."""
    runs: list[tuple[list[object], bytes]] = []
    for how in CHUNKINGS:
        for seed in seeds if how == "random" else (0,):
            conn = make()
            conn.data_to_send()
            events = drive(conn, data, how, eof=eof, seed=seed)
            runs.append((events, conn.data_to_send()))
    first = runs[0]
    for run in runs[1:]:
        assert run == first
    return first


def failure(events: list[object]) -> tuple[type[BaseException], str]:
    """The one outcome of a run that raised: (exception type, message), as ``drive`` records it."""
    [event] = events
    assert isinstance(event, tuple)
    kind, message = event
    assert isinstance(kind, type) and issubclass(kind, BaseException) and isinstance(message, str)
    return kind, message


def fed(
    make: Callable[[], C], data: bytes, *, seeds: tuple[int, ...] = (0, 1, 2)
) -> list[tuple[C, list[object]]]:
    """A fresh connection per chunking, each fed ``data`` and drained: (connection, events)."""
    runs: list[tuple[C, list[object]]] = []
    for how in CHUNKINGS:
        for seed in seeds if how == "random" else (0,):
            conn = make()
            runs.append((conn, drive(conn, data, how, seed=seed)))
    return runs
