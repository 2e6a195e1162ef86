"""A virtual TCP network: ordered byte streams between simulated nodes and clients.

A :class:`Connection` has two directions (0: dialer to acceptor, 1: back). Each send arrives
after a latency drawn from the network's generator, never before an earlier send of the same
direction (TCP order); directions and connections are independent, so messages reorder between
connections. An arrival event does not name its bytes: it delivers the head of its direction's
queue, so bytes held back by a partition can be put in front again on heal and still arrive in
the order they were sent.

Faults: :meth:`Network.reset` (both ends see the connection close), :meth:`Network.block` and
:meth:`Network.unblock` (a partition, per direction between two locations: bytes that arrive
in a blocked direction are held and delivered after the heal, if the connection still exists; a
dial across a partition fails after :attr:`Network.connect_timeout_ms`), and extra latency per
location (:attr:`Network.extra_ms`, a latency spike).

A location is a node's name (``n1``) or a client's name; a node is dialled as ``node<n>``.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from typing import Final, Protocol

from kafka_wire.sim.scheduler import Scheduler

#: Queue items that are not bytes: the dial reaching the acceptor, the answer reaching the
#: dialer, and the end of the stream.
_SYN: Final = b"\x00syn"
_SYN_ACK: Final = b"\x00syn-ack"
_FIN: Final = b"\x00fin"


class Peer(Protocol):
    """One end of connections: a node host or a client's adapter."""

    location: str

    def net_accept(self, port: int, conn: Connection) -> int | None:
        """A dial reached this peer on ``port``: its local id for the connection (None: refused)."""
        ...

    def net_connected(self, local_id: int) -> None: ...

    def net_data(self, local_id: int, data: bytes) -> None: ...

    def net_closed(self, local_id: int) -> None: ...


class Connection:
    __slots__ = (
        "accepted",
        "dead",
        "ends",
        "gone",
        "held",
        "id",
        "last_ms",
        "local",
        "locs",
        "port",
        "queues",
    )

    def __init__(self, conn_id: int, dialer: Peer, acceptor: Peer, dialer_local: int, port: int) -> None:
        self.id = conn_id
        self.ends: tuple[Peer, Peer] = (dialer, acceptor)
        self.locs = (dialer.location, acceptor.location)
        #: Each end's id for the connection (the acceptor's once it accepted).
        self.local = [dialer_local, 0]
        self.port = port
        self.accepted = False
        #: Per direction: items sent and not yet arrived, held by a partition, last arrival time.
        self.queues: tuple[deque[bytes], deque[bytes]] = (deque(), deque())
        self.held: tuple[list[bytes], list[bytes]] = ([], [])
        self.last_ms = [0, 0]
        #: Per end: it closed (or crashed): nothing more is delivered to it.
        self.gone = [False, False]
        self.dead = False


