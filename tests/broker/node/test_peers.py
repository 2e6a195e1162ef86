"""PeerLinks: outbound links to other nodes, driven against a real ServerConnection."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_wire.broker.apis import SUPPORTED
from kafka_wire.broker.cluster_view import Endpoint, Outbound
from kafka_wire.broker.effects import CloseConnection, Effect, OpenConnection, Send
from kafka_wire.broker.node import controller_api_versions
from kafka_wire.broker.peers import LinkState, PeerLinks
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    DescribeClusterRequest,
    DescribeClusterResponse,
    FetchRequest,
)
from kafka_wire.protocol.events import NEED_DATA, Request
from kafka_wire.protocol.server import ServerConfig, ServerConnection, api_versions_response

ENDPOINTS = {(2, "CONTROLLER"): Endpoint("CONTROLLER", "127.0.0.1", 9093)}


def endpoint_of(node_id: int, listener: str) -> Endpoint | None:
    return ENDPOINTS.get((node_id, listener))


class Replies:
    def __init__(self) -> None:
        self.got: list[tuple[Message | None, int]] = []

    def __call__(self, body: Message | None, now_ms: int) -> None:
        self.got.append((body, now_ms))


def request(replies: Replies, *, destination: int = 2, timeout_ms: int = 30_000) -> Outbound:
    return Outbound(destination, "CONTROLLER", DescribeClusterRequest(), replies, timeout_ms)


class Peer:
    """The far side: a ServerConnection answering ApiVersions and DescribeCluster (holding any
    other request)."""

    def __init__(self, api_versions: Mapping[int, tuple[int, int]] = SUPPORTED) -> None:
        self.api_versions = api_versions
        self.server = ServerConnection(ServerConfig(api_versions=api_versions))
        self.requests: list[Request] = []
        self.client_ids: list[str | None] = []

    def feed(self, effects: list[Effect], conn_id: int) -> bytes:
        data = b"".join(
            p
            for e in effects
            if isinstance(e, Send) and e.conn_id == conn_id
            for p in e.parts
            if isinstance(p, bytes)
        )
        self.server.receive_data(data)
        out = b""
        while (event := self.server.next_event()) is not NEED_DATA:
            if isinstance(event, Request):
                self.requests.append(event)
                self.client_ids.append(event.header.client_id)
                if event.api_key == 18:
                    body: Message = api_versions_response(self.api_versions)
                elif isinstance(event.body, DescribeClusterRequest):
                    body = DescribeClusterResponse(cluster_id="c")
                else:
                    continue  # any other request is held, unanswered
                out += self.server.send(event.reply(body))
        return out + self.server.data_to_send()


def connected(links: PeerLinks, peer: Peer, now_ms: int = 0) -> int:
    """Drive a link through connect and ApiVersions; return its conn id."""
    opened = [e for e in links.take_effects() if isinstance(e, OpenConnection)]
    assert len(opened) == 1
    conn_id = opened[0].conn_id
    links.connection_established(conn_id, now_ms)
    answer = peer.feed(links.take_effects(), conn_id)
    links.receive_data(conn_id, answer, now_ms)
    return conn_id


def test_a_request_opens_a_link_negotiates_then_is_answered() -> None:
    links = PeerLinks(7, endpoint_of)
    peer = Peer()
    replies = Replies()
    links.send(request(replies), 0)
    effects = links.take_effects()
    assert effects == [OpenConnection(-1, "127.0.0.1", 9093, "CONTROLLER")]
    links.connection_established(-1, 1)
    assert links.state_of(2, "CONTROLLER") is LinkState.NEGOTIATING
    answer = peer.feed(links.take_effects(), -1)  # ApiVersions only: the request waits for it
    assert [r.api_key for r in peer.requests] == [18]
    links.receive_data(-1, answer, 2)
    assert links.state_of(2, "CONTROLLER") is LinkState.READY
    answer = peer.feed(links.take_effects(), -1)
    assert [type(r.body).__name__ for r in peer.requests] == ["ApiVersionsRequest", "DescribeClusterRequest"]
    assert peer.client_ids == ["kafka-wire-node-7"] * 2
    links.receive_data(-1, answer, 3)
    assert len(replies.got) == 1 and isinstance(replies.got[0][0], DescribeClusterResponse)
    # The link stays open: the next request goes out at once.
    links.send(request(replies), 4)
    assert [type(e) for e in links.take_effects()] == [Send]


def test_a_lost_connection_fails_pending_requests_and_backs_off_doubling() -> None:
    links = PeerLinks(7, endpoint_of)
    peer = Peer()
    replies = Replies()
    links.send(request(replies), 0)
    conn_id = connected(links, peer)
    links.send(request(replies), 10)
    links.take_effects()
    links.connection_closed(conn_id, 20)
    assert replies.got == [(None, 20), (None, 20)]
    assert links.state_of(2, "CONTROLLER") is LinkState.BACKOFF
    # A request during backoff waits for it; the reconnect comes at 20 + 50.
    links.send(request(replies), 30)
    assert links.take_effects() == []
    assert links.next_deadline_ms() == 70
    links.tick(69)
    assert links.take_effects() == []
    links.tick(70)
    (reopen,) = links.take_effects()
    assert isinstance(reopen, OpenConnection) and reopen.conn_id == conn_id - 1
    links.connection_closed(reopen.conn_id, 80)  # refused: 100 ms this time
    assert replies.got[-1] == (None, 80)
    links.send(request(replies), 80)
    assert links.next_deadline_ms() == 180


def test_backoff_is_capped_and_reset_by_a_negotiated_connection() -> None:
    links = PeerLinks(7, endpoint_of, reconnect_backoff_ms=50, reconnect_backoff_max_ms=120)
    replies = Replies()
    now = 0
    links.send(request(replies, timeout_ms=10_000), now)
    waits = []
    for _ in range(4):
        (opened,) = [e for e in links.take_effects() if isinstance(e, OpenConnection)]
        links.connection_closed(opened.conn_id, now)  # refused
        links.send(request(replies, timeout_ms=10_000), now)
        due = links.next_deadline_ms()
        assert due is not None
        waits.append(due - now)
        now = due
        links.tick(now)
    assert waits == [50, 100, 120, 120]
    peer = Peer()
    conn_id = connected(links, peer, now)
    links.connection_closed(conn_id, now)
    links.send(request(replies), now)
    assert links.next_deadline_ms() == now + 50


def test_a_request_times_out_while_waiting_and_in_flight() -> None:
    links = PeerLinks(7, endpoint_of)
    replies = Replies()
    links.send(request(replies, timeout_ms=100), 0)
    links.take_effects()  # the connection never comes
    assert links.next_deadline_ms() == 100
    links.tick(100)
    assert replies.got == [(None, 100)]
    # In flight: the connection closes, as Kafka's client disconnects on a request timeout.
    peer = Peer()
    links.connection_established(-1, 100)
    links.receive_data(-1, peer.feed(links.take_effects(), -1), 100)
    links.send(request(replies, timeout_ms=100), 200)
    links.take_effects()
    assert links.next_deadline_ms() == 300
    links.tick(300)
    assert replies.got[-1] == (None, 300)
    assert CloseConnection(-1) in links.take_effects()
    assert links.state_of(2, "CONTROLLER") is LinkState.BACKOFF


def test_an_unknown_node_fails_at_the_next_tick() -> None:
    links = PeerLinks(7, endpoint_of)
    replies = Replies()
    links.send(request(replies, destination=9), 5)
    assert replies.got == [] and links.take_effects() == []
    assert links.next_deadline_ms() == 5
    links.tick(6)
    assert replies.got == [(None, 6)]
    assert links.next_deadline_ms() is None


def test_garbage_from_the_peer_closes_the_link() -> None:
    links = PeerLinks(7, endpoint_of)
    replies = Replies()
    links.send(request(replies), 0)
    links.take_effects()
    links.connection_established(-1, 0)
    links.take_effects()
    links.receive_data(-1, b"\x00\x00\x00\x04\x00\x00\x00\x63", 1)  # a correlation id nobody sent
    assert CloseConnection(-1) in links.take_effects()
    assert replies.got == [(None, 1)]
    assert not links.owns(-1)


def test_a_reply_handler_may_send_again() -> None:
    links = PeerLinks(7, endpoint_of)
    peer = Peer()
    got: list[Message | None] = []

    def again(body: Message | None, now_ms: int) -> None:
        got.append(body)
        if len(got) < 2:
            links.send(Outbound(2, "CONTROLLER", DescribeClusterRequest(), again), now_ms)

    links.send(Outbound(2, "CONTROLLER", DescribeClusterRequest(), again), 0)
    conn_id = connected(links, peer)
    links.receive_data(conn_id, peer.feed(links.take_effects(), conn_id), 1)
    links.receive_data(conn_id, peer.feed(links.take_effects(), conn_id), 2)
    assert [type(b).__name__ for b in got] == ["DescribeClusterResponse"] * 2


def test_a_request_the_negotiated_version_cannot_carry_fails_alone_and_the_link_backs_off() -> None:
    """A body with a field the newest common version lacks (a bug of its sender) cannot be
    written: its reply is None and its link is reset, once."""
    links = PeerLinks(7, endpoint_of)
    peer = Peer()
    replies = Replies()
    unwritable = FetchRequest(replica_id=3)  # v15+ carries the replica in replica_state only
    links.send(Outbound(2, "CONTROLLER", unwritable, lambda body, now: replies.got.append((body, now))), 0)
    (opened,) = links.take_effects()
    assert isinstance(opened, OpenConnection)
    links.connection_established(opened.conn_id, 0)
    links.receive_data(opened.conn_id, peer.feed(links.take_effects(), opened.conn_id), 1)
    assert replies.got == [(None, 1)]
    assert CloseConnection(opened.conn_id) in links.take_effects()
    assert links.state_of(2, "CONTROLLER", "quorum") is LinkState.BACKOFF


def test_a_request_goes_at_the_version_it_names_else_the_highest_both_support() -> None:
    """A forwarded request keeps its client's version; one past what the peer serves fails alone."""
    links = PeerLinks(7, endpoint_of)
    peer = Peer()
    replies = Replies()
    links.send(Outbound(2, "CONTROLLER", DescribeClusterRequest(), replies, version=0), 0)
    links.send(request(replies), 0)
    too_new = Outbound(2, "CONTROLLER", DescribeClusterRequest(), replies, version=99)
    links.send(too_new, 0)
    conn_id = connected(links, peer)
    peer.feed(links.take_effects(), conn_id)
    sent = [(type(r.body).__name__, r.api_version) for r in peer.requests[1:]]
    assert sent == [("DescribeClusterRequest", 0), ("DescribeClusterRequest", SUPPORTED[60][1])]
    links.tick(1)
    assert replies.got == [(None, 1)]  # only the one past v2 has failed (the others wait)


