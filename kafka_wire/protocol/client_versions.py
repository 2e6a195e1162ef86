"""API version negotiation of a :class:`~kafka_wire.protocol.client.ClientConnection`: the versions
the broker offers in its ApiVersions response, those both sides support, the version a request
is sent at, and the ApiVersions retry Kafka's clients make at an older version (KIP-511). Pure.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, RemoteProtocolError, UnsupportedVersionError
from kafka_wire.messages import REQUESTS, VALID_VERSIONS, ApiKey, ErrorCode
from kafka_wire.protocol.events import VersionsNegotiated
from kafka_wire.protocol.framing import decode_response

if TYPE_CHECKING:
    from kafka_wire.messages import ApiVersionsResponse, ResponseHeader

_INT16: Final = struct.Struct(">h")


def our_versions(api_key: int) -> tuple[int, int] | None:
    """The (min, max) versions of ``api_key`` this library knows (None: an unknown api key)."""
    versions = VALID_VERSIONS.get(api_key)
    return None if versions is None else (min(versions), max(versions))


def decode_api_response(
    frame: bytes, api_key: int, api_version: int, *, strict: bool
) -> tuple[ResponseHeader, Message]:
    """A response frame to a request of ``api_key`` at ``api_version``, decoded; an ApiVersions
    response the broker wrote at v0 because it lacks the version asked for (KIP-511) too."""
    if api_key == ApiKey.API_VERSIONS and api_version > 0 and len(frame) >= 10:
        (error_code,) = _INT16.unpack_from(frame, 8)
        if error_code == ErrorCode.UNSUPPORTED_VERSION:
            try:
                return decode_response(frame, api_key, 0, strict=strict)
            except DecodeError:
                pass
    return decode_response(frame, api_key, api_version, strict=strict)


class VersionNegotiation:
    """The versions of one connection: the broker's, and those both sides support."""

    __slots__ = ("agreed", "broker")

    def __init__(self) -> None:
        #: Per api key, the (min, max) versions the broker offers; empty until negotiated.
        self.broker: dict[int, tuple[int, int]] = {}
        #: Per api key, the (min, max) versions both sides support; empty until negotiated.
        self.agreed: dict[int, tuple[int, int]] = {}

    def has_sasl_authenticate(self) -> bool:
        """Whether SaslAuthenticate may carry the SASL tokens (assumed before negotiation)."""
        return not self.broker or ApiKey.SASL_AUTHENTICATE in self.agreed

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both sides support (see
        :meth:`ClientConnection.version_for`)."""
        ours = our_versions(api_key)
        if ours is None:
            raise UnsupportedVersionError(f"kafka_wire does not know api key {api_key}")
        if not self.broker:
            return ours[1]
        agreed = self.agreed.get(api_key)
        if agreed is None:
            theirs = self.broker.get(api_key)
            name = REQUESTS[api_key].__name__
            if theirs is None:
                raise UnsupportedVersionError(f"the broker does not support {name}")
            raise UnsupportedVersionError(
                f"no {name} version in common: broker v{theirs[0]}-{theirs[1]}, kafka_wire v{ours[0]}-{ours[1]}"
            )
        return agreed[1]

    def negotiate(self, body: ApiVersionsResponse, api_version: int) -> VersionsNegotiated | int:
        """The broker's answer to ApiVersions at ``api_version``: the versions agreed, or the
        version to ask again at when the broker lacks this one; :class:`RemoteProtocolError` when
        it failed otherwise."""
        if body.error_code == ErrorCode.UNSUPPORTED_VERSION:
            offered = [k.max_version for k in body.api_keys if k.api_key == ApiKey.API_VERSIONS]
            retry = min(offered[0], api_version - 1) if offered else 0
            if api_version == 0 or retry < 0:
                raise RemoteProtocolError("the broker refused ApiVersions v0 as UNSUPPORTED_VERSION")
            return max(retry, 0)
        if body.error_code != ErrorCode.NONE:
            raise RemoteProtocolError(f"ApiVersions failed: {ErrorCode.lookup(body.error_code)!r}")
        broker = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        agreed: dict[int, tuple[int, int]] = {}
        for api_key, (lo, hi) in broker.items():
            ours = our_versions(api_key)
            if ours is not None and max(lo, ours[0]) <= min(hi, ours[1]):
                agreed[api_key] = (max(lo, ours[0]), min(hi, ours[1]))
        self.broker, self.agreed = broker, agreed
        return VersionsNegotiated(api_versions=dict(agreed), response=body, api_version=api_version)
