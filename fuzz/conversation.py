"""The cast of the connection harnesses: SASL credentials and mechanisms, the requests a client
sends, how an input is split into a scenario and chunks. Shared by the harnesses and by
``fuzz/corpus.py``, which records real conversations as seeds.

Input layout (libFuzzer's ``FuzzedDataProvider`` convention: integers from the end, bytes from
the front): the last byte picks the scenario, the byte before it the chunk size (0: the whole
stream at once), and the bytes before those are the peer's byte stream. :func:`pack` builds an
input from those three parts and :func:`unpack` takes one apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Final

import atheris  # type: ignore[import-untyped]  # ships no annotations

from fuzz.common import Finding
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, MetadataRequest, MetadataRequestTopic, ProduceRequest
from kafka_wire.protocol import ClientConnection, ServerConnection, ServerSasl
from kafka_wire.protocol.sasl import PlainClient, PlainServer, ScramClient, ScramCredential, ScramServer
from kafka_wire.protocol.sasl.base import SaslClientMechanism

USER: Final = "alice"
PASSWORD: Final = "alice-secret"
#: Scenarios: which SASL mechanism the client uses and the server offers (None: no SASL).
SCENARIOS: Final = (None, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: A server's version table: enough APIs for the client's requests and the SASL exchange.
VERSIONS: Final[dict[int, tuple[int, int]]] = {
    ApiKey.PRODUCE: (3, 12),
    ApiKey.METADATA: (0, 13),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}
_SCRAM_ITERATIONS: Final = 4096
_CREDENTIALS: Final = {
    mechanism: ScramCredential.from_password(
        mechanism, PASSWORD, hashlib.sha256(mechanism.encode()).digest(), _SCRAM_ITERATIONS
    )
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
}


def scenario(selector: int) -> str | None:
    return SCENARIOS[selector % len(SCENARIOS)]


def client_mechanism(name: str) -> SaslClientMechanism:
    if name == "PLAIN":
        return PlainClient(USER, PASSWORD)
    return ScramClient(name, USER, PASSWORD, "client-nonce")


def server_gate() -> ServerSasl:
    """Every mechanism, with alice's credentials; nonces are fixed (the core draws no randomness)."""

    def lookup(mechanism: str) -> Callable[[str], ScramCredential | None]:
        return lambda user: _CREDENTIALS[mechanism] if user == USER else None

    return ServerSasl(
        mechanisms={
            "PLAIN": lambda: PlainServer(lambda user, password: (user, password) == (USER, PASSWORD)),
            "SCRAM-SHA-256": lambda: ScramServer("SCRAM-SHA-256", lookup("SCRAM-SHA-256"), "server-nonce"),
            "SCRAM-SHA-512": lambda: ScramServer("SCRAM-SHA-512", lookup("SCRAM-SHA-512"), "server-nonce"),
        }
    )


def client_requests() -> list[MetadataRequest | ProduceRequest]:
    """What the harness's client sends once it is ready: a Metadata request (no topics), a
    Produce with acks=0 (no response expected) and a Metadata request for topic ``t``; each is
    valid at every version (a null topic list is not: Metadata v0 has no nullable topics)."""
    return [
        MetadataRequest(topics=[]),
        ProduceRequest(acks=0, timeout_ms=1000),
        MetadataRequest(topics=[MetadataRequestTopic(name="t")]),
    ]


def pack(stream: bytes, chunk: int, selector: int) -> bytes:
    """An input whose :func:`unpack` gives ``(stream, chunk, selector)``."""
    return stream + bytes([chunk, selector])


def unpack(data: bytes) -> tuple[bytes, int, int]:
    """``(stream, chunk size, scenario selector)`` from an input (see the module docstring)."""
    fdp = atheris.FuzzedDataProvider(data)
    selector = fdp.ConsumeIntInRange(0, 255)
    chunk = fdp.ConsumeIntInRange(0, 255)
    return fdp.ConsumeBytes(fdp.remaining_bytes()), chunk, selector


def chunks(stream: bytes, size: int) -> Iterator[bytes]:
    """``stream`` in pieces of ``size`` bytes (0: whole)."""
    if size == 0:
        yield stream
        return
    for start in range(0, len(stream), size):
        yield stream[start : start + size]


def check_failed(conn: ClientConnection | ServerConnection, error_state: object, exc: Exception) -> None:
    """A connection that raised a protocol error must be in its ``ERROR`` state and refuse to go on."""
    what = type(conn).__name__
    if conn.state is not error_state:
        raise Finding(f"{type(exc).__name__} left the {what} in {conn.state}") from exc
    try:
        conn.next_event()
    except LocalProtocolError:
        return
    raise Finding(f"a failed {what} went on handing out events") from exc
