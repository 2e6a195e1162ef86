"""The proxy pair, Sans-IO: a real ClientConnection as the client, the pair, and a real
ServerConnection as the broker, bytes moved by hand.

Covered: frames relayed untouched but for the correlation id, ids mapped both ways, ApiVersions
as the intersection, addresses rewritten (and new brokers given ports), input in any chunking,
bad input from either side closing only that pair, filters (answer, delay, async, raising), the
in-flight bound, and every (state, input) pair of the table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.codec.structs import Message
from kafka_wire.errors import AuthenticationError, LocalProtocolError
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchResponseNodeEndpoint,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    RequestHeader,
)
from kafka_wire.protocol import (
    NEED_DATA,
    Authenticated,
    AuthenticationFailed,
    ClientConfig,
    ClientConnection,
    ConnectionClosed,
    Request,
    Response,
    ServerConfig,
    ServerConnection,
    ServerSasl,
    UnsupportedRequest,
    VersionsNegotiated,
    api_versions_response,
)
from kafka_wire.protocol.framing import decode_response, encode_request
from kafka_wire.protocol.machine import StateMachine
from kafka_wire.protocol.sasl import PlainClient, PlainServer
from kafka_wire.proxy import (
    FORWARD,
    PAIR_TRANSITIONS,
    Answer,
    Await,
    Call,
    Close,
    Delay,
    Filter,
    LogLine,
    Outcome,
    PairInput,
    PairState,
    Proxy,
    ProxyConfig,
    ProxyPair,
)
from kafka_wire.records import build_batch
from tests.protocol.chunking import CHUNKINGS, split

BROKERS = [
    MetadataResponseBroker(node_id=1, host="b1", port=9092),
    MetadataResponseBroker(node_id=2, host="b2", port=9093),
]
Handler = Callable[[Request], Message | None]


def default_handler(request: Request) -> Message | None:
    body = request.body
    if isinstance(body, MetadataRequest):
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port) for b in BROKERS]
        )
    if isinstance(body, ProduceRequest):
        return ProduceResponse()
    if isinstance(body, FindCoordinatorRequest):
        if request.api_version >= 4:
            return FindCoordinatorResponse(
                coordinators=[
                    FindCoordinatorResponseCoordinator(key=k, node_id=2, host="b2", port=9093)
                    for k in body.coordinator_keys
                ]
            )
        return FindCoordinatorResponse(node_id=2, host="b2", port=9093)
    if isinstance(body, FetchRequest):
        return FetchResponse(node_endpoints=[FetchResponseNodeEndpoint(node_id=3, host="b3", port=9094)])
    raise AssertionError(f"unexpected {body!r}")


class Rig:
    """A client, a pair and a broker; ``pump`` moves bytes until nothing moves."""

    def __init__(
        self,
        filters: list[Filter] | None = None,
        *,
        broker_versions: Mapping[int, tuple[int, int]] | None = None,
        handler: Handler = default_handler,
        chunking: str = "whole",
        config: ProxyConfig | None = None,
        first_correlation_id: int = 7000,
        broker_sasl: ServerSasl | None = None,
        client_sasl: PlainClient | None = None,
    ) -> None:
        self.proxy = Proxy(
            [("b1", 9092, 19092)],
            filters or [],
            config or ProxyConfig(),
            allocate=iter(range(20000, 20100)).__next__,
        )
        self.pair = self.proxy.open(19092, "test-client", 0)
        self.client = ClientConnection(
            ClientConfig(client_id="app", first_correlation_id=first_correlation_id), sasl=client_sasl
        )
        self.broker = ServerConnection(ServerConfig(api_versions=broker_versions), sasl=broker_sasl)
        self.broker_versions = broker_versions
        self.handler = handler
        self.chunking = chunking
        self.now_ms = 0
        #: Frames the broker received, as received.
        self.broker_frames: list[Request] = []
        self.upstream_bytes = bytearray()
        self.client_events: list[object] = []
        self.effects: list[object] = []
        self.pending = bytearray()
        self.broker_events: list[Authenticated | AuthenticationFailed] = []

    def pump(self) -> None:
        moved = True
        while moved and not self.pair.must_close:
            moved = False
            self.pending += self.client.data_to_send()
            data, self.pending = bytes(self.pending), bytearray()
            for chunk in split(data, self.chunking) if data else []:
                if chunk:
                    moved = True
                    self.pair.receive_client(chunk, now_ms=self.now_ms)
            out = self.pair.upstream_data_to_send()
            if out:
                moved = True
                self.upstream_bytes += out
                self.broker.receive_data(out)
            while (event := self.broker.next_event()) is not NEED_DATA:
                if isinstance(event, Authenticated | AuthenticationFailed):
                    self.broker_events.append(event)
                    continue
                if isinstance(event, ConnectionClosed):  # the broker gave up (a refused login)
                    break
                reply_now = self.broker.data_to_send()  # SASL answers the connection made itself
                if reply_now:
                    moved = True
                    self.pair.receive_upstream(reply_now, now_ms=self.now_ms)
                if isinstance(event, UnsupportedRequest):  # an ApiVersions newer than the broker's
                    reply = self.broker.reject(event)
                    self.pair.receive_upstream(reply, now_ms=self.now_ms)
                    moved = True
                    continue
                assert isinstance(event, Request), event
                self.broker_frames.append(event)
                if event.api_key == ApiKey.API_VERSIONS:
                    versions = self.broker_versions or self.broker.api_versions
                    reply = self.broker.send(event.reply(api_versions_response(versions)))
                else:
                    body = self.handler(event) if event.expects_response else None
                    reply = self.broker.send(event.reply(body)) if body is not None else b""
                for chunk in split(reply, self.chunking) if reply else []:
                    moved = True
                    self.pair.receive_upstream(chunk, now_ms=self.now_ms)
            reply_now = self.broker.data_to_send()
            if reply_now:
                moved = True
                self.pair.receive_upstream(reply_now, now_ms=self.now_ms)
            out = self.pair.client_data_to_send()
            if out:
                moved = True
                self.client.receive_data(out)
            while (answer := self.client.next_event()) is not NEED_DATA:
                self.client_events.append(answer)
            self.effects += self.pair.take_effects()

    def ready(self) -> VersionsNegotiated:
        self.pump()
        negotiated = [e for e in self.client_events if isinstance(e, VersionsNegotiated)]
        assert negotiated, self.client_events
        return negotiated[0]

    def send(self, body: Message, version: int | None = None) -> bytes:
        """Send a request from the client; its frame reaches the pair at the next ``pump``."""
        frame = self.client.send(body, version)
        self.pending += frame
        return frame

    def ask(self, body: Message, version: int | None = None) -> Response:
        before = len(self.client_events)
        self.send(body, version)
        self.pump()
        responses = [e for e in self.client_events[before:] if isinstance(e, Response)]
        assert len(responses) == 1, (self.client_events[before:], self.effects)
        return responses[0]


def _produce(acks: int = -1) -> ProduceRequest:
    records = build_batch([(b"k", b"v" * 100, [], 1)], compression="gzip")
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="t", partition_data=[ProduceRequestPartitionProduceData(index=0, records=records)]
            )
        ],
    )


@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_frames_pass_untouched_but_for_the_correlation_id(chunking: str) -> None:
    rig = Rig(chunking=chunking)
    rig.ready()
    request = _produce()
    version = rig.client.version_for(ApiKey.PRODUCE)
    sent = rig.send(request, version)  # the client's frame, as the proxy receives it
    rig.pump()
    relayed = bytes(rig.upstream_bytes)[-len(sent) :]
    assert relayed[:8] == sent[:8] and relayed[12:] == sent[12:]  # size, key, version | header rest, body
    assert relayed[8:12] != sent[8:12]  # the upstream connection's own correlation id
    response = [e for e in rig.client_events if isinstance(e, Response)][-1]
    assert response.correlation_id == 7001  # the client's id came back (7000 was its ApiVersions)
    assert rig.broker_frames[-1].header.client_id == "app"  # the client's id, not the proxy's


def test_correlation_ids_are_mapped_for_pipelined_requests() -> None:
    rig = Rig()
    rig.ready()
    for _ in range(5):
        rig.send(MetadataRequest(topics=None))
    rig.pump()
    ids = [e.correlation_id for e in rig.client_events if isinstance(e, Response)]
    assert ids == [7001, 7002, 7003, 7004, 7005]
    assert [r.correlation_id for r in rig.broker_frames] == [0, 1, 2, 3, 4, 5]  # 0: the proxy's ApiVersions


def test_answers_made_here_wait_for_earlier_upstream_answers() -> None:
    """A client may reuse a correlation id within one pipeline (the network fuzzer does): an
    ApiVersions answered by the pair must not overtake the upstream's answer to the request before
    it, or the client takes one answer for the other."""
    rig = Rig()
    rig.ready()
    same = 4242
    frames = [
        encode_request(
            RequestHeader(request_api_key=ApiKey.METADATA, correlation_id=same), MetadataRequest(), 1
        ),
        encode_request(
            RequestHeader(request_api_key=ApiKey.API_VERSIONS, correlation_id=same), ApiVersionsRequest(), 0
        ),
    ]
    rig.pair.receive_client(b"".join(frames), now_ms=0)
    assert rig.pair.client_data_to_send() == b""  # the ApiVersions answer waits for the Metadata one
    rig.broker.receive_data(rig.pair.upstream_data_to_send())
    request = rig.broker.next_event()
    assert isinstance(request, Request) and isinstance(request.body, MetadataRequest)
    rig.pair.receive_upstream(rig.broker.send(request.reply(MetadataResponse(brokers=[]))), now_ms=0)
    answers = rig.pair.client_data_to_send()
    first_size = int.from_bytes(answers[:4], "big")
    first, second = answers[: 4 + first_size], answers[4 + first_size :]
    _, metadata = decode_response(first, ApiKey.METADATA, 1)
    _, versions = decode_response(second, ApiKey.API_VERSIONS, 0)
    assert isinstance(metadata, MetadataResponse) and isinstance(versions, ApiVersionsResponse)
    assert versions.api_keys


class _Limited(Filter):
    request_keys = frozenset({ApiKey.FETCH})

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return {ApiKey.FETCH: (4, 11)}


def test_api_versions_is_the_intersection_of_filters_codec_and_upstream() -> None:
    broker: dict[int, tuple[int, int]] = {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 16),
        ApiKey.METADATA: (0, 12),
        ApiKey.SASL_HANDSHAKE: (0, 1),
    }
    rig = Rig([_Limited()], broker_versions=broker)
    offered = {k.api_key: (k.min_version, k.max_version) for k in rig.ready().response.api_keys}
    assert offered == {
        ApiKey.API_VERSIONS: (0, 3),
        ApiKey.PRODUCE: (3, 9),
        ApiKey.FETCH: (4, 11),
        ApiKey.METADATA: (0, 12),
        ApiKey.SASL_HANDSHAKE: (1, 1),  # v0's raw tokens are not frames: never offered
    }


def test_addresses_are_rewritten_and_new_brokers_get_ports() -> None:
    rig = Rig()
    rig.ready()
    metadata = rig.ask(MetadataRequest(topics=None)).body
    assert isinstance(metadata, MetadataResponse)
    assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [
        (1, "127.0.0.1", 19092),
        (2, "127.0.0.1", 20000),
    ]
    coordinator = rig.ask(FindCoordinatorRequest(key="g"), 3).body
    assert isinstance(coordinator, FindCoordinatorResponse)
    assert (coordinator.host, coordinator.port) == ("127.0.0.1", 20000)
    coordinators = rig.ask(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4).body
    assert isinstance(coordinators, FindCoordinatorResponse)
    assert [(c.host, c.port) for c in coordinators.coordinators] == [("127.0.0.1", 20000)]
    fetched = rig.ask(FetchRequest(max_wait_ms=0), 16).body
    assert isinstance(fetched, FetchResponse)
    assert [(e.node_id, e.host, e.port) for e in fetched.node_endpoints] == [(3, "127.0.0.1", 20001)]
    routes = {(r.upstream_host, r.upstream_port): r.port for r in rig.proxy.book.routes}
    assert routes == {("b1", 9092): 19092, ("b2", 9093): 20000, ("b3", 9094): 20001}
    assert [r.port for r in rig.proxy.book.take_new()] == [19092, 20000, 20001]


def test_acks_zero_produce_is_relayed_and_not_awaited() -> None:
    rig = Rig()
    rig.ready()
    rig.send(_produce(acks=0))
    rig.pump()
    assert isinstance(rig.broker_frames[-1].body, ProduceRequest)
    assert rig.broker.responses_owed == 0
    assert rig.ask(MetadataRequest(topics=[])).correlation_id == 7002  # the pair goes on


def test_sasl_passes_through_to_the_broker() -> None:
    """The broker authenticates the client: SaslHandshake and SaslAuthenticate cross the proxy
    untouched, and the client's requests flow once the broker said yes."""
    gate = ServerSasl(
        mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: (user, password) == ("u", "p"))}
    )
    rig = Rig(broker_sasl=gate, client_sasl=PlainClient("u", "p"))
    rig.pump()
    assert any(isinstance(e, Authenticated) for e in rig.client_events), rig.client_events
    assert [e.principal for e in rig.broker_events if isinstance(e, Authenticated)] == ["u"]
    assert rig.ask(MetadataRequest(topics=[])).correlation_id > 7000


