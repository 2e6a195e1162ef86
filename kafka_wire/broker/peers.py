"""``PeerLinks``: this node's connections to other nodes, one per (node id, listener, channel).

Six channels, as Kafka keeps separate connections for its raft client and replica fetchers and
one per controller channel manager: Fetch and the KRaft RPCs (Vote, BeginQuorumEpoch,
EndQuorumEpoch, FetchSnapshot) go on the ``quorum`` channel; BrokerRegistration and
BrokerHeartbeat on ``heartbeat`` (Kafka's ``BrokerLifecycleManager`` channel); AlterPartition on
``alter-partition`` (``AlterPartitionManager``'s); a transaction coordinator's WriteTxnMarkers on
``txn-markers`` (Kafka's ``TransactionMarkerChannelManager``) and a partition leader's
AddPartitionsToTxn on ``txn-verify`` (``AddPartitionsToTxnManager``); every other request on
``requests`` (Kafka's ``forwarding`` channel). A server reads a connection one request at a time, so a long-polling
Fetch held there must not keep a request that waits for the data that Fetch brings (a
BrokerRegistration answered once committed) from being read; and a request the controller holds
until its records commit (an AlterPartition while the quorum cannot commit) must not keep the
broker's heartbeats from its controller, or the controller fences a live broker once its
session passes (seed 3789: a new controller fenced both live brokers, whose heartbeats waited
behind held AlterPartitions, and elected the one that had lost power).

The node's parts hand requests for other nodes to ``send`` as
:class:`~kafka_wire.broker.cluster_view.Outbound` values; each link runs a
:class:`~kafka_wire.protocol.client.ClientConnection` (ApiVersions first, client id
``kafka-wire-node-<id>``) over an outbound connection the driver opens on
:class:`~kafka_wire.broker.effects.OpenConnection`. On a listener with a login (``logins``: the
inter-broker listener when it is SASL_PLAINTEXT) the link authenticates with PLAIN after
ApiVersions, and is READY once authenticated (a refused login loses the link, as a lost
connection does). Outbound connection ids are negative (-1, -2,
...), a new one per attempt.

A link's life is :data:`LINK_TRANSITIONS`: IDLE (no connection, nothing to send) -> CONNECTING
(asked the driver) -> NEGOTIATING (connected, ApiVersions in flight) -> READY; a refused or lost
connection goes to BACKOFF, whose wait starts at ``reconnect.backoff.ms`` (50) and doubles up to
``reconnect.backoff.max.ms`` (1000) per failed attempt (reset once a connection negotiates), and
then to CONNECTING again when requests wait, else IDLE.

Every request ends in exactly one call of its ``on_reply``: the response body, or None when it
failed (no endpoint for the node, its timeout passed while it waited or was in flight, the
connection was lost, the peer broke the protocol, the version is not supported). Replies are
given during ``receive_data`` / ``connection_closed`` / ``tick``; failures found during ``send``
are given at the next ``tick`` (``next_deadline_ms`` is then the time of that send), so a part
never sees its callback run inside its own ``send``.

No I/O: effects gather until :meth:`PeerLinks.take_effects`.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.cluster_view import Endpoint, Outbound
from kafka_wire.broker.effects import CloseConnection, Effect, OpenConnection, Send
from kafka_wire.errors import EncodeError, ProtocolError, UnsupportedVersionError
from kafka_wire.messages import ApiKey
from kafka_wire.protocol.events import (
    NEED_DATA,
    Authenticated,
    ConnectionClosed,
    RequestTimedOut,
    Response,
    VersionsNegotiated,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES
from kafka_wire.protocol.machine import step
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.protocol.client import ClientConfig, ClientConnection

#: Kafka's ``reconnect.backoff.ms`` and ``reconnect.backoff.max.ms`` defaults.
DEFAULT_RECONNECT_BACKOFF_MS: Final = 50
DEFAULT_RECONNECT_BACKOFF_MAX_MS: Final = 1000

#: Where a node's endpoint on a listener is found (None: unknown).
EndpointOf = Callable[[int, str], Endpoint | None]

#: The requests of the ``quorum`` channel (see the module docstring).
QUORUM_CHANNEL_APIS: Final = frozenset(
    {ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH_SNAPSHOT}
)
#: The channel of each request that does not go on ``requests`` (see the module docstring).
CHANNEL_OF_API: Final[Mapping[int, str]] = {
    **{api: "quorum" for api in QUORUM_CHANNEL_APIS},
    ApiKey.BROKER_REGISTRATION: "heartbeat",
    ApiKey.BROKER_HEARTBEAT: "heartbeat",
    ApiKey.ALTER_PARTITION: "alter-partition",
    ApiKey.WRITE_TXN_MARKERS: "txn-markers",
    ApiKey.ADD_PARTITIONS_TO_TXN: "txn-verify",
}


def channel_of(outbound: Outbound) -> str:
    api = outbound.body.API_KEY
    return "requests" if api is None else CHANNEL_OF_API.get(api, "requests")


_SILENT: Final = logging.getLogger("kafka_wire.broker.peers.silent")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class LinkState(enum.Enum):
    IDLE = "IDLE"
    CONNECTING = "CONNECTING"
    NEGOTIATING = "NEGOTIATING"
    READY = "READY"
    BACKOFF = "BACKOFF"


class LinkInput(enum.Enum):
    CONNECT = "connect"
    ESTABLISHED = "established"
    NEGOTIATED = "negotiated"
    LOST = "lost"
    BACKOFF_OVER = "backoff over"


_L = LinkState
_I = LinkInput

LINK_TRANSITIONS: Final[Mapping[tuple[LinkState, LinkInput], LinkState]] = {
    (_L.IDLE, _I.CONNECT): _L.CONNECTING,
    (_L.CONNECTING, _I.ESTABLISHED): _L.NEGOTIATING,
    (_L.CONNECTING, _I.LOST): _L.BACKOFF,
    (_L.NEGOTIATING, _I.NEGOTIATED): _L.READY,
    (_L.NEGOTIATING, _I.LOST): _L.BACKOFF,
    (_L.READY, _I.LOST): _L.BACKOFF,
    (_L.BACKOFF, _I.BACKOFF_OVER): _L.IDLE,
}


@dataclass(frozen=True, slots=True)
class _Waiting:
    outbound: Outbound
    deadline_ms: int


@dataclass(slots=True)
class _Link:
    destination: int
    listener: str
    channel: str
    state: LinkState = LinkState.IDLE
    conn_id: int = 0
    client: ClientConnection | None = None
    #: Requests not yet handed to the connection (it is not READY), oldest first.
    waiting: deque[_Waiting] = field(default_factory=deque)
    #: Requests written to the connection and not answered, oldest first.
    in_flight: list[Outbound] = field(default_factory=list)
    backoff_ms: int = 0
    backoff_until_ms: int = 0
    #: Whether the connection authenticates (READY after Authenticated, not VersionsNegotiated).
    sasl: bool = False

    def move(self, event: LinkInput) -> None:
        self.state = step(
            LINK_TRANSITIONS,
            self.state,
            event,
            machine=f"link to node {self.destination} ({self.listener}, {self.channel})",
        )


class PeerLinks:
    """Outbound links of node ``node_id`` (see the module docstring)."""

    def __init__(
        self,
        node_id: int,
        endpoint_of: EndpointOf,
        *,
        reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS,
        reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        logins: Mapping[str, tuple[str, str]] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if reconnect_backoff_ms < 0 or reconnect_backoff_max_ms < reconnect_backoff_ms:
            raise ValueError("reconnect backoff: 0 <= reconnect.backoff.ms <= reconnect.backoff.max.ms")
        self.node_id = node_id
        self._endpoint_of = endpoint_of
        self._backoff_ms = reconnect_backoff_ms
        self._backoff_max_ms = reconnect_backoff_max_ms
        self._max_frame_bytes = max_frame_bytes
        #: PLAIN user and password by listener (see the module docstring).
        self._logins = dict(logins or {})
        #: Built with the first link (a one-voter node never opens one, nor loads the client side).
        self._client_config: ClientConfig | None = None
        self._log = logger or _SILENT
        self._links: dict[tuple[int, str, str], _Link] = {}
        self._by_conn: dict[int, _Link] = {}
        self._next_conn_id = -1
        self._effects: list[Effect] = []
        #: Requests that failed inside ``send``: answered None at the next ``tick``.
        self._failed: list[Outbound] = []
        self._failed_at_ms: int | None = None

    # -- inputs ------------------------------------------------------------------------------------

    def send(self, outbound: Outbound, now_ms: int) -> None:
        """Queue ``outbound``; its ``on_reply`` is called in a later call (see the module docstring)."""
        key = (outbound.destination, outbound.listener, channel_of(outbound))
        link = self._links.get(key)
        if link is None:
            link = self._links[key] = _Link(*key)
        link.waiting.append(_Waiting(outbound, now_ms + outbound.timeout_ms))
        if link.state is LinkState.IDLE:
            self._connect(link, now_ms)
        elif link.state is LinkState.READY:
            self._write_waiting(link, now_ms)

    def _new_client(self, link: _Link, now_ms: int) -> ClientConnection:
        from kafka_wire.protocol.client import ClientConfig, ClientConnection

        if self._client_config is None:
            self._client_config = ClientConfig(
                client_id=f"kafka-wire-node-{self.node_id}",
                request_timeout_ms=None,  # each request brings its own
                max_frame_bytes=self._max_frame_bytes,
            )
        login = self._logins.get(link.listener)
        link.sasl = login is not None
        if login is None:
            return ClientConnection(self._client_config, now_ms=now_ms)
        from kafka_wire.protocol.sasl import PlainClient

        return ClientConnection(self._client_config, sasl=PlainClient(*login), now_ms=now_ms)

    def owns(self, conn_id: int) -> bool:
        return conn_id in self._by_conn

    def connection_established(self, conn_id: int, now_ms: int) -> None:
        link = self._by_conn.get(conn_id)
        if link is None or link.state is not LinkState.CONNECTING:
            return  # a connection given up meanwhile: its close was already asked
        link.move(LinkInput.ESTABLISHED)
        link.client = self._new_client(link, now_ms)
        self._flush(link)

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> None:
        link = self._by_conn.get(conn_id)
        if link is None or link.client is None:
            return
        try:
            link.client.receive_data(data, now_ms=now_ms)
        except ProtocolError as exc:
            self._lose(link, now_ms, f"{exc}", close=True)
            return
        self._events(link, now_ms)

    def connection_closed(self, conn_id: int, now_ms: int) -> None:
        link = self._by_conn.get(conn_id)
        if link is not None:
            self._lose(link, now_ms, "connection closed", close=False)

    def tick(self, now_ms: int) -> None:
        failed, self._failed, self._failed_at_ms = self._failed, [], None
        for outbound in failed:
            outbound.on_reply(None, now_ms)
        for link in list(self._links.values()):
            self._expire_waiting(link, now_ms)
            client = link.client
            if client is not None and (due := client.next_deadline_ms()) is not None and due <= now_ms:
                try:
                    client.handle_timer(now_ms)
                except ProtocolError as exc:
                    self._lose(link, now_ms, f"{exc}", close=True)
                    continue
                self._events(link, now_ms)
            if link.state is LinkState.BACKOFF and link.backoff_until_ms <= now_ms:
                link.move(LinkInput.BACKOFF_OVER)
                if link.waiting:
                    self._connect(link, now_ms)

    def close_all(self) -> None:
        """Close every link (the node stops); pending requests are dropped unanswered."""
        for link in self._links.values():
            if link.state in (LinkState.CONNECTING, LinkState.NEGOTIATING, LinkState.READY):
                self._effects.append(CloseConnection(link.conn_id))
        self._links.clear()
        self._by_conn.clear()
        self._failed.clear()

    # -- outputs -----------------------------------------------------------------------------------

    def take_effects(self) -> list[Effect]:
        effects, self._effects = self._effects, []
        return effects

    def next_deadline_ms(self) -> int | None:
        deadlines: list[int] = []
        if self._failed_at_ms is not None:
            deadlines.append(self._failed_at_ms)
        for link in self._links.values():
            if link.waiting:
                deadlines.append(min(w.deadline_ms for w in link.waiting))
                if link.state is LinkState.BACKOFF:
                    deadlines.append(link.backoff_until_ms)
            if link.client is not None and (due := link.client.next_deadline_ms()) is not None:
                deadlines.append(due)
        return min(deadlines) if deadlines else None

    def state_of(self, destination: int, listener: str, channel: str = "requests") -> LinkState:
        link = self._links.get((destination, listener, channel))
        return LinkState.IDLE if link is None else link.state

    # -- inside --------------------------------------------------------------------------------

    def _connect(self, link: _Link, now_ms: int) -> None:
        endpoint = self._endpoint_of(link.destination, link.listener)
        if endpoint is None:
            self._log.debug("no endpoint for node %d on %s", link.destination, link.listener)
            self._fail_later([w.outbound for w in link.waiting], now_ms)
            link.waiting.clear()
            return
        link.move(LinkInput.CONNECT)
        link.conn_id = self._next_conn_id
        self._next_conn_id -= 1
        self._by_conn[link.conn_id] = link
        self._effects.append(OpenConnection(link.conn_id, endpoint.host, endpoint.port, link.listener))

    def _events(self, link: _Link, now_ms: int) -> None:
        client = link.client
        assert client is not None
        while True:
            try:
                event = client.next_event()
            except ProtocolError as exc:
                self._lose(link, now_ms, f"{exc}", close=True)
                return
            if event is NEED_DATA:
                break
            if isinstance(event, VersionsNegotiated | Authenticated) and (
                isinstance(event, Authenticated) or not link.sasl
            ):
                link.move(LinkInput.NEGOTIATED)
                link.backoff_ms = 0
                self._write_waiting(link, now_ms)
                if link.client is not client:  # a request that could not be written lost the link
                    return
            elif isinstance(event, Response):
                outbound = event.context
                assert isinstance(outbound, Outbound)
                link.in_flight.remove(outbound)
                outbound.on_reply(event.body, now_ms)
                if link.client is not client:  # the reply handler's send reset the link
                    return
            elif isinstance(event, RequestTimedOut | ConnectionClosed):
                reason = "request timed out" if isinstance(event, RequestTimedOut) else "connection closed"
                self._lose(link, now_ms, reason, close=True)
                return
        self._flush(link)

    def _write_waiting(self, link: _Link, now_ms: int) -> None:
        client = link.client
        assert client is not None
        while link.waiting:
            item = link.waiting.popleft()
            body = item.outbound.body
            try:
                assert body.API_KEY is not None
                version = client.version_for(body.API_KEY)
                wanted = item.outbound.version
                if wanted is not None:
                    if wanted > version:
                        raise UnsupportedVersionError(
                            f"{type(body).__name__} v{wanted} is past the highest both nodes support (v{version})"
                        )
                    version = wanted
            except UnsupportedVersionError as exc:
                self._log.warning("node %d: %s", link.destination, exc)
                self._fail_later([item.outbound], now_ms)
                continue
            link.in_flight.append(item.outbound)
            try:
                data = client.send(
                    body,
                    version,
                    context=item.outbound,
                    timeout_ms=max(item.deadline_ms - now_ms, 0),
                    now_ms=now_ms,
                )
            except (ProtocolError, EncodeError) as exc:
                self._lose(link, now_ms, f"{exc}", close=True)
                return
            if data:
                self._effects.append(Send(link.conn_id, (data,)))

    def _flush(self, link: _Link) -> None:
        if link.client is not None and (data := link.client.data_to_send()):
            self._effects.append(Send(link.conn_id, (data,)))

    def _expire_waiting(self, link: _Link, now_ms: int) -> None:
        if not link.waiting:
            return
        late = [w for w in link.waiting if w.deadline_ms <= now_ms]
        if not late:
            return
        link.waiting = deque(w for w in link.waiting if w.deadline_ms > now_ms)
        for item in late:
            item.outbound.on_reply(None, now_ms)

    def _lose(self, link: _Link, now_ms: int, reason: str, *, close: bool) -> None:
        """The link's connection is gone (or given up): fail what it carried, back off."""
        self._log.info(
            "link to node %d (%s, %s) lost: %s", link.destination, link.listener, link.channel, reason
        )
        if close:
            self._effects.append(CloseConnection(link.conn_id))
        self._by_conn.pop(link.conn_id, None)
        link.client = None
        link.move(LinkInput.LOST)
        link.backoff_ms = (
            self._backoff_ms if link.backoff_ms == 0 else min(link.backoff_ms * 2, self._backoff_max_ms)
        )
        link.backoff_until_ms = now_ms + link.backoff_ms
        failed, link.in_flight = link.in_flight, []
        failed += [w.outbound for w in link.waiting]
        link.waiting.clear()
        for outbound in failed:
            outbound.on_reply(None, now_ms)

    def _fail_later(self, outbounds: list[Outbound], now_ms: int) -> None:
        if outbounds:
            self._failed.extend(outbounds)
            if self._failed_at_ms is None:
                self._failed_at_ms = now_ms
