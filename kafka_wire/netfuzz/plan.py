"""What the network fuzzer sends next: the plan, drawn from a seeded ``random.Random``.

Three kinds of request: *generated* (a valid message of an API the server advertises, at a
version it advertises: a close or a hang after one is a finding), *mutated* (a generated frame
with a wire-level mutation: Kafka closes on garbage, so a close is only counted) and
*unadvertised* (a valid message of an API or version the server did not advertise). Valid
requests go out in small pipelined bursts (which is how a wrong response order shows); a mutated
or unadvertised one goes alone, followed by an ApiVersions request (the *sentinel*: its answer
shows the server handled the request before it without closing, even when that request gets
no answer, as a Produce with acks=0 does). A burst holding a valid Produce with ``acks=0``
ends with a sentinel too, whose answer proves the server had its chance to (wrongly) answer.

Wait fields (Fetch ``max_wait_ms``, Produce ``timeout_ms``, JoinGroup's timeouts, ...) are
clamped to :data:`MAX_WAIT_MS` so that a legitimate wait stays far below the hang timeout.
The plan does no I/O; the generator and the mutator are passed in (pure given the ``Random``).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import EncodeError
from kafka_wire.messages import REQUESTS, ApiKey, ApiVersionsRequest, RequestHeader
from kafka_wire.protocol.events import expects_response
from kafka_wire.protocol.framing import encode_request
from kafka_wire.testing.mutator import Mutator

if TYPE_CHECKING:
    import random

_SIZE: Final = struct.Struct(">i")
_HEADER: Final = struct.Struct(">hhi")
_MAX_CORRELATION_ID: Final = 0x7FFFFFFF

#: Wait fields of generated requests are clamped to this (ms); the hang timeout is seconds.
MAX_WAIT_MS: Final = 100
#: The client id of every generated request.
CLIENT_ID: Final = "kafka-wire-fuzz"
#: APIs never generated: they change the connection's authentication state, which a later
#: request would then trip over (they are still sent mutated and unadvertised).
SKIPPED_APIS: Final = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
#: The largest burst of pipelined valid requests.
MAX_BURST: Final = 4

#: Draws a valid message of a class at a version (``kafka_wire.testing.generate.random_message``).
Generate = Callable[[type[Message], int, "random.Random"], Message]
#: Mutates a size-prefixed request frame (``Mutator(rng).mutate_request_frame``).
Mutate = Callable[["random.Random", bytes], bytes]


class RequestKind(enum.Enum):
    GENERATED = "generated"
    MUTATED = "mutated"
    UNADVERTISED = "unadvertised"


@dataclass(frozen=True, slots=True)
class Sent:
    """One request frame as sent, with what the fuzzer knows about it.

    ``correlation_id`` is read back from the frame (a mutation may change it; None when the
    frame is too short to hold one). ``expects_response``: a valid request that is not a Produce
    with acks=0; for mutated frames whether an answer is expected is unknown (True).
    """

    frame: bytes
    kind: RequestKind
    api_key: int
    api_version: int
    correlation_id: int | None
    expects_response: bool = True
    #: A Produce with acks=0 (an answer to it is a protocol violation).
    acks_zero: bool = False

    @property
    def valid(self) -> bool:
        return self.kind is RequestKind.GENERATED

    @property
    def size_consistent(self) -> bool:
        """Whether the size prefix counts exactly the bytes after it."""
        return len(self.frame) >= 4 and _SIZE.unpack_from(self.frame, 0)[0] == len(self.frame) - 4


def frame_correlation_id(frame: bytes) -> int | None:
    """The correlation id a server reads from a request frame (bytes 8 to 12: every request
    header version puts it there), or None when the frame is too short."""
    return _SIZE.unpack_from(frame, 8)[0] if len(frame) >= 12 else None


def frame_api(frame: bytes) -> tuple[int, int] | None:
    """(api key, api version) from a request frame's header, or None when too short."""
    if len(frame) < 8:
        return None
    api_key, api_version, _ = _HEADER.unpack_from(frame + bytes(4), 4)
    return api_key, api_version


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """The frame with its correlation id replaced (frames of 12 bytes or more)."""
    out = bytearray(frame)
    _SIZE.pack_into(out, 8, correlation_id)
    return bytes(out)


