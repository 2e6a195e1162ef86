"""The client quotas' side of the client connections (``client_connections.py``): the throttle
time of each answer (``quotas/throttling.py``), the connections muted for it (KIP-219: once the
answer is out; an acks=0 Produce's at once) and read again when it is over (a ``("quota", conn)``
timer), and the handling time the driver measured for a connection's requests.

A connection's requests are measured against ``request_percentage`` with the client id of its
latest request (the driver measures calls, not requests; clients keep one client id per
connection). Requests on a controller listener are never throttled.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from kafka_wire.broker.channels import Channel
from kafka_wire.broker.cluster_node import ClusterNode
from kafka_wire.broker.effects import Effect
from kafka_wire.broker.muting import MuteInput, Muting
from kafka_wire.broker.quotas.manager import user_of
from kafka_wire.broker.quotas.throttling import throttle
from kafka_wire.broker.state import BrokerState, Spliced
from kafka_wire.broker.timers import TimerQueue
from kafka_wire.codec.structs import Message
from kafka_wire.protocol.events import Request

#: The owner of the timers of connections muted by a client quota (``("quota", conn_id)``).
QUOTA_TIMERS: Final = "quota"


class Throttles:
    """Throttle times and the connections muted for them."""

    def __init__(self, muting: Muting, timer_queue: TimerQueue, cluster: ClusterNode) -> None:
        self._muting = muting
        self._timer_queue = timer_queue
        self._cluster = cluster
        self.state: BrokerState | None = None
        #: acks=0 produces over their quota in this call: their connections' throttle times.
        self._unanswered: dict[int, int] = {}

    def applies(self, conn: Channel) -> bool:
        """Whether client quotas apply to the connection's requests (some quota is set, and it is
        not a controller listener's)."""
        return self.state is not None and self.state.quotas.active and not self._cluster.serves(conn.listener)

    def answer(
        self, conn: Channel, request: Request, body: Message | Spliced, now_ms: int
    ) -> tuple[Message | Spliced, int]:
        """The answer to send to ``request`` and the throttle time to mute its connection for."""
        if not self.applies(conn):
            return body, 0
        assert self.state is not None
        return throttle(
            self.state.quotas, conn.principal, request.header.client_id or "", request.body, body, now_ms
        )

    def unanswered(
        self, conn_id: int, conn: Channel, request: Request, body: Message | Spliced, now_ms: int
    ) -> None:
        """An acks=0 Produce was handled: its bytes count against the byte rate, and a throttle
        time mutes its connection at the end of the step (:meth:`mute_unanswered`)."""
        if not self.applies(conn):
            return
        assert self.state is not None
        _, ms = throttle(
            self.state.quotas,
            conn.principal,
            request.header.client_id or "",
            request.body,
            body,
            now_ms,
            answered=False,
        )
        if ms > 0:
            self._unanswered[conn_id] = ms

    def mute(self, conn_id: int, throttle_ms: int, now_ms: int, out: list[Effect]) -> None:
        """Mute the connection for ``throttle_ms`` (over a client quota)."""
        self._muting.mute(conn_id, MuteInput.THROTTLE, out)
        key = (QUOTA_TIMERS, conn_id)
        until = now_ms + throttle_ms
        self._timer_queue.schedule(key, max(until, self._timer_queue.deadline_of(key) or until))

    def mute_unanswered(self, open_conns: Container[int], now_ms: int, out: list[Effect]) -> None:
        """Mute the connections whose acks=0 produces went over their quota (no answer to wait
        for: muted at once, as Kafka throttles them); ``open_conns`` tells which are open."""
        if not self._unanswered:
            return
        for conn_id, throttle_ms in self._unanswered.items():
            if conn_id in open_conns:
                self.mute(conn_id, throttle_ms, now_ms, out)
        self._unanswered.clear()

    def release(self, open_conns: Container[int], now_ms: int) -> None:
        """Connections whose throttle time is over may be read again (``resume``)."""
        while (due := self._timer_queue.pop_due(now_ms, QUOTA_TIMERS)) is not None:
            conn_id = int(due.key[1])  # type: ignore[call-overload]  # keys are (owner, int)
            if conn_id in open_conns:
                self._muting.throttle_over(conn_id)

    def spent(self, conn: Channel, time_ns: int, now_ms: int) -> None:
        """The driver measured ``time_ns`` handling the connection's requests: it counts against
        ``request_percentage`` (the next answers' throttle time)."""
        if time_ns > 0 and self.applies(conn):
            assert self.state is not None
            self.state.quotas.record_request_time(user_of(conn.principal), conn.client_id, time_ns, now_ms)

    def forget(self, conn_id: int) -> None:
        self._timer_queue.cancel((QUOTA_TIMERS, conn_id))
        self._unanswered.pop(conn_id, None)

    def clear(self) -> None:
        self._timer_queue.clear(QUOTA_TIMERS)
        self._unanswered.clear()
