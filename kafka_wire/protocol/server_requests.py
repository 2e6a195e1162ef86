"""The receive side of a :class:`~kafka_wire.protocol.server.ServerConnection`: one request frame
becomes a :class:`Request` (decoded), a :class:`RawRequest` (an api key passed through
undecoded) or an :class:`UnsupportedRequest` (an api key or version the server does not accept),
or raises :class:`RemoteProtocolError` for a request not allowed before SASL authentication.
Pure: the connection records what each event owes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.errors import RemoteProtocolError, UnsupportedApiError
from kafka_wire.messages import REQUESTS, ApiKey
from kafka_wire.protocol.events import RawRequest, Request, UnsupportedRequest
from kafka_wire.protocol.framing import decode_request_frame, produce_acks, request_header_version

_KEY_VERSION: Final = struct.Struct(">hh")


class RequestDecoder:
    """Request frames to events, by the versions a server accepts (see the module docstring)."""

    __slots__ = ("_passthrough", "_strict", "_versions")

    def __init__(
        self, versions: Mapping[int, tuple[int, int]], passthrough: frozenset[int], strict: bool
    ) -> None:
        self._versions = versions
        self._passthrough = passthrough
        self._strict = strict

    def decode(
        self, frame: bytes, allowed: frozenset[int] | None, state: str
    ) -> Request | RawRequest | UnsupportedRequest:
        """The event of ``frame``; ``allowed`` are the api keys a client may send in ``state``
        before it has authenticated (None: every one, and passthrough applies)."""
        if allowed is None and self._passthrough and len(frame) >= 12:
            raw = self._raw(frame)
            if raw is not None:
                return raw
        try:
            decoded = decode_request_frame(frame, strict=self._strict)
        except UnsupportedApiError as exc:
            api_key, api_version = exc.api_key or 0, exc.version or 0
            if allowed is not None and api_key not in allowed:
                raise _not_allowed(api_key, state) from exc
            return UnsupportedRequest(
                api_key=api_key, api_version=api_version, correlation_id=exc.correlation_id, reason=exc.reason
            )
        header = decoded.header
        if allowed is not None and header.request_api_key not in allowed:
            raise _not_allowed(header.request_api_key, state)
        lo, hi = self._versions.get(header.request_api_key, (0, -1))
        if not lo <= header.request_api_version <= hi:
            return UnsupportedRequest(
                api_key=header.request_api_key,
                api_version=header.request_api_version,
                correlation_id=header.correlation_id,
                reason=f"unsupported version: api {header.request_api_key} v{header.request_api_version}",
            )
        return Request(header, decoded.body, decoded.trailing)

    def _raw(self, frame: bytes) -> RawRequest | None:
        """A passthrough request as a :class:`RawRequest`, or None to decode it as usual."""
        api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
        if api_key not in self._passthrough:
            return None
        lo, hi = self._versions.get(api_key, (0, -1))
        if not lo <= api_version <= hi:
            return None  # decoded, to be refused as unsupported
        header, pos = messages.RequestHeader.decode_from(
            frame, 4, request_header_version(api_key, api_version)
        )
        expects = api_key != ApiKey.PRODUCE or produce_acks(frame, pos, api_version) != 0
        return RawRequest(header, frame, expects)


def _not_allowed(api_key: int, state: str) -> RemoteProtocolError:
    name = REQUESTS[api_key].__name__ if api_key in REQUESTS else f"api key {api_key}"
    return RemoteProtocolError(f"{name} is not allowed in state {state} (before SASL authentication)")
