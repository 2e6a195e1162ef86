"""Framing and connections: the Sans-IO client and server sides of a Kafka connection.

``ClientConnection`` and ``ServerConnection`` follow h11's shape: ``receive_data`` /
``receive_eof`` take bytes, ``next_event`` returns an event or ``NEED_DATA`` (``PAUSED`` at a
server's in-flight limit), ``send`` returns bytes to write and ``data_to_send`` the bytes a
connection produced by itself; ``next_deadline_ms`` / ``handle_timer(now_ms)`` run their timers.
They never read a clock, open a socket or draw random numbers; ``kafka_wire.adapters`` does that.
Both move through the state-machine core of :mod:`kafka_wire.protocol.machine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.lazy_exports import exports

if TYPE_CHECKING:
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


#: Each name of ``__all__`` and its module, imported on first use (a broker imports the server
#: side only, and ``kafka_wire.protocol.frames`` alone loads neither side).
__getattr__ = exports(
    __name__,
    {
        "CLIENT_TRANSITIONS": "kafka_wire.protocol.client",
        "ClientConfig": "kafka_wire.protocol.client",
        "ClientConnection": "kafka_wire.protocol.client",
        "ClientInput": "kafka_wire.protocol.client",
        "ClientState": "kafka_wire.protocol.client",
        "NEED_DATA": "kafka_wire.protocol.events",
        "PAUSED": "kafka_wire.protocol.events",
        "Authenticated": "kafka_wire.protocol.events",
        "AuthenticationFailed": "kafka_wire.protocol.events",
        "ClientEvent": "kafka_wire.protocol.events",
        "ConnectionClosed": "kafka_wire.protocol.events",
        "NeedData": "kafka_wire.protocol.events",
        "Paused": "kafka_wire.protocol.events",
        "Request": "kafka_wire.protocol.events",
        "RequestTimedOut": "kafka_wire.protocol.events",
        "Response": "kafka_wire.protocol.events",
        "ServerEvent": "kafka_wire.protocol.events",
        "UnsupportedRequest": "kafka_wire.protocol.events",
        "VersionsNegotiated": "kafka_wire.protocol.events",
        "DEFAULT_MAX_FRAME_BYTES": "kafka_wire.protocol.frames",
        "FrameReader": "kafka_wire.protocol.frames",
        "DEFAULT_MAX_PREAUTH_FRAME_BYTES": "kafka_wire.protocol.server",
        "SERVER_TRANSITIONS": "kafka_wire.protocol.server",
        "ServerConfig": "kafka_wire.protocol.server",
        "ServerConnection": "kafka_wire.protocol.server",
        "ServerInput": "kafka_wire.protocol.server",
        "ServerSasl": "kafka_wire.protocol.server",
        "ServerState": "kafka_wire.protocol.server",
        "all_api_versions": "kafka_wire.protocol.server",
        "api_versions_response": "kafka_wire.protocol.server",
    },
)