def test_a_refused_password_reaches_the_client() -> None:
    gate = ServerSasl(mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: False)})
    rig = Rig(broker_sasl=gate, client_sasl=PlainClient("u", "wrong"))
    with pytest.raises(AuthenticationError):
        rig.pump()


# -- bad input ----------------------------------------------------------------------------------


def test_garbage_from_the_client_closes_its_pair_only() -> None:
    rig, other = Rig(), Rig()
    rig.ready()
    other.ready()
    rig.pair.receive_client(b"\xff\xff\xff\xff garbage", now_ms=1)
    assert rig.pair.must_close and rig.pair.state is PairState.ERROR
    assert any(isinstance(e, LogLine) and e.level == logging.WARNING for e in rig.pair.take_effects())
    rig.pair.receive_client(b"more", now_ms=2)  # late input is dropped, never raises
    assert other.ask(MetadataRequest(topics=[])).correlation_id == 7001


def test_an_upstream_that_closes_mid_frame_closes_the_pair() -> None:
    rig = Rig()
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    rig.pair.receive_upstream(b"\x00\x00\x00\x10\x00\x00", now_ms=1)
    rig.pair.upstream_eof(now_ms=1)
    assert rig.pair.must_close


def test_an_upstream_that_closes_between_frames_closes_the_pair() -> None:
    rig = Rig()
    rig.ready()
    rig.pair.upstream_eof(now_ms=1)
    assert rig.pair.must_close and rig.pair.state is PairState.CLOSED
    assert "upstream closed" in rig.pair.close_reason


