"""What every simulated client shares: connections to nodes on the project's Sans-IO
``ClientConnection``, the cluster metadata they learn, and timers in virtual time.

A client asks :meth:`ClientBase.request` to send a request to a node; the answer (or ``None``
when the connection broke or the request timed out, so the outcome is unknown) comes back to the
handler it gave. Subclasses keep their own state and re-examine it in :meth:`ClientBase.pump`,
which runs after every input, so no input is ever lost waiting for a callback.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire.client.cluster import Leadership, newer_leadership
from kafka_wire.codec.structs import Message
from kafka_wire.errors import KafkaWireError
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataRequestTopic, MetadataResponse
from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, Response
from kafka_wire.protocol.events import ConnectionClosed, RequestTimedOut

if TYPE_CHECKING:
    from kafka_wire.sim.contracts import ClientIO
    from kafka_wire.sim.history import History, Op

#: Highest versions the simulated clients speak: the last ones that name topics (later ones use
#: topic ids) and, for FindCoordinator and OffsetFetch, the last with one group per request.
VERSION_CAPS: Final[dict[int, int]] = {
    ApiKey.METADATA: 12,
    ApiKey.PRODUCE: 9,
    ApiKey.FETCH: 12,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.OFFSET_FETCH: 7,
    ApiKey.OFFSET_COMMIT: 9,
}
#: Kafka's ``retry.backoff.ms``.
RETRY_BACKOFF_MS: Final = 100
#: Kafka's ``request.timeout.ms`` is 30 s; shorter here so that a run's virtual time is spent on
#: work rather than waiting (still well above the broker's replica lag and fetch waits).
REQUEST_TIMEOUT_MS: Final = 10_000
#: Kafka's ``metadata.max.age.ms`` is 5 minutes; a simulated client refreshes more eagerly.
METADATA_MAX_AGE_MS: Final = 5_000

Address = tuple[str, int]
#: Gets the response body, or None when none will come (connection lost, timed out).
Handler = Callable[[Message | None, int], None]


@dataclass(slots=True)
class _Conn:
    address: Address
    connection: ClientConnection
    ready: bool = False
    #: Requests waiting for the ApiVersions exchange to end.
    queued: list[tuple[Message, Handler | None, int | None]] = field(default_factory=list)
    #: Handlers of requests sent and not answered, oldest first.
    waiting: list[Handler] = field(default_factory=list)


class ClientBase:
    """Connections, metadata and timers of one simulated client."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
    ) -> None:
        self.name = name
        self.history = history
        self.rng = rng
        self.bootstrap = list(bootstrap)
        self.topics = list(topics)
        self.io: ClientIO | None = None
        #: API key -> the highest version this client speaks (a subclass may lower some).
        self.version_caps: dict[int, int] = dict(VERSION_CAPS)
        self.now_ms = 0
        self.quiescing = False
        #: node id -> address, from the last Metadata response.
        self.brokers: dict[int, Address] = {}
        self.partitions: dict[tuple[str, int], Leadership] = {}
        self.partition_counts: dict[str, int] = {}
        #: Topic ids by name, from Metadata (KIP-848 heartbeats name partitions by topic id).
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.metadata_in_flight = False
        self.metadata_at_ms = -METADATA_MAX_AGE_MS
        self.metadata_wanted = True
        self._conns: dict[int, _Conn] = {}
        self._by_address: dict[Address, int] = {}
        #: Wake-up times asked for by the subclass (the earliest matters).
        self._wakeups: list[int] = []

    # -- the SimClient surface -------------------------------------------------------------------

    def start(self, io: ClientIO, now_ms: int) -> None:
        self.io = io
        self.now_ms = now_ms
        self.pump(now_ms)

    def connected(self, conn: int, now_ms: int) -> None:
        self.now_ms = now_ms
        c = self._conns.get(conn)
        if c is not None:
            self._write(conn, c)
        self.pump(now_ms)

    def received(self, conn: int, data: bytes, now_ms: int) -> None:
        self.now_ms = now_ms
        c = self._conns.get(conn)
        if c is None:
            return
        try:
            c.connection.receive_data(data, now_ms=now_ms)
            self._events(conn, c, now_ms)
        except KafkaWireError:
            self._drop(conn, c, now_ms, close=True)
        self.pump(now_ms)

    def closed(self, conn: int, now_ms: int) -> None:
        self.now_ms = now_ms
        c = self._conns.get(conn)
        if c is not None:
            self._drop(conn, c, now_ms, close=False)
        self.pump(now_ms)

    def tick(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._wakeups = [t for t in self._wakeups if t > now_ms]
        for conn, c in list(self._conns.items()):
            deadline = c.connection.next_deadline_ms()
            if deadline is not None and deadline <= now_ms:
                try:
                    c.connection.handle_timer(now_ms)
                    self._events(conn, c, now_ms)
                except KafkaWireError:
                    self._drop(conn, c, now_ms, close=True)
        self.pump(now_ms)

    def next_deadline_ms(self) -> int | None:
        best = min(self._wakeups) if self._wakeups else None
        for c in self._conns.values():
            deadline = c.connection.next_deadline_ms()
            if deadline is not None and (best is None or deadline < best):
                best = deadline
        return best

    def quiesce(self, now_ms: int) -> None:
        self.quiescing = True
        self.pump(now_ms)

    def idle(self) -> bool:
        return True

    # -- for subclasses --------------------------------------------------------------------------

    def pump(self, now_ms: int) -> None:
        """Look at the state and send what can be sent (subclasses extend)."""
        self.maybe_refresh_metadata(now_ms)

    def wake_at(self, time_ms: int) -> None:
        if time_ms not in self._wakeups:
            self._wakeups.append(time_ms)

    def record(self, op: Op) -> None:
        self.history.add(op)

    def request(
        self, address: Address, message: Message, handler: Handler | None, *, timeout_ms: int | None = None
    ) -> None:
        """Send ``message`` to ``address`` (dialing it when needed); ``handler`` gets the answer
        or None. A None handler: no response is expected (Produce with acks=0). ``timeout_ms``
        overrides :data:`REQUEST_TIMEOUT_MS` (JoinGroup waits for a whole rebalance)."""
        assert self.io is not None
        conn_id = self._by_address.get(address)
        if conn_id is None:
            connection = ClientConnection(
                ClientConfig(client_id=self.name, request_timeout_ms=REQUEST_TIMEOUT_MS), now_ms=self.now_ms
            )
            conn_id = self.io.connect(self, address[0], address[1])
            self._conns[conn_id] = _Conn(address, connection)
            self._by_address[address] = conn_id
        c = self._conns[conn_id]
        c.queued.append((message, handler, timeout_ms))
        if c.ready:
            self._write(conn_id, c)

    def leader_address(self, topic: str, partition: int) -> Address | None:
        info = self.partitions.get((topic, partition))
        if info is None or info.leader < 0:
            return None
        return self.brokers.get(info.leader)

    def any_address(self) -> Address:
        """A node to ask about the cluster: a known broker or a bootstrap address."""
        known = sorted(self.brokers.values())
        pool = known + [a for a in self.bootstrap if a not in known]
        return pool[self.rng.randrange(len(pool))]

    def want_metadata(self) -> None:
        self.metadata_wanted = True

    def maybe_refresh_metadata(self, now_ms: int) -> None:
        if self.metadata_in_flight:
            return
        due = (
            self.metadata_at_ms + RETRY_BACKOFF_MS
            if self.metadata_wanted
            else self.metadata_at_ms + METADATA_MAX_AGE_MS
        )
        if now_ms < due:
            self.wake_at(due)
            return
        self.metadata_in_flight = True
        self.metadata_at_ms = now_ms
        request = MetadataRequest(
            topics=[MetadataRequestTopic(name=t) for t in self.topics],
            allow_auto_topic_creation=False,
        )
        self.request(self.any_address(), request, self._on_metadata)

    def _on_metadata(self, body: Message | None, now_ms: int) -> None:
        self.metadata_in_flight = False
        if not isinstance(body, MetadataResponse):
            return
        self.brokers = {b.node_id: (b.host, b.port) for b in body.brokers}
        complete = bool(body.brokers)
        for topic in body.topics:
            if topic.error_code != 0 or topic.name is None:
                complete = False
                continue
            self.partition_counts[topic.name] = len(topic.partitions)
            self.topic_ids[topic.name] = topic.topic_id
            for p in topic.partitions:
                key = (topic.name, p.partition_index)
                seen = Leadership(topic.topic_id, p.leader_id, p.leader_epoch)
                kept = self.partitions[key] = newer_leadership(self.partitions.get(key), seen)
                if kept is seen and seen.leader < 0:  # an older answer's leaderless partition does not count
                    complete = False
        self.metadata_wanted = not complete

    # -- connections -----------------------------------------------------------------------------

    def _write(self, conn_id: int, c: _Conn) -> None:
        assert self.io is not None
        connection = c.connection
        out = bytearray()
        try:
            while c.ready and c.queued:
                message, handler, timeout_ms = c.queued.pop(0)
                version = connection.version_for(message.API_KEY or 0)
                cap = self.version_caps.get(message.API_KEY or 0)
                if cap is not None and version > cap:
                    version = cap
                if handler is not None:
                    c.waiting.append(handler)
                out += connection.send(
                    message, version, context=handler, timeout_ms=timeout_ms, now_ms=self.now_ms
                )
            out += connection.data_to_send()
        except KafkaWireError:  # a broker without the API, a connection gone wrong: give up on it
            self._drop(conn_id, c, self.now_ms, close=True)
            return
        if out:
            self.io.send(conn_id, bytes(out))

    def _events(self, conn_id: int, c: _Conn, now_ms: int) -> None:
        connection = c.connection
        while True:
            event = connection.next_event()
            if event is NEED_DATA:
                break
            if isinstance(event, Response):
                handler = event.context
                if handler is not None and callable(handler):
                    if handler in c.waiting:
                        c.waiting.remove(handler)
                    handler(event.body, now_ms)
            elif isinstance(event, (ConnectionClosed, RequestTimedOut)):
                self._drop(conn_id, c, now_ms, close=True)
                return
            else:  # VersionsNegotiated
                c.ready = True
                self._write(conn_id, c)
        self._write(conn_id, c)

    def _drop(self, conn_id: int, c: _Conn, now_ms: int, *, close: bool) -> None:
        """The connection is gone: every request on it has an unknown outcome."""
        if self._conns.pop(conn_id, None) is None:
            return
        self._by_address.pop(c.address, None)
        if close and self.io is not None:
            self.io.close(conn_id)
        self.metadata_wanted = True
        handlers = c.waiting + [h for _, h, _ in c.queued if h is not None]
        c.waiting, c.queued = [], []
        for handler in handlers:
            handler(None, now_ms)
        self.connection_lost(c.address, now_ms)

    def connection_lost(self, address: Address, now_ms: int) -> None:
        """The connection to ``address`` closed, after its requests' handlers heard of it (a
        client with state bound to a connection, a share session, overrides this)."""