def test_fetches_and_other_requests_travel_on_separate_connections() -> None:
    """A Fetch held at its destination (a long poll) never delays another request there."""
    links = PeerLinks(7, endpoint_of)
    replies = Replies()
    links.send(Outbound(2, "CONTROLLER", FetchRequest(), lambda body, now: None), 0)
    links.send(request(replies), 0)
    opened = [e for e in links.take_effects() if isinstance(e, OpenConnection)]
    assert [e.conn_id for e in opened] == [-1, -2]
    assert links.state_of(2, "CONTROLLER", "quorum") is LinkState.CONNECTING
    assert links.state_of(2, "CONTROLLER") is LinkState.CONNECTING
    peer = Peer()
    links.connection_established(-2, 1)
    links.receive_data(-2, peer.feed(links.take_effects(), -2), 2)
    links.receive_data(-2, peer.feed(links.take_effects(), -2), 3)
    assert isinstance(replies.got[-1][0], DescribeClusterResponse)


def test_heartbeats_never_wait_behind_an_alter_partition_the_controller_holds() -> None:
    """Kafka's broker talks to its controller on one connection per channel manager: the
    lifecycle's (registration, heartbeats), AlterPartition's, and the rest's. A controller holds
    an AlterPartition until its records commit, and reads nothing more on that connection
    meanwhile; a heartbeat behind it would wait out the broker's session (seed 3789: a new
    controller whose quorum could not commit fenced both live brokers)."""
    links = PeerLinks(7, endpoint_of)
    links.send(Outbound(2, "CONTROLLER", AlterPartitionRequest(broker_id=7), lambda body, now: None), 0)
    links.send(Outbound(2, "CONTROLLER", BrokerHeartbeatRequest(broker_id=7), lambda body, now: None), 0)
    links.send(request(Replies()), 0)
    opened = [e.conn_id for e in links.take_effects() if isinstance(e, OpenConnection)]
    assert opened == [-1, -2, -3]
    assert links.state_of(2, "CONTROLLER", "alter-partition") is LinkState.CONNECTING
    assert links.state_of(2, "CONTROLLER", "heartbeat") is LinkState.CONNECTING
    assert links.state_of(2, "CONTROLLER") is LinkState.CONNECTING
    controller = Peer(controller_api_versions())  # the AlterPartition's connection (-1) is never read
    links.connection_established(-2, 1)
    links.receive_data(-2, controller.feed(links.take_effects(), -2), 2)
    controller.feed(links.take_effects(), -2)
    assert [type(r.body).__name__ for r in controller.requests] == [
        "ApiVersionsRequest",
        "BrokerHeartbeatRequest",
    ]
