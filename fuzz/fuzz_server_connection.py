"""Harness: a ServerConnection fed an untrusted client's bytes, in chunks, with and without SASL.

The scenario (``fuzz/conversation.py``) picks a server without SASL or one gated by SASL
(PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 offered; the selector only changes which seeds fit).
The server answers every request as an application would: ApiVersions with its version table,
anything else with the response class's defaults, unsupported requests with ``reject``. The
input's byte stream is fed in chunks of the input's chosen size, then EOF.

The rule: every call returns, or ``next_event`` raises ``RemoteProtocolError`` and the connection
is in ``ERROR`` (where the next call fails fast with ``LocalProtocolError``). A failed
authentication is an ``AuthenticationFailed`` event and the connection must close. Anything else
escaping is a finding, as is an event stream that goes on after EOF.

Run: ``python fuzz/fuzz_server_connection.py [corpus dir] [libFuzzer flags]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import Finding, MemorySampler, fuzz_main, instrumenting

#: What ``KAFKA_WIRE_FUZZ_INSTRUMENT=core`` instruments.
TARGETS = ("kafka_wire.protocol",)

with instrumenting(__name__ == "__main__", TARGETS):
    from fuzz.conversation import VERSIONS, check_failed, chunks, scenario, server_gate, unpack
    from kafka_wire.errors import RemoteProtocolError
    from kafka_wire.messages import RESPONSES, ApiVersionsRequest
    from kafka_wire.protocol import (
        NEED_DATA,
        PAUSED,
        AuthenticationFailed,
        ConnectionClosed,
        Request,
        ServerConfig,
        ServerConnection,
        ServerState,
        UnsupportedRequest,
        api_versions_response,
    )

_MAX_EVENTS = 10_000
_memory = MemorySampler()


def new_server(selector: int) -> ServerConnection:
    sasl = None if scenario(selector) is None else server_gate()
    return ServerConnection(ServerConfig(api_versions=VERSIONS), sasl=sasl)


def answer(server: ServerConnection, event: object) -> bytes:
    """Answer a request event as an application would; returns the bytes ready to write."""
    if isinstance(event, UnsupportedRequest):
        return server.reject(event)
    if isinstance(event, Request) and event.expects_response:
        body = (
            api_versions_response(server.api_versions)
            if isinstance(event.body, ApiVersionsRequest)
            else RESPONSES[event.api_key]()
        )
        return server.send(event.reply(body))
    return b""


def _drain(server: ServerConnection, budget: list[int]) -> bool:
    """Take and answer events until NEED_DATA; False once the connection is over."""
    while True:
        event = server.next_event()
        budget[0] -= 1
        if budget[0] < 0:
            raise Finding(f"more than {_MAX_EVENTS} events from one input")
        if event is NEED_DATA:
            return True
        if event is PAUSED:
            raise Finding("paused with every request answered")
        if isinstance(event, ConnectionClosed | AuthenticationFailed):
            return False
        answer(server, event)
        server.data_to_send()
        if server.must_close:
            return False


def run(stream: bytes, chunk: int, selector: int) -> ServerConnection:
    server = new_server(selector)
    budget = [_MAX_EVENTS]
    try:
        for piece in chunks(stream, chunk):
            server.receive_data(piece)
            if not _drain(server, budget):
                return server
        server.receive_eof()
        if _drain(server, budget):
            raise Finding("no ConnectionClosed after EOF")
    except RemoteProtocolError as exc:
        check_failed(server, ServerState.ERROR, exc)
    return server


def _check(data: bytes) -> None:
    run(*unpack(data))


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input)


if __name__ == "__main__":  # pragma: no cover
    main()