class Network:
    def __init__(
        self,
        scheduler: Scheduler,
        rng: random.Random,
        *,
        latency_ms: tuple[int, int] = (1, 5),
        connect_timeout_ms: int = 1000,
    ) -> None:
        self.scheduler = scheduler
        self.rng = rng
        self.latency_ms = latency_ms
        self.connect_timeout_ms = connect_timeout_ms
        #: Dialable hosts (``node1`` ...) by name.
        self.hosts: dict[str, Peer] = {}
        #: Blocked directions (source location, destination location).
        self.blocked: set[tuple[str, str]] = set()
        #: Extra latency per location (a spike), added to each send to or from it.
        self.extra_ms: dict[str, int] = {}
        self.conns: dict[int, Connection] = {}
        self._next_id = 0
        self.bytes_sent = 0

    # -- latency and partitions -------------------------------------------------------------------
    def _latency(self, src: str, dst: str) -> int:
        low, high = self.latency_ms
        delay = low + int(self.rng.random() * (high - low + 1))
        extra = self.extra_ms
        if extra:
            delay += extra.get(src, 0) + extra.get(dst, 0)
        return delay

    def is_blocked(self, src: str, dst: str) -> bool:
        return bool(self.blocked) and (src, dst) in self.blocked

    def block(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.blocked.update(pairs)

    def unblock(self, pairs: Iterable[tuple[str, str]] | None = None) -> None:
        """Heal ``pairs`` (None: every partition); held bytes go on their way, in order."""
        if pairs is None:
            self.blocked.clear()
        else:
            self.blocked.difference_update(pairs)
        for conn in list(self.conns.values()):
            for d in (0, 1):
                held = conn.held[d]
                if held and not self.is_blocked(conn.locs[d], conn.locs[1 - d]):
                    conn.queues[d].extendleft(reversed(held))
                    count = len(held)
                    held.clear()
                    for _ in range(count):
                        self._schedule_arrival(conn, d)

    # -- connections ------------------------------------------------------------------------------
    def dial(self, dialer: Peer, local_id: int, host: str, port: int) -> Connection:
        """Open a connection from ``dialer`` to ``host:port``; the dialer later sees
        ``net_connected`` or ``net_closed`` for ``local_id``."""
        self._next_id += 1
        target = self.hosts.get(host)
        conn = Connection(self._next_id, dialer, target or dialer, local_id, port)
        self.conns[conn.id] = conn
        src, dst = conn.locs
        if target is None:
            self._refuse_later(conn, self._latency(src, src))
        elif self.is_blocked(src, dst) or self.is_blocked(dst, src):
            self._refuse_later(conn, self.connect_timeout_ms)
        else:
            self._enqueue(conn, 0, _SYN)
        return conn

    def send(self, conn: Connection, direction: int, data: bytes) -> None:
        if conn.dead or conn.gone[direction]:
            return
        self.bytes_sent += len(data)
        self._enqueue(conn, direction, data)

    def close(self, conn: Connection, direction: int) -> None:
        """End ``direction`` closes: the other end sees the close after what was sent before."""
        if conn.dead or conn.gone[direction]:
            return
        conn.gone[direction] = True
        if conn.gone[1 - direction] or (direction == 0 and not conn.accepted and not conn.queues[0]):
            self._kill(conn)
            return
        self._enqueue(conn, direction, _FIN)

    def reset(self, conn: Connection) -> None:
        """Both ends see the connection close now; what was in flight is lost."""
        if conn.dead:
            return
        self._kill(conn)
        for d in (0, 1):
            if not conn.gone[d] and (d == 0 or conn.accepted):
                conn.gone[d] = True
                conn.ends[d].net_closed(conn.local[d])

    def crash(self, location: str, *, machine_lost: bool = False) -> None:
        """Every connection of ``location`` ends: the other end sees a close after what the
        crashed end had sent; nothing more reaches the crashed end. When the machine itself went
        (``machine_lost``: a power loss), what a partition held back from it is lost too: no
        kernel is left to send it again after the heal."""
        for conn in list(self.conns.values()):
            for d in (0, 1):
                if conn.locs[d] == location and not conn.gone[d] and (d == 0 or conn.accepted):
                    if machine_lost:
                        conn.held[d].clear()
                    self.close(conn, d)

    def connections_of(self, location: str) -> list[Connection]:
        return [c for c in self.conns.values() if location in c.locs and not c.dead]

    def _kill(self, conn: Connection) -> None:
        conn.dead = True
        self.conns.pop(conn.id, None)

    def _refuse_later(self, conn: Connection, delay_ms: int) -> None:
        conn.gone[1] = True
        self.scheduler.after(delay_ms, f"refused {conn.id}", lambda: self._refused(conn))

    def _refused(self, conn: Connection) -> None:
        self._kill(conn)
        if not conn.gone[0]:
            conn.gone[0] = True
            conn.ends[0].net_closed(conn.local[0])

    def _enqueue(self, conn: Connection, d: int, item: bytes) -> None:
        conn.queues[d].append(item)
        self._schedule_arrival(conn, d)

    def _schedule_arrival(self, conn: Connection, d: int) -> None:
        src, dst = conn.locs[d], conn.locs[1 - d]
        at = self.scheduler.now_ms + self._latency(src, dst)
        if at < conn.last_ms[d]:
            at = conn.last_ms[d]
        conn.last_ms[d] = at
        self.scheduler.at(at, f"net {conn.id} {src}>{dst}", lambda: self._arrive(conn, d))

    def _arrive(self, conn: Connection, d: int) -> None:
        item = conn.queues[d].popleft()
        if conn.dead:
            return
        if conn.held[d] or (self.blocked and (conn.locs[d], conn.locs[1 - d]) in self.blocked):
            conn.held[d].append(item)
            return
        r = 1 - d
        if item is _SYN:
            if conn.gone[0]:  # the dialer gave up meanwhile
                self._kill(conn)
                return
            local = conn.ends[1].net_accept(conn.port, conn)
            if local is None:
                self._refuse_later(conn, self._latency(conn.locs[1], conn.locs[0]))
                return
            conn.local[1] = local
            conn.accepted = True
            self._enqueue(conn, 1, _SYN_ACK)
            return
        if conn.gone[r]:
            return
        end = conn.ends[r]
        if item is _SYN_ACK:
            end.net_connected(conn.local[0])
        elif item is _FIN:
            conn.gone[r] = True
            self._kill(conn)
            end.net_closed(conn.local[r])
        else:
            end.net_data(conn.local[r], item)
