"""The one exception tree of kafka_wire.

Codec code raises :class:`DecodeError` / :class:`EncodeError` subclasses; only ``protocol/``
turns them into :class:`LocalProtocolError` / :class:`RemoteProtocolError`. Kafka error codes are
data in responses and never appear here.
"""

from __future__ import annotations

from collections.abc import Sequence

PathElement = str | int
Path = tuple[PathElement, ...]


def format_path(path: Sequence[PathElement]) -> str:
    """Render ``("topics", 3, "partitions")`` as ``topics[3].partitions``."""
    out: list[str] = []
    for element in path:
        if isinstance(element, int):
            out.append(f"[{element}]")
        else:
            out.append(("." if out else "") + element)
    return "".join(out)


class KafkaWireError(Exception):
    """Base class of every exception kafka_wire raises on purpose."""


class SchemaError(KafkaWireError):
    """Bad schema JSON or generator input; ``source`` names the file, ``pointer`` the place."""

    def __init__(self, message: str, *, source: str = "", pointer: str = "") -> None:
        self.source = source
        self.pointer = pointer
        where = f"{source}{pointer}"
        super().__init__(f"{where}: {message}" if where else message)


class EncodeError(KafkaWireError):
    """A value cannot be written at the requested version."""

    def __init__(
        self, reason: str, *, path: Path = (), message: str = "", version: int | None = None
    ) -> None:
        self.reason = reason
        self.path = path
        self.message = message
        self.version = version
        super().__init__(self._render())

    def _render(self) -> str:
        head = self.message
        if self.version is not None:
            head = f"{head} v{self.version}" if head else f"v{self.version}"
        where = format_path(self.path)
        if where:
            head = f"{head} ({where})" if head else where
        return f"{head}: {self.reason}" if head else self.reason


class FieldNotInVersionError(EncodeError):
    """A non-default value for a non-ignorable field that the version lacks."""


class ValueOutOfRangeError(EncodeError):
    """A value outside its wire type's range (int width, string length, null where not nullable)."""


class UnsupportedVersionError(EncodeError):
    """A message was asked for a version it does not define."""


class DecodeError(KafkaWireError):
    """Untrusted bytes could not be decoded.

    ``offset`` is absolute within the frame (or buffer) handed to the decoder, ``path`` the field
    path inside the message (``("topics", 3, "partitions", 0, "records")``).
    """

    def __init__(
        self,
        reason: str,
        *,
        offset: int = 0,
        path: Path = (),
        api_key: int | None = None,
        version: int | None = None,
        message: str = "",
    ) -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        self.api_key = api_key
        self.version = version
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        head = self.message or (f"api {self.api_key}" if self.api_key is not None else "input")
        if self.version is not None:
            head = f"{head} v{self.version}"
        head = f"{head} at byte {self.offset}"
        where = format_path(self.path)
        if where:
            head = f"{head} ({where})"
        return f"{head}: {self.reason}"

    def located(
        self,
        *,
        path_prefix: Path = (),
        offset_base: int = 0,
        api_key: int | None = None,
        version: int | None = None,
        message: str | None = None,
    ) -> DecodeError:
        """Return this error with an outer path prefix, offset base and message identity added."""
        self.path = path_prefix + self.path
        self.offset += offset_base
        if api_key is not None and self.api_key is None:
            self.api_key = api_key
        if version is not None and self.version is None:
            self.version = version
        if message is not None and not self.message:
            self.message = message
        self.args = (self._render(),)
        return self


class TruncatedError(DecodeError):
    """The input ended before a field was complete."""


class InvalidValueError(DecodeError):
    """A bad length or count, null in a non-nullable field, bad UTF-8 or a bad varint."""


class LimitExceededError(DecodeError):
    """A declared size or count, or a decompressed size, is over a configured cap."""


class CorruptBatchError(DecodeError):
    """A record batch failed its CRC, has an unknown magic or an inconsistent length."""


class ProtocolError(KafkaWireError):
    """A connection-level error; abstract."""


class LocalProtocolError(ProtocolError):
    """The caller misused a connection (wrong state, unknown correlation id on send)."""


class RemoteProtocolError(ProtocolError):
    """The peer misbehaved; ``__cause__`` holds the :class:`DecodeError` when there is one."""


class UnsupportedApiError(InvalidValueError):
    """A request names an API key or version this library does not define.

    Servers answer these the way Kafka does (an ApiVersions v0 error response, or closing the
    connection), so the request header fields they need are kept here.
    """

    def __init__(
        self, reason: str, *, api_key: int, version: int, correlation_id: int, offset: int = 4
    ) -> None:
        self.correlation_id = correlation_id
        super().__init__(reason, offset=offset, api_key=api_key, version=version, message="request header")


class AuthenticationError(ProtocolError):
    """SASL authentication failed: a wrong password, a bad server proof, a refused mechanism.

    ``error_code`` is the Kafka error code the broker sent (or will send), when there is one.
    """

    def __init__(self, reason: str, *, error_code: int | None = None) -> None:
        self.reason = reason
        self.error_code = error_code
        super().__init__(reason)


class RequestTimeoutError(ProtocolError, TimeoutError):
    """A request got no response within the client's ``request_timeout_ms`` (Kafka's
    ``request.timeout.ms``); the connection it was sent on is closed."""