def test_a_stalled_upstream_is_given_up_on_after_the_connect_timeout() -> None:
    rig = Rig(config=ProxyConfig(connect_timeout_ms=1000))
    rig.pair.receive_client(rig.client.data_to_send(), now_ms=0)
    assert rig.pair.next_deadline_ms() == 1000
    rig.pair.handle_timer(1000)
    assert rig.pair.must_close


def test_the_client_side_is_bounded_while_the_chain_is_parked() -> None:
    rig = Rig([_Parking()], config=ProxyConfig(max_queued_requests=3))
    rig.ready()
    for _ in range(5):
        rig.send(MetadataRequest(topics=[]))
    rig.pump()
    assert not rig.pair.wants_client_data  # three requests in the chain: the adapter stops reading
    assert len([e for e in rig.effects if isinstance(e, Await)]) == 1  # the head is parked


# -- filters ------------------------------------------------------------------------------------


class _Answering(Filter):
    request_keys = frozenset({ApiKey.METADATA})

    def on_request(self, call: Call) -> Outcome:
        return Answer(MetadataResponse(cluster_id="from-the-proxy"))


class _Delaying(Filter):
    request_keys = frozenset({ApiKey.METADATA})

    def on_request(self, call: Call) -> Outcome:
        return Delay(50)


