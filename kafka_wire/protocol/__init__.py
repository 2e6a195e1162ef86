"""Framing and connections: the Sans-IO client and server sides of a Kafka connection.

``ClientConnection`` and ``ServerConnection`` follow h11's shape: ``receive_data`` /
``receive_eof`` take bytes, ``next_event`` returns an event or ``NEED_DATA`` (``PAUSED`` at a
server's in-flight limit), ``send`` returns bytes to write and ``data_to_send`` the bytes a
connection produced by itself; ``next_deadline_ms`` / ``handle_timer(now_ms)`` run their timers.
They never read a clock, open a socket or draw random numbers; ``kafka_wire.adapters`` does that.
Both move through the state-machine core of :mod:`kafka_wire.protocol.machine`.
"""

from kafka_wire.protocol.client import (
    CLIENT_TRANSITIONS,
    ClientConfig,
    ClientConnection,
    ClientInput,
    ClientState,
)
from kafka_wire.protocol.events import (
    NEED_DATA,
    PAUSED,
    Authenticated,
    AuthenticationFailed,
    ClientEvent,
    ConnectionClosed,
    NeedData,
    Paused,
    Request,
    RequestTimedOut,
    Response,
    ServerEvent,
    UnsupportedRequest,
    VersionsNegotiated,
)
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameReader
from kafka_wire.protocol.server import (
    DEFAULT_MAX_PREAUTH_FRAME_BYTES,
    SERVER_TRANSITIONS,
    ServerConfig,
    ServerConnection,
    ServerInput,
    ServerSasl,
    ServerState,
    all_api_versions,
    api_versions_response,
)

__all__ = [
    "CLIENT_TRANSITIONS",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_PREAUTH_FRAME_BYTES",
    "NEED_DATA",
    "PAUSED",
    "SERVER_TRANSITIONS",
    "Authenticated",
    "AuthenticationFailed",
    "ClientConfig",
    "ClientConnection",
    "ClientEvent",
    "ClientInput",
    "ClientState",
    "ConnectionClosed",
    "FrameReader",
    "NeedData",
    "Paused",
    "Request",
    "RequestTimedOut",
    "Response",
    "ServerConfig",
    "ServerConnection",
    "ServerEvent",
    "ServerInput",
    "ServerSasl",
    "ServerState",
    "UnsupportedRequest",
    "VersionsNegotiated",
    "all_api_versions",
    "api_versions_response",
]
