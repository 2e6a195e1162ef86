"""The requests of a :class:`~kafka_wire.protocol.client.ClientConnection`: held while they may not
leave (the in-flight limit, a re-authentication), written with the next correlation id into the
bytes to send, in flight until the response that matches the oldest arrives, and failed when one
is late. The connection's own requests (ApiVersions, SASL) travel the same way. Pure: times come
in as ``now_ms``.
"""

from __future__ import annotations

import enum
import struct
from collections import deque
from dataclasses import dataclass
from typing import Final

from kafka_wire import messages
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError, RemoteProtocolError
from kafka_wire.messages import REQUESTS
from kafka_wire.protocol.client_config import MAX_CORRELATION_ID, ClientConfig
from kafka_wire.protocol.client_versions import our_versions
from kafka_wire.protocol.events import RequestTimedOut, expects_response
from kafka_wire.protocol.frames import Buffer
from kafka_wire.protocol.framing import encode_request

_SIZE: Final = struct.Struct(">i")
_KEY_VERSION: Final = struct.Struct(">hh")
#: How many acks=0 requests at the head of the queue are remembered (to drop a stray answer).
_MAX_NO_RESPONSE_TRACKED: Final = 1024


class RequestKind(enum.Enum):
    USER = "user"
    NO_RESPONSE = "no response expected"
    API_VERSIONS = "ApiVersions"
    SASL_HANDSHAKE = "SaslHandshake"
    SASL_AUTHENTICATE = "SaslAuthenticate"
    SASL_RAW = "raw SASL token"


@dataclass(frozen=True, slots=True)
class InFlight:
    kind: RequestKind
    correlation_id: int
    api_key: int
    api_version: int
    request: Message | None
    context: object = None
    #: When it fails for want of a response (None: no response expected, or no timeout).
    deadline_ms: int | None = None
    #: Sent with ``send_raw(decode=False)``: the response is handed back undecoded.
    raw: bool = False


@dataclass(frozen=True, slots=True)
class Held:
    """A request sent while the connection could not write it (in-flight limit, re-authentication):
    encoded at once, with correlation id 0 until it leaves."""

    frame: bytes
    request: Message | None
    api_key: int
    api_version: int
    context: object
    timeout_ms: int | None
    expects_response: bool = True
    raw: bool = False


