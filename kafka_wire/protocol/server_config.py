"""What configures a :class:`~kafka_wire.protocol.server.ServerConnection`: :class:`ServerConfig`
(limits, versions, timers, passthrough) and :class:`ServerSasl` (the SASL gate), and the API
versions a server offers (:func:`all_api_versions`, :func:`api_versions_response`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.messages import VALID_VERSIONS, ApiKey
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES
from kafka_wire.protocol.sasl.base import SaslServerMechanism
from kafka_wire.protocol.sasl_session import MIN_REAUTHENTICATION_INTERVAL_MS
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import ApiVersionsResponse

#: Kafka's ``sasl.server.max.receive.size``: the largest frame accepted before authentication.
DEFAULT_MAX_PREAUTH_FRAME_BYTES: Final = 512 * 1024


def all_api_versions() -> dict[int, tuple[int, int]]:
    """Per api key, the (min, max) request versions this library can decode."""
    return {key: (min(versions), max(versions)) for key, versions in sorted(VALID_VERSIONS.items())}


def api_versions_response(api_versions: Mapping[int, tuple[int, int]]) -> ApiVersionsResponse:
    """An ApiVersions response body listing ``api_versions`` in api key order."""
    return messages.ApiVersionsResponse(
        api_keys=[
            messages.ApiVersionsResponseApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(api_versions.items())
        ]
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    #: Per api key, the (min, max) versions the server accepts; None accepts every version this
    #: library can decode. Others become :class:`UnsupportedRequest` events.
    api_versions: Mapping[int, tuple[int, int]] | None = None
    #: Kafka's ``socket.request.max.bytes`` default; checked before a body is buffered.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: The frame limit until a SASL client has authenticated.
    max_preauth_frame_bytes: int = DEFAULT_MAX_PREAUTH_FRAME_BYTES
    #: Refuse bytes after a request body (Kafka accepts them).
    strict: bool = False
    #: How many requests may await their responses before ``next_event`` returns ``PAUSED``
    #: (Kafka's broker mutes a channel while one request is in flight: 1). None: no limit.
    max_in_flight_requests: int | None = None
    #: Kafka's ``connections.max.idle.ms`` (600000 on a broker): close (MUST_CLOSE) a connection
    #: without traffic for this long. None: never.
    max_idle_ms: int | None = None
    #: Kafka's ``connections.max.reauth.ms`` (KIP-368): with a SASL gate, an authenticated session
    #: lasts this long (or until its credential expires: an OAUTHBEARER token's ``exp``);
    #: SaslAuthenticate v1+ tells the client, which re-authenticates in time, and a connection
    #: whose session expired is closed at its next request. 0 (Kafka's default): sessions end only
    #: with their credentials.
    max_reauth_ms: int = 0
    #: A re-authentication begun sooner than this after the previous one is refused: its
    #: SaslHandshake is answered as any request after authentication (ILLEGAL_SASL_STATE). Kafka's
    #: broker fixes it at one second.
    min_reauthentication_interval_ms: int = MIN_REAUTHENTICATION_INTERVAL_MS
    #: Api keys whose requests are not decoded (a proxy forwarding frames): they come out of
    #: ``next_event`` as :class:`RawRequest` (header decoded, body left as bytes) and are answered
    #: with ``send_raw``. ApiVersions is always decoded, and so are the SASL requests before
    #: authentication.
    passthrough: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.max_frame_bytes < 12 or self.max_preauth_frame_bytes < 12:
            raise ValueError("frame limits must be at least 12 bytes (a request header)")
        if self.max_in_flight_requests is not None and self.max_in_flight_requests < 1:
            raise ValueError("max_in_flight_requests must be None or at least 1")
        if self.max_idle_ms is not None and self.max_idle_ms < 0:
            raise ValueError("max_idle_ms must be None or >= 0")
        if self.max_reauth_ms < 0 or self.min_reauthentication_interval_ms < 0:
            raise ValueError("max_reauth_ms and min_reauthentication_interval_ms must be >= 0")
        if ApiKey.API_VERSIONS in self.passthrough:
            raise ValueError("ApiVersions cannot be passed through: the connection answers it")
        for key, (lo, hi) in (self.api_versions or {}).items():
            versions = VALID_VERSIONS.get(key)
            if versions is None or lo > hi or lo not in versions or hi not in versions:
                raise ValueError(f"api_versions[{key}] = ({lo}, {hi}) is not a range this library can decode")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSasl:
    """The SASL gate: mechanism name to a factory making a fresh server mechanism per attempt."""

    mechanisms: Mapping[str, Callable[[], SaslServerMechanism]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.mechanisms:
            raise ValueError("a SASL gate needs at least one mechanism")
