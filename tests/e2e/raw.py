"""Bad input for a broker, over raw sockets: send one thing, report what came back.

Each probe opens its own connection, sends its bytes, and reads until the broker closes the
connection, a whole response frame has arrived, or ``timeout_s`` passes; the :class:`Outcome` says
which, with the bytes received (and, for the probes that expect a Kafka answer, the decoded
response). :func:`serves` checks afterwards that the broker still answers ApiVersions on a fresh
connection.

Requests are encoded with kafka_wire's own codec where the version is one it knows; the bad ones
(ApiVersions v99, Metadata past the broker's maximum) are written by hand. Run
``python -m tests.e2e.raw HOST:PORT`` to print every probe's outcome against a broker.
"""

from __future__ import annotations

import argparse
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError
from kafka_wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    RequestHeader,
)
from kafka_wire.protocol.framing import decode_response, encode_request

API_VERSIONS: Final = 18
METADATA: Final = 3
#: How long a probe waits for a reply (or a close) before calling it a timeout.
PROBE_TIMEOUT_S: Final = 2.0
CLIENT_ID: Final = "kw-raw"
UNKNOWN_TOPIC: Final = "kw-raw-no-such-topic"

Address = tuple[str, int]


@dataclass
class Outcome:
    """What one probe got back."""

    probe: str
    sent: bytes
    reply: bytes = b""
    #: The broker closed the connection (EOF or reset) before the reply was complete or the timeout.
    closed: bool = False
    reset: bool = False
    timed_out: bool = False
    #: The decoded response, for probes that expect one and got a whole frame.
    response: Message | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def whole_frame(self) -> bool:
        return _frame_complete(self.reply)

    def describe(self) -> str:
        how = (
            "reset" if self.reset else "closed" if self.closed else "timed out" if self.timed_out else "open"
        )
        reply = self.reply[:48].hex() + ("..." if len(self.reply) > 48 else "")
        extra = f"; {'; '.join(self.notes)}" if self.notes else ""
        return f"{self.probe}: sent {len(self.sent)} bytes; got {len(self.reply)} bytes [{reply}]; then {how}{extra}"


def _frame_complete(data: bytes) -> bool:
    return len(data) >= 4 and len(data) - 4 >= struct.unpack_from(">i", data)[0]


def exchange(
    address: Address,
    payload: bytes,
    *,
    probe: str,
    half_close: bool = False,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> Outcome:
    """Send ``payload`` (then shut down our sending side if ``half_close``) and read until close,
    a whole frame, or the timeout."""
    outcome = Outcome(probe, payload)
    with socket.create_connection(address, timeout=timeout_s) as sock:
        try:
            sock.sendall(payload)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            outcome.closed = outcome.reset = True
            return outcome
        deadline = time.monotonic() + timeout_s
        while not _frame_complete(outcome.reply):
            left = deadline - time.monotonic()
            if left <= 0:
                outcome.timed_out = True
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                outcome.timed_out = True
                break
            except ConnectionResetError:
                outcome.closed = outcome.reset = True
                break
            if not chunk:
                outcome.closed = True
                break
            outcome.reply += chunk
    return outcome


def _header(api_key: int, version: int, correlation_id: int, *, flexible: bool) -> bytes:
    client_id = CLIENT_ID.encode()
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    return header + (b"\x00" if flexible else b"")  # no tagged fields


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def api_versions_request(version: int = 0, correlation_id: int = 1) -> bytes:
    return encode_request(
        RequestHeader(correlation_id=correlation_id, client_id=CLIENT_ID), ApiVersionsRequest(), version
    )


def broker_api_versions(address: Address) -> dict[int, tuple[int, int]]:
    """The broker's ApiVersions v0 answer: api key -> (min, max)."""
    outcome = exchange(address, api_versions_request(), probe="api_versions_v0")
    if not outcome.whole_frame:
        raise RuntimeError(f"no ApiVersions answer: {outcome.describe()}")
    _, body = decode_response(outcome.reply, API_VERSIONS, 0)
    assert isinstance(body, ApiVersionsResponse)
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


def serves(address: Address) -> bool:
    """Whether the broker answers ApiVersions v0 on a fresh connection with error code 0."""
    try:
        outcome = exchange(address, api_versions_request(correlation_id=99), probe="serves")
        if not outcome.whole_frame:
            return False
        header, body = decode_response(outcome.reply, API_VERSIONS, 0)
    except Exception:
        return False
    return header.correlation_id == 99 and isinstance(body, ApiVersionsResponse) and body.error_code == 0


# -- the probes ---------------------------------------------------------------------------------


def garbage(address: Address) -> Outcome:
    """A well-sized frame whose 16 bytes are no request (api key 0xdead, version 0xbeef)."""
    return exchange(address, _frame(bytes.fromhex("deadbeef" * 4)), probe="garbage")


def http(address: Address) -> Outcome:
    """An HTTP request: its first four bytes read as a size of about 1.2 GB."""
    return exchange(address, b"GET / HTTP/1.1\r\nHost: kafka\r\n\r\n", probe="http")


def oversized(address: Address) -> Outcome:
    """A size prefix of 2**31 - 1 bytes followed by the start of an ApiVersions header."""
    return exchange(
        address,
        struct.pack(">i", 0x7FFFFFFF) + _header(API_VERSIONS, 0, 1, flexible=False),
        probe="oversized",
    )


def truncated(address: Address) -> Outcome:
    """The first 20 bytes of a Metadata v1 frame that says it has 64, then EOF (our write side shut)."""
    frame = _frame(_header(METADATA, 1, 1, flexible=False) + struct.pack(">i", 1) + b"\x00\x20" + b"t" * 32)
    assert len(frame) >= 20
    payload = struct.pack(">i", 64) + frame[4:20]
    return exchange(address, payload, probe="truncated", half_close=True)


def unknown_topic(address: Address) -> Outcome:
    """Metadata (v4, the first with allow_auto_topic_creation, if the broker has it) for a topic that
    does not exist, without auto-creation. Kafka answers UNKNOWN_TOPIC_OR_PARTITION (3) for it."""
    low, high = broker_api_versions(address).get(METADATA, (0, 0))
    version = max(low, min(4, high))
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=UNKNOWN_TOPIC)], allow_auto_topic_creation=False
    )
    outcome = exchange(
        address,
        encode_request(RequestHeader(correlation_id=5, client_id=CLIENT_ID), request, version),
        probe="unknown_topic",
    )
    if outcome.whole_frame:
        _, body = decode_response(outcome.reply, METADATA, version)
        assert isinstance(body, MetadataResponse)
        outcome.response = body
        outcome.notes.append(
            f"Metadata v{version}; topics "
            + ", ".join(f"{t.name}: error {t.error_code}" for t in body.topics)
        )
    return outcome


