"""``LocalLink``: a node's requests to its own controller, answered in the same process.

The only voter of its quorum (a single node), sending a request to itself on a controller
listener (its broker side registering, heartbeating, forwarding an admin request or asking for
producer ids), needs no connection: the link hands the request to
the node's controller (or raft replica) at the next :meth:`LocalLink.pump`, and gives the answer
to the request's ``on_reply`` when it is ready: at once, or when the held answer (a
:class:`~kafka_wire.broker.state.Waiting`: records waiting for their commit) is done. As on a
peer link, every request ends in exactly one ``on_reply`` call, never inside ``send``, and a
request not answered within its ``timeout_ms`` gets None. A node that is the only voter of its
quorum (a single node) thus needs no controller socket at all.

The request is served at the version it names (``Outbound.version``: a forwarded request
keeps its client's version), else at the newest version kafka_wire knows, which is what a peer
link between two kafka_wire nodes negotiates.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import REQUESTS
from kafka_wire.quick_dataclass import dataclass

#: Serves one request: (api key, version, body, now_ms) -> the answer, or a held one.
Serve = Callable[[int, int, Message, int], Message | Waiting]


@dataclass(slots=True)
class _Held:
    outbound: Outbound
    deadline_ms: int
    waiting: Waiting


class LocalLink:
    """Requests from a node to its own controller (see the module docstring)."""

    def __init__(self, serve: Serve) -> None:
        self._serve = serve
        self._queued: list[tuple[Outbound, int]] = []
        self._held: list[_Held] = []

    def send(self, outbound: Outbound, now_ms: int) -> None:
        """Queue ``outbound``; it is served at the next :meth:`pump`."""
        self._queued.append((outbound, now_ms + outbound.timeout_ms))

    def pump(self, now_ms: int) -> bool:
        """Serve the queued requests and give the answers that are ready; whether anything was
        served or answered (an answer's ``on_reply`` may have queued more)."""
        queued, self._queued = self._queued, []
        ready: list[tuple[Outbound, Message | None]] = []
        for outbound, deadline_ms in queued:
            key = outbound.body.API_KEY
            assert key is not None
            version = outbound.version
            if version is None:
                version = max(REQUESTS[key].VERSIONS)
            answer = self._serve(key, version, outbound.body, now_ms)
            if isinstance(answer, Message):
                ready.append((outbound, answer))
            else:
                self._held.append(_Held(outbound, deadline_ms, answer))
        still: list[_Held] = []
        for held in self._held:
            body = held.waiting.poll(now_ms)
            if isinstance(body, Message):
                ready.append((held.outbound, body))
            elif now_ms >= held.deadline_ms:
                ready.append((held.outbound, None))
            else:
                still.append(held)
        self._held = still
        for outbound, reply in ready:
            outbound.on_reply(reply, now_ms)
        return bool(queued or ready)

    @property
    def busy(self) -> bool:
        """Requests are queued or held."""
        return bool(self._queued or self._held)

    def next_deadline_ms(self) -> int | None:
        deadlines = [min(h.deadline_ms, h.waiting.deadline_ms) for h in self._held]
        deadlines += [deadline_ms - outbound.timeout_ms for outbound, deadline_ms in self._queued]  # now
        return min(deadlines, default=None)

    def close(self) -> None:
        """The node stops: pending requests are dropped unanswered."""
        self._queued.clear()
        self._held.clear()
