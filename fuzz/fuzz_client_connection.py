"""Harness: a ClientConnection fed an untrusted broker's bytes, in chunks, SASL included.

The client negotiates versions (and authenticates with the scenario's SASL mechanism: none,
PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), sends three requests once it is ready (two Metadata requests and an
acks=0 Produce, each at the version ``version_for`` gives, skipped when there is none) and is fed the input's byte stream in chunks of the input's chosen size, then
EOF (layout: ``fuzz/conversation.py``).

The rule: every call returns, or raises a ``RemoteProtocolError`` or ``AuthenticationError``
(the peer's fault) and leaves the connection in ``ERROR``, where the next call fails fast with
``LocalProtocolError``. Anything else escaping (a ``DecodeError``, ``UnsupportedVersionError``,
``AssertionError``, ``ValueError``) is a finding, as is an event stream that goes on after EOF.

Run: ``python fuzz/fuzz_client_connection.py [corpus dir] [libFuzzer flags]``.
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
    from fuzz.conversation import check_failed, chunks, client_mechanism, client_requests, scenario, unpack
    from kafka_wire.errors import (
        AuthenticationError,
        RemoteProtocolError,
        UnsupportedVersionError,
    )
    from kafka_wire.protocol import NEED_DATA, ClientConfig, ClientConnection, ClientState, ConnectionClosed

#: Events a connection may hand out for one input; more means it loops.
_MAX_EVENTS = 10_000
_memory = MemorySampler()


def new_client(selector: int) -> ClientConnection:
    mechanism = scenario(selector)
    sasl = None if mechanism is None else client_mechanism(mechanism)
    return ClientConnection(ClientConfig(client_id="fuzz"), sasl=sasl)


def _drain(client: ClientConnection, budget: list[int], sent: list[bool]) -> bool:
    """Take events until NEED_DATA, sending the requests once the client is READY; False once the
    connection is closed."""
    while True:
        if not sent[0] and client.state is ClientState.READY:
            sent[0] = True
            for request in client_requests():
                assert request.API_KEY is not None
                try:
                    version = client.version_for(request.API_KEY)  # a question: no state change
                except UnsupportedVersionError:
                    continue  # the broker offers no version in common
                client.send(request, version)
        event = client.next_event()
        budget[0] -= 1
        if budget[0] < 0:
            raise Finding(f"more than {_MAX_EVENTS} events from one input")
        if event is NEED_DATA:
            return True
        if isinstance(event, ConnectionClosed):
            return False
        client.data_to_send()


def run(stream: bytes, chunk: int, selector: int) -> ClientConnection:
    client = new_client(selector)
    client.data_to_send()
    budget = [_MAX_EVENTS]
    sent = [False]
    try:
        for piece in chunks(stream, chunk):
            client.receive_data(piece)
            if not _drain(client, budget, sent):
                return client
        client.receive_eof()
        if _drain(client, budget, sent):
            raise Finding("no ConnectionClosed after EOF")
    except (RemoteProtocolError, AuthenticationError) as exc:
        check_failed(client, ClientState.ERROR, exc)
    return client


def _check(data: bytes) -> None:
    run(*unpack(data))


def fuzz_one_input(data: bytes) -> None:
    _memory.run(_check, data)


def main() -> None:  # pragma: no cover - runs atheris
    fuzz_main(fuzz_one_input)


if __name__ == "__main__":  # pragma: no cover
    main()