def api_versions_v99(address: Address) -> Outcome:
    """ApiVersions at v99 (flexible header and body, as a newer client would send). Kafka answers
    with a v0 body: UNSUPPORTED_VERSION (35) and the range of ApiVersions, so the client can retry
    lower."""
    body = b"\x07kw-raw\x061.0.0\x00"  # compact strings client_software_name/version, no tagged fields
    outcome = exchange(
        address, _frame(_header(API_VERSIONS, 99, 3, flexible=True) + body), probe="api_versions_v99"
    )
    if outcome.whole_frame:
        # Kafka's answer reads as v0; record what else it reads as if not.
        for version in (0, 3):
            try:
                header, response = decode_response(outcome.reply, API_VERSIONS, version, strict=True)
            except DecodeError as exc:
                outcome.notes.append(f"not an ApiVersions v{version} response ({exc})")
                continue
            assert isinstance(response, ApiVersionsResponse)
            if version == 0:
                outcome.response = response
            outcome.notes.append(
                f"reads as v{version}: correlation {header.correlation_id}, "
                f"error {response.error_code}, {len(response.api_keys)} api ranges"
            )
            break
    return outcome


def metadata_unsupported(address: Address) -> Outcome:
    """Metadata one version past the broker's maximum (body: that of v12, all topics). Kafka closes
    the connection on a request at a version it does not support (other than ApiVersions)."""
    _, high = broker_api_versions(address).get(METADATA, (0, 12))
    version = high + 1
    # v9+ is flexible: compact nullable array (0 = null: all topics), auto-create, cluster and topic
    # authorised operations (v8-10; v11+ drops the cluster one) and no tagged fields.
    body = b"\x00" + b"\x00" + b"\x00" + b"\x00"
    outcome = exchange(
        address, _frame(_header(METADATA, version, 4, flexible=True) + body), probe="metadata_unsupported"
    )
    outcome.notes.append(f"Metadata v{version} (broker max v{high})")
    return outcome


def api_versions_v5_identified(address: Address) -> Outcome:
    """ApiVersions v5 carrying the cluster id and node id the broker gave in Metadata v12, as the
    4.4 Java client sends it on every connection after the bootstrap one (KIP-1242: the broker
    checks them, answering REBOOTSTRAP_REQUIRED on a mismatch). A good request: Kafka answers it
    with error 0. Not one of :data:`PROBES`."""
    metadata = exchange(
        address,
        encode_request(RequestHeader(correlation_id=6, client_id=CLIENT_ID), MetadataRequest(topics=[]), 12),
        probe="metadata_v12",
    )
    if not metadata.whole_frame:
        raise RuntimeError(f"no Metadata answer: {metadata.describe()}")
    _, cluster = decode_response(metadata.reply, METADATA, 12)
    assert isinstance(cluster, MetadataResponse)
    request = ApiVersionsRequest(
        client_software_name=CLIENT_ID,
        client_software_version="1.0.0",
        cluster_id=cluster.cluster_id,
        node_id=cluster.brokers[0].node_id,
    )
    outcome = exchange(
        address,
        encode_request(RequestHeader(correlation_id=7, client_id=CLIENT_ID), request, 5),
        probe="api_versions_v5_identified",
    )
    outcome.notes.append(f"cluster id {cluster.cluster_id!r}, node id {request.node_id}")
    if outcome.whole_frame:
        _, response = decode_response(outcome.reply, API_VERSIONS, 5)
        assert isinstance(response, ApiVersionsResponse)
        outcome.response = response
    return outcome


PROBES: Final[dict[str, Callable[[Address], Outcome]]] = {
    "garbage": garbage,
    "http": http,
    "oversized": oversized,
    "truncated": truncated,
    "unknown_topic": unknown_topic,
    "api_versions_v99": api_versions_v99,
    "metadata_unsupported": metadata_unsupported,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("address", help="HOST:PORT")
    host, port = parser.parse_args().address.rsplit(":", 1)
    address = (host, int(port))
    for probe in PROBES.values():
        outcome = probe(address)
        print(outcome.describe())
        print(f"  broker still serves: {serves(address)}")


if __name__ == "__main__":
    main()
