"""h11's discipline: any exception inside a connection moves it to ERROR and propagates.

Each scripted conversation (client and server, with and without SASL) is run once per
transition of the connection under test, with an exception injected at that transition (every
``move`` and ``target`` of its state machine), and once per SASL mechanism call. Each time the
exception reaches the caller, the connection is in ERROR, and every later call raises: never
``NEED_DATA``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataResponse
from kafka_wire.protocol import (
    NEED_DATA,
    ClientConfig,
    ClientConnection,
    ClientState,
    Request,
    ServerConfig,
    ServerConnection,
    ServerSasl,
    ServerState,
    api_versions_response,
)
from kafka_wire.protocol.events import PAUSED
from kafka_wire.protocol.machine import StateMachine
from kafka_wire.protocol.sasl import PlainClient, PlainServer, ScramClient, ScramCredential, ScramServer

CREDENTIAL = ScramCredential.from_password("SCRAM-SHA-256", "secret", b"salt" * 8, 4096)


class Injected(Exception):
    """The exception planted inside a connection."""


def _pair(mechanism: str | None) -> tuple[ClientConnection, ServerConnection]:
    if mechanism is None:
        return ClientConnection(ClientConfig()), ServerConnection(ServerConfig())
    if mechanism == "PLAIN":
        client = ClientConnection(sasl=PlainClient("alice", "secret"))
        sasl = ServerSasl(
            mechanisms={"PLAIN": lambda: PlainServer(lambda user, password: password == "secret")}
        )
    else:
        client = ClientConnection(sasl=ScramClient("SCRAM-SHA-256", "alice", "secret", "client-nonce"))
        sasl = ServerSasl(
            mechanisms={
                "SCRAM-SHA-256": lambda: ScramServer(
                    "SCRAM-SHA-256", {"alice": CREDENTIAL}.get, "server-nonce"
                )
            }
        )
    return client, ServerConnection(ServerConfig(), sasl=sasl)


def _pump(client: ClientConnection, server: ServerConnection, data: bytes = b"") -> None:
    """Carry bytes both ways, the server answering ApiVersions and Metadata, until both are quiet."""
    data += client.data_to_send()
    for _ in range(8):
        server.receive_data(data)
        answers = b""
        while (event := server.next_event()) is not NEED_DATA and event is not PAUSED:
            if isinstance(event, Request):
                body = (
                    api_versions_response(server.api_versions)
                    if event.api_key == ApiKey.API_VERSIONS
                    else MetadataResponse()
                )
                answers += server.send(event.reply(body))
        client.receive_data(answers + server.data_to_send())
        while client.next_event() is not NEED_DATA:
            pass
        data = client.data_to_send()


def _converse(client: ClientConnection, server: ServerConnection) -> None:
    """Negotiate (and authenticate), two requests, then both sides see the other close."""
    _pump(client, server)
    assert client.state is ClientState.READY and server.state is ServerState.READY
    _pump(client, server, client.send(MetadataRequest()) + client.send(MetadataRequest(topics=[])))
    server.receive_eof()
    server.next_event()
    client.receive_eof()
    client.next_event()
    client.close()
    server.close()


@contextmanager
def _inject(machine: str, at: int | None) -> Iterator[list[int]]:
    """Raise :class:`Injected` at call ``at`` of ``move``/``target`` on the machine named ``machine``
    (None: only count); yields the count so far."""
    count = [0]
    originals = {name: getattr(StateMachine, name) for name in ("move", "target")}

    def wrap(name: str) -> Callable[..., enum.Enum]:
        def wrapper(self: StateMachine[Any, Any], move: enum.Enum, *args: Any) -> enum.Enum:
            if self.name == machine:
                count[0] += 1
                if count[0] - 1 == at:
                    raise Injected(f"{name}({move.value}) in {self.state.name}")
            result: enum.Enum = originals[name](self, move, *args)
            return result

        return wrapper

    with pytest.MonkeyPatch.context() as patch:
        for name in originals:
            patch.setattr(StateMachine, name, wrap(name))
        yield count


def _assert_failed_for_good(conn: ClientConnection | ServerConnection) -> None:
    assert conn.state.name == "ERROR"
    for call in (conn.next_event, lambda: conn.receive_data(b"\x00"), lambda: conn.handle_timer(10**9)):
        with pytest.raises(LocalProtocolError, match="in state ERROR"):
            call()  # raises: never NEED_DATA


MECHANISMS = [None, "PLAIN", "SCRAM-SHA-256"]


@pytest.mark.parametrize("side", ["client connection", "server connection"])
@pytest.mark.parametrize("mechanism", MECHANISMS, ids=str)
def test_an_exception_at_any_transition_moves_to_error_and_propagates(
    side: str, mechanism: str | None
) -> None:
    with _inject(side, None) as count:
        _converse(*_pair(mechanism))
    transitions = count[0]
    assert transitions >= 10
    for at in range(transitions):
        client, server = _pair(mechanism) if side == "server connection" else (None, None)
        with _inject(side, at):
            if client is None or server is None:  # the client's first transitions run in its constructor
                try:
                    client, server = _pair(mechanism)
                except Injected:
                    continue
            with pytest.raises(Injected):
                _converse(client, server)
        _assert_failed_for_good(client if side == "client connection" else server)


MECHANISM_CALLS: list[tuple[str, type, str]] = [
    ("PLAIN", PlainClient, "initial_response"),
    ("PLAIN", PlainClient, "step"),
    ("PLAIN", PlainServer, "step"),
    ("SCRAM-SHA-256", ScramClient, "initial_response"),
    ("SCRAM-SHA-256", ScramClient, "step"),
    ("SCRAM-SHA-256", ScramServer, "step"),
]


@pytest.mark.parametrize(
    ("mechanism", "cls", "method"), MECHANISM_CALLS, ids=lambda x: getattr(x, "__name__", str(x))
)
@pytest.mark.parametrize("call", [0, 1])
def test_an_exception_from_a_sasl_mechanism_moves_its_connection_to_error(
    mechanism: str, cls: type, method: str, call: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = getattr(cls, method)
    calls = [0]

    def failing(self: object, *args: object) -> object:
        calls[0] += 1
        if calls[0] - 1 == call:
            raise Injected(f"{cls.__name__}.{method}")
        return original(self, *args)

    monkeypatch.setattr(cls, method, failing)
    client, server = _pair(mechanism)
    try:
        _converse(client, server)
    except Injected:
        _assert_failed_for_good(server if cls in (PlainServer, ScramServer) else client)
    else:  # the mechanism is called fewer times than that
        assert calls[0] <= call


def test_an_exception_from_the_transition_logger_moves_to_error() -> None:
    def logger(transition: object) -> None:
        raise Injected(str(transition))

    client = ClientConnection(ClientConfig(negotiate=False), logger=logger)
    with pytest.raises(Injected, match="READY -> CLOSED on close"):
        client.close()
    _assert_failed_for_good(client)


@pytest.mark.parametrize("side", ["client", "server"])
def test_send_failed_moves_to_error(side: str) -> None:
    conn: ClientConnection | ServerConnection = (
        ClientConnection(ClientConfig(negotiate=False)) if side == "client" else ServerConnection()
    )
    conn.send_failed()
    _assert_failed_for_good(conn)
    with pytest.raises(LocalProtocolError, match="in state ERROR") as info:
        conn.next_event()
    assert isinstance(info.value.__cause__, LocalProtocolError) and "a write failed" in str(
        info.value.__cause__
    )