class _Raising(Filter):
    request_keys = frozenset({ApiKey.METADATA})

    def on_request(self, call: Call) -> Outcome:
        raise RuntimeError("a bug in a filter")


class _Parking(Filter):
    """An async filter: every request waits for a coroutine the test resumes by hand."""

    request_keys = frozenset({ApiKey.METADATA})

    def on_request(self, call: Call) -> Outcome:
        async def decide() -> Close:
            return Close("never run here")

        coroutine: Coroutine[Any, Any, Close] = decide()
        coroutine.close()  # the test resumes the pair itself
        return coroutine


class _Closing(Filter):
    response_keys = frozenset({ApiKey.METADATA})

    def on_response(self, call: Call) -> Outcome:
        return Close("no metadata for you")


def test_a_filter_answers_and_the_upstream_never_sees_the_request() -> None:
    rig = Rig([_Answering()])
    rig.ready()
    response = rig.ask(MetadataRequest(topics=[]))
    assert isinstance(response.body, MetadataResponse) and response.body.cluster_id == "from-the-proxy"
    assert [r.api_key for r in rig.broker_frames] == [ApiKey.API_VERSIONS]


def test_a_delay_holds_the_request_until_its_timer() -> None:
    rig = Rig([_Delaying()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    assert len(rig.broker_frames) == 1 and rig.pair.next_deadline_ms() == 50
    rig.now_ms = 50
    rig.pair.handle_timer(50)
    rig.pump()
    assert isinstance(rig.broker_frames[-1].body, MetadataRequest)
    assert isinstance(rig.client_events[-1], Response)


def test_an_async_filter_parks_the_chain_in_order_until_resumed() -> None:
    rig = Rig([_Parking()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.send(MetadataRequest(topics=None))
    rig.pump()
    awaits = [e for e in rig.effects if isinstance(e, Await)]
    assert len(awaits) == 1 and len(rig.broker_frames) == 1  # the second waits behind the first
    rig.pair.resume(awaits[0].token, FORWARD, now_ms=1)
    rig.pump()
    second = [e for e in rig.effects if isinstance(e, Await)][1]
    rig.pair.resume(second.token, FORWARD, now_ms=2)
    rig.pump()
    assert [r.body.topics for r in rig.broker_frames[1:]] == [[], None]  # type: ignore[attr-defined]
    assert [e.correlation_id for e in rig.client_events if isinstance(e, Response)] == [7001, 7002]


def test_an_async_filter_that_fails_closes_its_connection() -> None:
    rig = Rig([_Parking()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    token = next(e for e in rig.effects if isinstance(e, Await)).token
    rig.pair.resume(token, TimeoutError("the key service did not answer"), now_ms=1)
    assert rig.pair.must_close


def test_a_filter_that_raises_closes_its_connection_with_a_log_line() -> None:
    rig = Rig([_Raising()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    assert rig.pair.must_close
    lines = [e for e in rig.effects if isinstance(e, LogLine) and e.level == logging.ERROR]
    assert lines and "a bug in a filter" in lines[0].message


def test_a_filter_closes_on_a_response() -> None:
    rig = Rig([_Closing()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    assert rig.pair.must_close and "no metadata for you" in rig.pair.close_reason


# -- the table ----------------------------------------------------------------------------------


def _pairs() -> Iterator[tuple[PairState, PairInput]]:
    for state in PairState:
        for move in PairInput:
            yield state, move


@pytest.mark.parametrize(("state", "move"), list(_pairs()))
def test_every_state_and_input(state: PairState, move: PairInput) -> None:
    machine = StateMachine("pair", PAIR_TRANSITIONS, state, error=PairState.ERROR)
    target = PAIR_TRANSITIONS.get((state, move))
    if target is None:
        with pytest.raises(LocalProtocolError):
            machine.move(move)
        assert machine.state is PairState.ERROR
    else:
        assert machine.move(move) is target


def test_async_filters_run_on_asyncio_too() -> None:
    """The outcome of an ``async def`` filter is an awaitable the adapter can run."""

    class Slow(Filter):
        request_keys = frozenset({ApiKey.METADATA})

        async def on_request(self, call: Call) -> Close:
            await asyncio.sleep(0)
            return Close("done")

    rig = Rig([Slow()])
    rig.ready()
    rig.send(MetadataRequest(topics=[]))
    rig.pump()
    effect = next(e for e in rig.effects if isinstance(e, Await))
    verdict = asyncio.run(_run(effect.awaitable))
    rig.pair.resume(effect.token, verdict, now_ms=1)
    assert rig.pair.must_close and "done" in rig.pair.close_reason


async def _run(awaitable: Any) -> Any:
    return await awaitable


def test_error_codes_from_the_upstream_are_data() -> None:
    def refuse(request: Request) -> Message | None:
        return MetadataResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    rig = Rig(handler=refuse)
    rig.ready()
    body = rig.ask(MetadataRequest(topics=[])).body
    assert isinstance(body, MetadataResponse) and body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert not rig.pair.must_close


def test_a_pair_on_an_unknown_port_is_refused() -> None:
    proxy = Proxy([("b1", 9092, 19092)])
    with pytest.raises(LocalProtocolError):
        proxy.open(1, "c", 0)


def test_pair_type() -> None:
    assert isinstance(Rig().pair, ProxyPair)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_no_input_escapes_the_pair(data: bytes, from_client: bool) -> None:
    """Whatever bytes either side sends, the pair takes them: it goes on or closes, never raises."""
    rig = Rig()
    rig.ready()
    if from_client:
        rig.pair.receive_client(data, now_ms=1)
    else:
        rig.pair.receive_upstream(data, now_ms=1)
    rig.pair.client_eof(now_ms=2)
    assert rig.pair.must_close
