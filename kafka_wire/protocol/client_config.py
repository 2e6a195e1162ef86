"""What configures a :class:`~kafka_wire.protocol.client.ClientConnection`: :class:`ClientConfig`
(identity, version negotiation, SASL handshake version, limits, flow control, timers) and its
defaults, Kafka's clients' own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kafka_wire import __version__
from kafka_wire.messages import VALID_VERSIONS, ApiKey
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES

#: Correlation ids are int32s: the next after this one is 0.
MAX_CORRELATION_ID: Final = 0x7FFFFFFF
#: Kafka's ``max.in.flight.requests.per.connection`` default.
DEFAULT_MAX_IN_FLIGHT: Final = 5
#: Kafka's ``request.timeout.ms`` default (the consumer's; the producer's is 30 s too).
DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000

#: The ApiVersions version a client tries first: the newest this library knows.
DEFAULT_API_VERSIONS_VERSION: Final = max(VALID_VERSIONS[ApiKey.API_VERSIONS])


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    #: Sent in every request header; None is a null client id.
    client_id: str | None = "kafka-wire"
    #: ApiVersions v3+ fields; brokers check them against ``[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?``.
    software_name: str = "kafka-wire"
    software_version: str = __version__
    #: Start with an ApiVersions exchange and pick versions from it (Kafka's clients always do).
    negotiate: bool = True
    #: The ApiVersions version tried first; a broker that lacks it answers UNSUPPORTED_VERSION and
    #: the connection retries with the version the broker names, or v0.
    api_versions_version: int = DEFAULT_API_VERSIONS_VERSION
    #: SaslHandshake version: None picks v1 (tokens in SaslAuthenticate) when the broker has
    #: SaslAuthenticate, v0 (raw tokens) otherwise.
    sasl_handshake_version: int | None = None
    #: Responses larger than this are refused before their body is buffered.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: Refuse bytes after a response body (Kafka's clients ignore them).
    strict: bool = False
    #: The first correlation id (Kafka's Java client starts at 0).
    first_correlation_id: int = 0
    #: Kafka's ``max.in.flight.requests.per.connection``: requests sent beyond it wait in the
    #: connection and leave (in ``data_to_send()``) as earlier responses arrive.
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Kafka's ``request.timeout.ms``: a request unanswered this long after it left fails with a
    #: :class:`RequestTimedOut` event and closes the connection (``handle_timer``). None: never.
    request_timeout_ms: int | None = DEFAULT_REQUEST_TIMEOUT_MS
    #: Kafka's ``connections.max.idle.ms``: close a connection with nothing in flight after this
    #: long without traffic. None (the default): never; Kafka's clients use 540000 and reconnect
    #: on demand, which this single connection cannot.
    max_idle_ms: int | None = None

    def __post_init__(self) -> None:
        if self.api_versions_version not in VALID_VERSIONS[ApiKey.API_VERSIONS]:
            raise ValueError(f"api_versions_version must be one of {VALID_VERSIONS[ApiKey.API_VERSIONS]}")
        if self.sasl_handshake_version not in (None, *VALID_VERSIONS[ApiKey.SASL_HANDSHAKE]):
            raise ValueError(
                f"sasl_handshake_version must be None or one of {VALID_VERSIONS[ApiKey.SASL_HANDSHAKE]}"
            )
        if self.max_frame_bytes < 8:
            raise ValueError("max_frame_bytes must be at least 8")
        if not 0 <= self.first_correlation_id <= MAX_CORRELATION_ID:
            raise ValueError("first_correlation_id must be a non-negative int32")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        for name in ("request_timeout_ms", "max_idle_ms"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be None or >= 0")