def clamp_waits(message: Message, limit_ms: int = MAX_WAIT_MS) -> None:
    """Clamp the top-level wait fields of a request (``*timeout_ms``, ``*wait_ms``) to
    ``0..limit_ms`` in place, so that a legitimate wait stays short."""
    for spec in message.FIELDS:
        name = spec.name
        if not (name.endswith("timeout_ms") or name.endswith("wait_ms")):
            continue
        value = getattr(message, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= limit_ms:
            setattr(message, name, min(max(value, 0), limit_ms))


#: The fields whose code 0 (UNKNOWN) Kafka's request parsing refuses in the ACL APIs' requests
#: (CreateAcls' creations, DescribeAcls, DeleteAcls' filters: resource and pattern types,
#: operation, permission type): the broker closes the connection, as it does with garbage.
_UNKNOWN_REFUSED: Final = frozenset(
    {
        "resource_type",
        "resource_type_filter",
        "resource_pattern_type",
        "pattern_type_filter",
        "operation",
        "permission_type",
    }
)
_ACL_REQUESTS: Final = frozenset({"CreateAclsRequest", "DescribeAclsRequest", "DeleteAclsRequest"})


def parseable_by_kafka(message: Message) -> None:
    """Make a generated request one that Kafka's request parsing takes, in place: an ACL request
    naming UNKNOWN (0) where Kafka refuses it names ANY (1) instead (see :data:`_UNKNOWN_REFUSED`).
    Other requests are left as they are."""
    if type(message).__name__ not in _ACL_REQUESTS:
        return
    parts: list[Any] = [message, *getattr(message, "creations", ()), *getattr(message, "filters", ())]
    for part in parts:
        for spec in part.FIELDS:
            if spec.name in _UNKNOWN_REFUSED and getattr(part, spec.name) == 0:
                setattr(part, spec.name, 1)


def sent_of(frame: bytes, kind: RequestKind, body: Message | None = None) -> Sent:
    api = frame_api(frame) or (-1, -1)
    acks_zero = body is not None and not expects_response(body)
    return Sent(
        frame=frame,
        kind=kind,
        api_key=api[0],
        api_version=api[1],
        correlation_id=frame_correlation_id(frame),
        expects_response=not acks_zero,
        acks_zero=acks_zero,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanConfig:
    #: Shares of mutated and unadvertised requests (the rest are generated).
    mutated_share: float = 0.3
    unadvertised_share: float = 0.05
    max_burst: int = MAX_BURST
    max_wait_ms: int = MAX_WAIT_MS

    def __post_init__(self) -> None:
        if not (
            0 <= self.mutated_share
            and 0 <= self.unadvertised_share
            and self.mutated_share + self.unadvertised_share <= 1
        ):
            raise ValueError("mutated_share and unadvertised_share must be >= 0 and sum to at most 1")
        if self.max_burst < 1:
            raise ValueError("max_burst must be at least 1")


class Plan:
    """Draws the next burst of requests for a connection whose server advertised ``advertised``
    (api key to (min, max) version, as in the ApiVersions response)."""

    def __init__(
        self,
        rng: random.Random,
        advertised: Mapping[int, tuple[int, int]],
        generate: Generate,
        mutate: Mutate,
        config: PlanConfig | None = None,
    ) -> None:
        self.rng = rng
        self.config = config or PlanConfig()
        self.generate = generate
        self.mutate = mutate
        self.advertised = dict(advertised)
        #: (api key, version) pairs both sides know and the server advertises.
        self.valid: list[tuple[int, int]] = []
        #: (api key, version) pairs we know and the server does not advertise.
        self.unadvertised: list[tuple[int, int]] = []
        for api_key, cls in sorted(REQUESTS.items()):
            lo, hi = advertised.get(api_key, (0, -1))
            for version in cls.VERSIONS:
                if lo <= version <= hi:
                    if api_key not in SKIPPED_APIS:
                        self.valid.append((api_key, version))
                else:
                    self.unadvertised.append((api_key, version))
        self._next_correlation_id = 1000
        #: How many generated messages failed to encode (a generator bug; counted, skipped).
        self.encode_failures = 0

    def _correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = 1000 if cid >= _MAX_CORRELATION_ID else cid + 1
        return cid

    def _build(self, api_key: int, version: int) -> tuple[bytes, Message] | None:
        cls = REQUESTS[api_key]
        body = self.generate(cls, version, self.rng)
        clamp_waits(body, self.config.max_wait_ms)
        parseable_by_kafka(body)
        header = RequestHeader(correlation_id=self._correlation_id(), client_id=CLIENT_ID)
        try:
            return encode_request(header, body, version), body
        except EncodeError:
            self.encode_failures += 1
            return None

    def sentinel(self) -> Sent:
        """An ApiVersions request the server surely answers (its oldest advertised version)."""
        return sentinel(self.advertised, self._correlation_id())

    def next_burst(self) -> list[Sent]:
        """The next requests to send together (a burst of valid ones, or one other)."""
        config = self.config
        while True:
            draw = self.rng.random()
            if draw < config.unadvertised_share and self.unadvertised:
                api_key, version = self.rng.choice(self.unadvertised)
                built = self._build(api_key, version)
                if built is not None:
                    return [sent_of(built[0], RequestKind.UNADVERTISED, built[1]), self.sentinel()]
            elif draw < config.unadvertised_share + config.mutated_share and self.valid:
                api_key, version = self.rng.choice(self.valid)
                built = self._build(api_key, version)
                if built is not None:
                    mutated = sent_of(self.mutate(self.rng, built[0]), RequestKind.MUTATED)
                    return [mutated, self.sentinel()] if mutated.size_consistent else [mutated]
            elif self.valid:
                burst: list[Sent] = []
                for _ in range(self.rng.randint(1, config.max_burst)):
                    api_key, version = self.rng.choice(self.valid)
                    built = self._build(api_key, version)
                    if built is not None:
                        burst.append(sent_of(built[0], RequestKind.GENERATED, built[1]))
                if burst:
                    if any(s.acks_zero for s in burst):
                        burst.append(self.sentinel())
                    return burst
            elif not self.unadvertised:
                raise ValueError("nothing to send: the codec knows no API")


def sentinel(advertised: Mapping[int, tuple[int, int]], correlation_id: int) -> Sent:
    """An ApiVersions request (the server's oldest advertised version) to follow a Produce with
    acks=0: its answer shows the produce was handled without a close."""
    header = RequestHeader(correlation_id=correlation_id, client_id=CLIENT_ID)
    lo = advertised.get(ApiKey.API_VERSIONS, (0, 0))[0]
    version = min(max(lo, min(ApiVersionsRequest.VERSIONS)), max(ApiVersionsRequest.VERSIONS))
    body = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version="1")
    return sent_of(encode_request(header, body, version), RequestKind.GENERATED)


def classify_frame(frame: bytes, advertised: Mapping[int, tuple[int, int]]) -> RequestKind:
    """How a frame given from outside (a report, a shrink candidate) counts: GENERATED when it
    decodes strictly as a request of an advertised API at an advertised version (mutated or
    not: what it does to a server is what counts), UNADVERTISED when it decodes at a version
    the server does not advertise, MUTATED otherwise."""
    from kafka_wire.errors import KafkaWireError
    from kafka_wire.protocol.framing import decode_request_frame

    try:
        decoded = decode_request_frame(frame, strict=True)
    except KafkaWireError:
        return RequestKind.MUTATED
    api_key, version = decoded.header.request_api_key, decoded.header.request_api_version
    lo, hi = advertised.get(api_key, (0, -1))
    return RequestKind.GENERATED if lo <= version <= hi else RequestKind.UNADVERTISED


def sent_from_frame(frame: bytes, advertised: Mapping[int, tuple[int, int]]) -> Sent:
    """A :class:`Sent` for a frame given from outside (see :func:`classify_frame`)."""
    kind = classify_frame(frame, advertised)
    body: Message | None = None
    if kind is not RequestKind.MUTATED:
        from kafka_wire.protocol.framing import decode_request_frame

        body = decode_request_frame(frame, strict=True).body
    return sent_of(frame, kind, body)


def burst_frames(burst: Sequence[Sent]) -> list[bytes]:
    return [s.frame for s in burst]


def mutate_frame(rng: random.Random, frame: bytes) -> bytes:
    """A structure-aware mutation of a request frame (:class:`kafka_wire.testing.mutator.Mutator`,
    which falls back to byte-level mutation where the frame does not decode)."""
    return Mutator(rng).mutate_request_frame(frame)