class RequestQueue:
    """The requests of one client connection (see the module docstring)."""

    __slots__ = ("_config", "_next_correlation_id", "_out", "held", "in_flight", "user_in_flight")

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self.in_flight: deque[InFlight] = deque()
        #: Requests sent by the caller that wait to be written.
        self.held: deque[Held] = deque()
        #: USER requests written and awaiting their response (what max_in_flight limits).
        self.user_in_flight = 0
        #: Frames to write, joined once when taken (a single frame leaves uncopied).
        self._out: list[bytes] = []
        self._next_correlation_id = config.first_correlation_id

    # -- questions -----------------------------------------------------------------------------

    def awaiting(self) -> int:
        """Requests written and awaiting a response (the connection's own included)."""
        return sum(1 for f in self.in_flight if f.kind is not RequestKind.NO_RESPONSE)

    def contexts(self) -> list[object]:
        """The ``context`` of every caller's request still awaiting its response, oldest first."""
        return [f.context for f in self.in_flight if f.kind is RequestKind.USER] + [
            h.context for h in self.held
        ]

    def unanswered(self) -> tuple[Message, ...]:
        """The caller's requests still awaiting their responses, written or held, oldest first."""
        written = [f.request for f in self.in_flight if f.kind is RequestKind.USER and f.request is not None]
        return tuple(written + [h.request for h in self.held if h.request is not None])

    def deadlines(self) -> list[int]:
        return [f.deadline_ms for f in self.in_flight if f.deadline_ms is not None]

    def below_limit(self) -> bool:
        return self.user_in_flight < self._config.max_in_flight

    # -- writing -------------------------------------------------------------------------------

    def take(self) -> bytes:
        """The bytes written since the last call."""
        chunks = self._out
        out = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        return out

    def write(
        self,
        kind: RequestKind,
        request: Message,
        api_version: int,
        now_ms: int,
        context: object = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Encode ``request`` with the next correlation id and write it (the connection's own
        requests time out after ``request_timeout_ms``)."""
        header = messages.RequestHeader(
            correlation_id=self._next_correlation_id, client_id=self._config.client_id
        )
        if kind is not RequestKind.USER:
            timeout_ms = self._config.request_timeout_ms
        assert request.API_KEY is not None
        self._track(
            kind,
            encode_request(header, request, api_version),
            request,
            request.API_KEY,
            api_version,
            context,
            timeout_ms,
            now_ms,
            expects=expects_response(request),
        )

    def write_token(self, token: bytes, now_ms: int) -> None:
        """A raw SASL token (after SaslHandshake v0): a size prefix, no header."""
        self._out.append(_SIZE.pack(len(token)) + token)
        timeout = self._config.request_timeout_ms
        deadline = None if timeout is None else now_ms + timeout
        self.in_flight.append(InFlight(RequestKind.SASL_RAW, -1, -1, -1, None, None, deadline))

    def hold(self, request: Message, api_version: int, context: object, timeout_ms: int | None) -> None:
        """Encode a caller's request that may not leave yet (correlation id 0 until it does)."""
        assert request.API_KEY is not None
        frame = encode_request(messages.RequestHeader(client_id=self._config.client_id), request, api_version)
        self.held.append(
            Held(frame, request, request.API_KEY, api_version, context, timeout_ms, expects_response(request))
        )

    def hold_frame(
        self,
        frame: Buffer,
        request: Message | None,
        context: object,
        timeout_ms: int | None,
        *,
        expects: bool,
        raw: bool,
    ) -> None:
        """A whole request frame built elsewhere (``send_raw``), held to leave in turn."""
        if len(frame) < 12 or _SIZE.unpack_from(frame, 0)[0] != len(frame) - 4:
            raise LocalProtocolError("send_raw takes one whole size-prefixed request frame")
        api_key, api_version = _KEY_VERSION.unpack_from(frame, 4)
        if our_versions(api_key) is None:
            raise LocalProtocolError(f"kafka_wire does not know api key {api_key}")
        self.held.append(Held(bytes(frame), request, api_key, api_version, context, timeout_ms, expects, raw))

    def write_held(self, now_ms: int) -> None:
        """Write held requests while the in-flight limit allows (the connection is READY)."""
        held = self.held
        while held and self.user_in_flight < self._config.max_in_flight:
            h = held.popleft()
            with memoryview(h.frame) as view:  # one copy, the correlation id (byte 8) replaced
                frame = b"".join((view[:8], _SIZE.pack(self._next_correlation_id), view[12:]))
            self._track(
                RequestKind.USER,
                frame,
                h.request,
                h.api_key,
                h.api_version,
                h.context,
                h.timeout_ms,
                now_ms,
                expects=h.expects_response,
                raw=h.raw,
            )

    def _track(
        self,
        kind: RequestKind,
        frame: Buffer,
        request: Message | None,
        api_key: int,
        api_version: int,
        context: object,
        timeout_ms: int | None,
        now_ms: int,
        *,
        expects: bool,
        raw: bool = False,
    ) -> None:
        correlation_id = self._next_correlation_id
        self._out.append(frame if type(frame) is bytes else bytes(frame))
        self._next_correlation_id = 0 if correlation_id == MAX_CORRELATION_ID else correlation_id + 1
        deadline = None if timeout_ms is None else now_ms + timeout_ms
        if not expects:
            kind, deadline = (
                RequestKind.NO_RESPONSE,
                None,
            )  # tracked only to tolerate brokers that answer anyway
        elif kind is RequestKind.USER:
            self.user_in_flight += 1
        self.in_flight.append(
            InFlight(kind, correlation_id, api_key, api_version, request, context, deadline, raw)
        )
        while (
            len(self.in_flight) > _MAX_NO_RESPONSE_TRACKED
            and self.in_flight[0].kind is RequestKind.NO_RESPONSE
        ):
            self.in_flight.popleft()

    # -- responses -----------------------------------------------------------------------------

    def match(self, frame: bytes) -> InFlight | None:
        """The request a response frame answers: the oldest in flight (taken off at once when it
        is a raw SASL token: call :meth:`answered` for the others once decoded). None for the
        answer to a request that expects none, dropped; :class:`RemoteProtocolError` for a frame
        that answers no request in flight, or not the oldest."""
        in_flight = self.in_flight
        if in_flight and in_flight[0].kind is RequestKind.SASL_RAW:
            return in_flight.popleft()
        if len(frame) < 8:
            raise RemoteProtocolError(f"response of {len(frame) - 4} bytes has no correlation id")
        (correlation_id,) = _SIZE.unpack_from(frame, 4)
        while in_flight and in_flight[0].kind is RequestKind.NO_RESPONSE:
            if in_flight.popleft().correlation_id == correlation_id:
                # Leniency: some brokers (Tansu) answer Produce with acks=0; Kafka never does. Drop it.
                return None
        if not in_flight:
            raise RemoteProtocolError(
                f"unsolicited response (correlation id {correlation_id}): no request is in flight"
            )
        pending = in_flight[0]
        if correlation_id != pending.correlation_id:
            raise RemoteProtocolError(
                f"response correlation id {correlation_id} does not match the oldest request in flight "
                f"({REQUESTS[pending.api_key].__name__} v{pending.api_version}, correlation id {pending.correlation_id})"
            )
        return pending

    def answered(self, pending: InFlight) -> None:
        """``pending`` (the oldest in flight, from :meth:`match`) has its response."""
        self.in_flight.popleft()
        if pending.kind is RequestKind.USER:
            self.user_in_flight -= 1

    def late(self, now_ms: int) -> InFlight | None:
        """The request whose deadline passed first, if one has by ``now_ms``."""
        expired = [f for f in self.in_flight if f.deadline_ms is not None and f.deadline_ms <= now_ms]
        return min(expired, key=lambda f: f.deadline_ms or 0) if expired else None

    def time_out(self, late: InFlight) -> RequestTimedOut:
        """``late`` timed out: the event, every request forgotten (the connection closes)."""
        users = [f for f in self.in_flight if f.kind is RequestKind.USER]
        event = RequestTimedOut(
            request=late.request,
            correlation_id=late.correlation_id,
            context=late.context,
            unanswered=self.unanswered(),
            contexts=tuple([f.context for f in users] + [h.context for h in self.held]),
        )
        self.in_flight.clear()
        self.held.clear()
        self.user_in_flight = 0
        return event
