"""Structure-aware mutation of Kafka frames, message bodies and record batches, for fuzzing.

A :class:`Mutator` decodes its input with the codec, changes one thing and encodes again, so most
of its outputs reach deep into a parser instead of failing at the first length check:

- **value level** (:meth:`Mutator.mutate_message`): an integer to a boundary or a neighbour, a
  nullable field to null, a string or bytes empty or longer, an array element dropped, duplicated
  or inserted, a struct replaced, an unknown tagged field added; the result still encodes;
- **wire level** (:meth:`Mutator.mutate_encoding`): the encoding itself. The message is walked like
  the interpreter's encoder, but into a list of tokens (a length or count, a fixed-width value, a
  string's bytes, a tagged-field section, a records payload...), one token is replaced (a length
  off by one, negative or huge, a compact length in an overlong varint form, invalid UTF-8, a
  duplicate, unknown or out-of-order tag, a tag size that lies) and the tokens are joined;
- **records** (:meth:`Mutator.mutate_records`): record batches of any magic and codec are opened,
  rebuilt under another magic or codec, or changed inside (header fields, record varints, the
  compressed frame) and closed again with the CRC recomputed (most of the time), so the change
  reaches the parser past the checksum;
- **frames** (:meth:`Mutator.mutate_request_frame`, :meth:`Mutator.mutate_response_frame`): the
  header (api version swapped, header version v1 and v2 confused, client id null, huge or not
  UTF-8, correlation id) and the frame (size prefix off, truncated, trailing bytes), or the body;
- **bytes** (:meth:`Mutator.mutate_bytes`): bit flips, interesting values, insertions, erasures,
  copies; the fallback for input that does not decode.

Each mutation kind is one small function in a table (``*_MUTATIONS``, in the modules of
:mod:`kafka_wire.testing.mutations`, one per level; this module re-exports the tables), chosen by
the ``rng``; the names of the kinds applied by the last call are in :attr:`Mutator.applied`. Everything is pure
given the ``rng`` (same seed, same bytes) and no output is longer than ``max_size``.

For Hypothesis: :func:`mutated_requests`, :func:`mutated_responses`,
:func:`mutated_record_batches`. For atheris: :func:`libfuzzer_mutator`. See docs/guide/fuzzing.md.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.messages import RESPONSES, RequestHeader, ResponseHeader, catalog
from kafka_wire.protocol.framing import (
    decode_request_frame,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from kafka_wire.testing.generate import random_batch, random_message, random_request
from kafka_wire.testing.mutations.byte_level import BYTES_MUTATIONS
from kafka_wire.testing.mutations.frames import (
    REQUEST_FRAME_MUTATIONS,
    RESPONSE_FRAME_MUTATIONS,
    Frame,
    FrameMutation,
    bytes_then_size,
    weighted,
)
from kafka_wire.testing.mutations.records import (
    BATCH_MUTATIONS,
    RECORDS_MUTATIONS,
    SET_MUTATIONS,
    build_any_batch,
    random_records,
    split_batches,
)
from kafka_wire.testing.mutations.values import VALUE_MUTATIONS, mutate_value
from kafka_wire.testing.mutations.wire import ENCODING_MUTATIONS, Token, tokenize

if TYPE_CHECKING:  # Hypothesis is needed by the strategies only (the ``testing`` extra)
    from hypothesis import strategies as st

__all__ = [
    "BATCH_MUTATIONS",
    "BYTES_MUTATIONS",
    "ENCODING_MUTATIONS",
    "RECORDS_MUTATIONS",
    "REQUEST_FRAME_MUTATIONS",
    "RESPONSE_FRAME_MUTATIONS",
    "SET_MUTATIONS",
    "VALUE_MUTATIONS",
    "Mutator",
    "Token",
    "libfuzzer_mutator",
    "mutated_record_batches",
    "mutated_requests",
    "mutated_responses",
    "tokenize",
]

#: Default bound on every output (bytes).
DEFAULT_MAX_SIZE: Final = 1 << 16


class Mutator:
    """Structure-aware mutations drawn from ``rng``; no output is longer than ``max_size``.

    ``byte_mutator(data, max_size)``, when given, replaces the built-in byte-level fallback for
    input that does not decode (``libfuzzer_mutator`` passes ``atheris.Mutate``). After each call,
    :attr:`applied` names the mutation kinds it applied, outermost first.
    """

    def __init__(
        self,
        rng: random.Random,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        byte_mutator: Callable[[bytes, int], bytes] | None = None,
    ) -> None:
        self.rng = rng
        self.max_size = max_size
        self.byte_mutator = byte_mutator
        self.applied: list[str] = []
        self.depth = 0
        self._busy = 0

    def _begin(self) -> None:
        if self._busy == 0:
            self.applied = []
        self._busy += 1

    def _bound(self, data: bytes) -> bytes:
        return data if len(data) <= self.max_size else data[: self.max_size]

    # -- the public entry points: each resets :attr:`applied` unless called from another one

    def mutate_message(self, msg: Message, version: int) -> Message:
        """A copy of ``msg`` with one field changed (value level); it still encodes at ``version``."""
        self._begin()
        try:
            return self._mutate_message(msg, version)
        finally:
            self._busy -= 1

    def mutate_encoding(self, msg: Message, version: int) -> bytes:
        """The bytes of ``msg`` at ``version`` with one wire-level mutation (the encoding lies)."""
        self._begin()
        try:
            return self._mutate_encoding(msg, version)
        finally:
            self._busy -= 1

    def mutate_request_frame(self, frame: bytes) -> bytes:
        """A size-prefixed request frame in, one mutated frame out."""
        self._begin()
        try:
            return self._mutate_request_frame(frame)
        finally:
            self._busy -= 1

    def mutate_response_frame(self, frame: bytes, api_key: int, api_version: int) -> bytes:
        """A size-prefixed response frame to ``api_key`` at ``api_version`` in, one mutated out."""
        self._begin()
        try:
            return self._mutate_response_frame(frame, api_key, api_version)
        finally:
            self._busy -= 1

    def mutate_records(self, data: bytes) -> bytes:
        """Record batches (any magic and codec) in, mutated batches out. Input that does not split
        into batches is replaced by a fresh batch (then mutated) or mutated as bytes."""
        self._begin()
        try:
            return self._mutate_records(data)
        finally:
            self._busy -= 1

    def mutate_bytes(self, data: bytes) -> bytes:
        """Byte level: one to three of bit flip, interesting value, insert, erase, chunk copy,
        truncate (or the ``byte_mutator`` given)."""
        self._begin()
        try:
            return self._mutate_bytes(data)
        finally:
            self._busy -= 1

    # -- the work

    # -- messages

    def _mutate_message(self, msg: Message, version: int) -> Message:
        """A copy of ``msg`` with one field changed; the copy still encodes at ``version``."""
        for _ in range(4):
            out = mutate_value(self, msg, version)
            try:
                out.encode(version)
            except EncodeError:
                continue
            return out
        return msg

    def _mutate_encoding(self, msg: Message, version: int) -> bytes:
        """The bytes of ``msg`` at ``version`` with one wire-level mutation (the encoding lies)."""
        toks = tokenize(msg, version)
        names = list(ENCODING_MUTATIONS)
        for _ in range(8):
            name = names[self.rng.randrange(len(names))]
            if ENCODING_MUTATIONS[name](self, toks):
                self.applied.append(name)
                break
        return self._bound(b"".join(t.data for t in toks))

    # -- frames

    def _mutate_request_frame(self, frame: bytes) -> bytes:
        """A size-prefixed request frame in, one mutated frame out."""
        try:
            decoded = decode_request_frame(frame)
        except DecodeError:
            self.applied.append("undecodable")
            return self._bound(bytes_then_size(self, bytes(frame)))
        header = decoded.header
        fr = Frame(
            header,
            request_header_version(header.request_api_key, header.request_api_version),
            decoded.body,
            header.request_api_version,
            bytes(decoded.trailing),
        )
        return self._frame_mutation(REQUEST_FRAME_MUTATIONS, fr, frame)

    def _mutate_response_frame(self, frame: bytes, api_key: int, api_version: int) -> bytes:
        """A size-prefixed response frame to ``api_key`` at ``api_version`` in, one mutated out."""
        try:
            header, body = decode_response(frame, api_key, api_version)
        except DecodeError:
            self.applied.append("undecodable")
            return self._bound(bytes_then_size(self, bytes(frame)))
        fr = Frame(header, response_header_version(api_key, api_version), body, api_version, b"")
        return self._frame_mutation(RESPONSE_FRAME_MUTATIONS, fr, frame)

    def _frame_mutation(self, table: dict[str, tuple[FrameMutation, int]], fr: Frame, frame: bytes) -> bytes:
        name, mutation = weighted(self, table)
        self.applied.append(name)
        try:
            return self._bound(mutation(self, fr))
        except EncodeError:
            # The codec decodes some frames it cannot encode again (duplicate unknown tags, for
            # one): those are mutated as bytes.
            self.applied.append("not_reencodable")
            return self._bound(bytes_then_size(self, bytes(frame)))

    # -- records

    def _mutate_records(self, data: bytes) -> bytes:
        """Record batches (any magic and codec) in, mutated batches out. Input that does not
        split into batches is replaced by a fresh batch (then mutated) or mutated as bytes."""
        data = bytes(data)
        batches = split_batches(data) if data else None
        if not batches:
            if self.rng.random() < 0.5:
                self.applied.append("records_fresh")
                batches = [build_any_batch(self, random_records(self))]
            else:
                return self.mutate_bytes(data)
        if self.rng.random() < 0.2:
            name = self.rng.choice(list(SET_MUTATIONS))
            self.applied.append(name)
            SET_MUTATIONS[name](self, batches)
        else:
            i = self.rng.randrange(len(batches))
            name = self.rng.choice(list(BATCH_MUTATIONS))
            self.applied.append(name)
            try:
                batches[i] = BATCH_MUTATIONS[name](self, batches[i])
            except (DecodeError, EncodeError):  # a codec refused what the mutation built
                batches[i] = self.mutate_bytes(batches[i])
        return self._bound(b"".join(batches))

    # -- bytes

    def _mutate_bytes(self, data: bytes) -> bytes:
        """Byte-level: one to three of bit flip, interesting value, insert, erase, chunk copy, truncate."""
        if self.byte_mutator is not None:
            self.applied.append("byte_mutator")
            return self._bound(self.byte_mutator(bytes(data), self.max_size))
        buf = bytearray(data)
        names = list(BYTES_MUTATIONS)
        for _ in range(self.rng.randint(1, 3)):
            name = names[self.rng.randrange(len(names))]
            self.applied.append(name)
            BYTES_MUTATIONS[name](self, buf)
        return self._bound(bytes(buf))


# ------------------------------------------------------------------------ Hypothesis


def _request_frames(cls: type[Message] | None, version: int | None) -> st.SearchStrategy[bytes]:
    from hypothesis import strategies as st

    from kafka_wire.testing.strategies import messages

    if cls is None:
        pairs = [(api.request, v) for api in catalog() for v in api.versions]
        return st.sampled_from(pairs).flatmap(lambda p: _request_frames(p[0], p[1]))
    if version is None:
        return st.sampled_from(cls.VERSIONS).flatmap(lambda v: _request_frames(cls, v))
    api_key = cls.API_KEY
    assert api_key is not None
    hv = request_header_version(api_key, version)
    headers = messages(RequestHeader, hv).map(lambda h: _named(h, api_key, version))
    return st.tuples(headers, messages(cls, version)).map(lambda hb: encode_request(hb[0], hb[1], version))


def _named(header: RequestHeader, api_key: int, version: int) -> RequestHeader:
    header.request_api_key = api_key
    header.request_api_version = version
    return header


def _mutated(
    frames: st.SearchStrategy[bytes], step: Callable[[Mutator, bytes], bytes]
) -> st.SearchStrategy[bytes]:
    from hypothesis import strategies as st

    def apply(args: tuple[bytes, random.Random, int]) -> bytes:
        frame, rng, n = args
        m = Mutator(rng)
        for _ in range(n):
            frame = step(m, frame)
        return frame

    return st.tuples(frames, st.randoms(use_true_random=False), st.integers(0, 3)).map(apply)


def mutated_requests(
    cls: type[Message] | None = None, version: int | None = None
) -> st.SearchStrategy[bytes]:
    """Size-prefixed request frames: a valid message (``strategies.messages``) of ``cls`` at
    ``version`` (default: any request, any version), then 0..3 mutations drawn by Hypothesis, so
    failures shrink."""
    return _mutated(_request_frames(cls, version), lambda m, f: m.mutate_request_frame(f))


def mutated_responses(cls: type[Message], version: int) -> st.SearchStrategy[bytes]:
    """As :func:`mutated_requests`, for response frames of ``cls`` at ``version``."""
    from hypothesis import strategies as st

    from kafka_wire.testing.strategies import messages

    api_key = cls.API_KEY
    assert api_key is not None
    hv = response_header_version(api_key, version)
    frames = st.tuples(messages(ResponseHeader, hv), messages(cls, version)).map(
        lambda hb: encode_response(hb[0], hb[1], version)
    )
    return _mutated(frames, lambda m, f: m.mutate_response_frame(f, api_key, version))


def mutated_record_batches() -> st.SearchStrategy[bytes]:
    """Records payloads: a valid batch (any magic and codec) then 0..3 mutations by Hypothesis."""
    from hypothesis import strategies as st

    def valid(rng: random.Random) -> bytes:
        return build_any_batch(Mutator(rng), random_records(Mutator(rng)))

    return _mutated(st.randoms(use_true_random=False).map(valid), lambda m, d: m.mutate_records(d))


# ---------------------------------------------------------------------------- atheris

_RESPONSE_PREFIX: Final = struct.Struct(">hh")

KINDS: Final = ("request", "response", "records")


def libfuzzer_mutator(
    kind: str, *, fallback: Callable[[bytes, int], bytes] | None = None
) -> Callable[[bytes, int, int], bytes]:
    """An atheris custom mutator ``(data, max_size, seed) -> bytes`` for ``kind`` in
    ``{"request", "response", "records"}``; deterministic for a given ``(data, seed)``.

    ``request``: a size-prefixed request frame. ``response``: an int16 api key and an int16 api
    version, then a size-prefixed response frame to it. ``records``: a records payload. Input that
    does not decode goes to ``fallback``, any ``(data, max_size) -> bytes``, by default
    :meth:`Mutator.mutate_bytes`. Now and then (and for empty
    input) a fresh valid input is generated instead.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    byte_mutator = fallback

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        m = Mutator(rng, max_size=max_size, byte_mutator=byte_mutator)
        fresh = not data or rng.random() < 0.02
        if kind == "request":
            if fresh:
                header, body, version = random_request(rng)
                return m._bound(encode_request(header, body, version))
            return m.mutate_request_frame(data)
        if kind == "response":
            if fresh or len(data) < 4:
                return m._bound(_fresh_response(rng))
            api_key, version = _RESPONSE_PREFIX.unpack_from(data)
            cls = RESPONSES.get(api_key)
            if cls is None or version not in cls.VERSIONS:
                return m._bound(data[:4] + m.mutate_bytes(data[4:]))
            return m._bound(data[:4] + m.mutate_response_frame(data[4:], api_key, version))
        if fresh:
            return m._bound(random_batch(rng))
        return m.mutate_records(data)

    return mutate


def _fresh_response(rng: random.Random) -> bytes:
    """``api key, api version`` and a valid response frame (the ``response`` input layout)."""
    apis = catalog()
    api = apis[rng.randrange(len(apis))]
    version = api.versions[rng.randrange(len(api.versions))]
    body = random_message(api.response, version, rng)
    header = random_message(ResponseHeader, response_header_version(api.api_key, version), rng)
    return _RESPONSE_PREFIX.pack(api.api_key, version) + encode_response(header, body, version)
