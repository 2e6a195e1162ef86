"""Record value encryption: values encrypted on their way to the broker, decrypted on their way back.

Envelope encryption with AES-256-GCM (the ``cryptography`` package). Each produced v2 batch gets
a fresh 256-bit data key; every value of the batch is encrypted with it under a nonce made of a
random 8-byte batch prefix and the record's 4-byte index.
The data key is wrapped by a key-encryption key from a :class:`KeyService` (a key file by
default: :class:`KeyFile`) and travels in a record header, ``kafka-wire-encryption``, on each
encrypted record (``version 1 | key id length | key id | wrapped key length | wrapped key | nonce``),
so each record decrypts alone, whatever compaction or retention removes around it.

A payload holding a legacy (v0/v1) message set passes unchanged, as do control batches and
null values. Batches keep their compression: the filter decompresses, encrypts the values and compresses
again with the batch's codec; offsets deltas, timestamps, producer id, epoch, sequence and the
transactional flag are kept, so idempotent and transactional producers work through it.

Fetch responses are decrypted for every consumer connected through the proxy; a consumer that
reads the broker directly (or through a proxy without the key) sees the ciphertext and the header.
A record whose key is unknown to the key service is passed on encrypted, with a log line.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kafka_wire.errors import DecodeError
from kafka_wire.messages import ApiKey, FetchResponse, ProduceRequest
from kafka_wire.proxy.filters import FORWARD, Call, Filter, Outcome
from kafka_wire.records import build_batch, read_batches
from kafka_wire.records.batch import RecordBatch

#: The record header that marks an encrypted value.
HEADER: Final = "kafka-wire-encryption"
_VERSION: Final = 1
_KEY_BYTES: Final = 32
_U16: Final = struct.Struct(">H")
_INDEX: Final = struct.Struct(">I")
#: Unwrapped data keys kept for the next records of their batch and later fetches of it.
_MAX_CACHED_KEYS: Final = 4096
_log = logging.getLogger("kafka_wire.proxy.encryption")


class KeyService(Protocol):
    """Wraps and unwraps data keys with key-encryption keys it keeps (a key file, a KMS)."""

    def wrap(self, data_key: bytes) -> tuple[str, bytes]:
        """The id of the key used and the wrapped data key."""
        ...

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        """The data key; KeyError for an unknown key id, ValueError for a wrapped key that fails."""
        ...


class KeyFile:
    """Key-encryption keys from a text file: ``ID=HEX`` lines (64 hex digits, 256 bits); the first
    key wraps new data keys, every key unwraps. ``#`` starts a comment."""

    def __init__(self, keys: Mapping[str, bytes], random_bytes: Callable[[int], bytes]) -> None:
        if not keys:
            raise ValueError("a key file needs at least one key")
        for key_id, key in keys.items():
            if len(key) != _KEY_BYTES or not key_id or len(key_id.encode()) > 255:
                raise ValueError(f"key {key_id!r} must be 32 bytes (64 hex digits) with a 1-255 byte id")
        self._keys = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self.current = next(iter(keys))
        self._random = random_bytes

    @classmethod
    def load(cls, path: Path, random_bytes: Callable[[int], bytes]) -> KeyFile:
        keys: dict[str, bytes] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                key_id, sep, text = line.partition("=")
                if not sep:
                    raise ValueError(f"{path}: {line!r} is not ID=HEX")
                keys[key_id.strip()] = bytes.fromhex(text.strip())
        return cls(keys, random_bytes)

    def wrap(self, data_key: bytes) -> tuple[str, bytes]:
        nonce = self._random(12)
        return self.current, nonce + self._keys[self.current].encrypt(nonce, data_key, self.current.encode())

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        aead = self._keys[key_id]
        try:
            return aead.decrypt(wrapped[:12], wrapped[12:], key_id.encode())
        except Exception as exc:  # cryptography's InvalidTag
            raise ValueError(f"data key wrapped by {key_id!r} does not authenticate") from exc


def _header(key_id: str, wrapped: bytes, nonce: bytes) -> bytes:
    """The header's value; ``nonce`` may be its first bytes only (the rest appended later)."""
    kid = key_id.encode()
    return bytes((_VERSION, len(kid))) + kid + _U16.pack(len(wrapped)) + wrapped + nonce


def _parse_header(value: bytes) -> tuple[str, bytes, bytes]:
    if len(value) < 2 or value[0] != _VERSION:
        raise ValueError("unknown encryption header version")
    end = 2 + value[1]
    key_id = value[2:end].decode()
    (length,) = _U16.unpack_from(value, end)
    wrapped = value[end + 2 : end + 2 + length]
    nonce = value[end + 2 + length :]
    if len(wrapped) != length or len(nonce) != 12:
        raise ValueError("truncated encryption header")
    return key_id, wrapped, nonce


def _rebuild(batch: RecordBatch[Any], records: Sequence[object], offset_deltas: list[int]) -> bytes:
    """``batch`` with ``records`` in place of its own, every other header field kept."""
    log_append = batch.max_timestamp if batch.timestamp_type == 1 else None
    return build_batch(
        records,
        compression=batch.compression,
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        timestamp_type=batch.timestamp_type,
        log_append_time=log_append,
        default_timestamp=batch.base_timestamp,
        max_timestamp=None if log_append is not None else batch.max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        offset_deltas=offset_deltas,
        last_offset_delta=batch.last_offset_delta,
    )


class RecordEncryption(Filter):
    """Encrypts produced values and decrypts fetched ones (see the module docstring).

    ``topics``: the topics whose values are encrypted (None: every topic). ``random_bytes`` is the
    source of keys and nonces (``os.urandom``; injected, as the core draws no randomness itself).
    """

    name: ClassVar[str] = "encrypt"
    request_keys = frozenset({ApiKey.PRODUCE})
    response_keys = frozenset({ApiKey.FETCH})

    def __init__(
        self, keys: KeyService, random_bytes: Callable[[int], bytes], *, topics: Iterable[str] | None = None
    ) -> None:
        self.keys = keys
        self.random_bytes = random_bytes
        self.topics = None if topics is None else frozenset(topics)
        #: Unwrapped data keys by their wrapped form (bounded: cleared when full).
        self._ciphers: dict[tuple[str, bytes], AESGCM] = {}

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], random_bytes: Callable[[int], bytes]
    ) -> RecordEncryption:
        path = options.get("key-file")
        if not path:
            raise ValueError("encrypt needs key-file=PATH (lines of ID=64 hex digits)")
        topics = options.get("topics")
        return cls(
            KeyFile.load(Path(path), random_bytes),
            random_bytes,
            topics=None if not topics else [t for t in topics.split(";") if t],
        )

    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        # Produce v13 names topics by id only: a topic list needs the names of v12 and before.
        return {} if self.topics is None else {ApiKey.PRODUCE: (3, 12)}

    # -- produce ---------------------------------------------------------------------------------

    def on_request(self, call: Call) -> Outcome:
        body = call.body
        assert isinstance(body, ProduceRequest)
        for topic in body.topic_data:
            if self.topics is not None and topic.name not in self.topics:
                continue
            for partition in topic.partition_data:
                if partition.records:
                    partition.records = self.encrypt(partition.records)
        return FORWARD

    def encrypt(self, records: bytes | memoryview) -> bytes | memoryview:
        """A records payload with every v2 batch's values encrypted."""
        out: list[bytes] = []
        data = bytes(records)
        for batch in read_batches(data):
            if not isinstance(batch, RecordBatch):
                return records  # a legacy message set: left as it is
            start = batch.position
            if batch.is_control:
                out.append(data[start : start + batch.size_in_bytes])
                continue
            data_key = self.random_bytes(_KEY_BYTES)
            key_id, wrapped = self.keys.wrap(data_key)
            seal = AESGCM(data_key).encrypt
            prefix = self.random_bytes(8)
            # Every record's header is the batch's part (key id, wrapped key, nonce prefix) and
            # its own index: built once here, then one concatenation per record.
            head = _header(key_id, wrapped, prefix)
            pack_index, base = _INDEX.pack, batch.base_offset
            new: list[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]] = []
            deltas: list[int] = []
            for index, record in enumerate(batch):
                value, headers = record.value, record.headers
                if value is not None:
                    packed = pack_index(index)
                    value = seal(prefix + packed, value, None)
                    mark = (HEADER, head + packed)
                    headers = [*headers, mark] if headers else [mark]
                new.append((record.key, value, headers, record.timestamp))
                deltas.append(record.offset - base)
            out.append(_rebuild(batch, new, deltas))
        return b"".join(out)

    # -- fetch -----------------------------------------------------------------------------------

    def on_response(self, call: Call) -> Outcome:
        body = call.response
        assert isinstance(body, FetchResponse)
        for topic in body.responses:
            for partition in topic.partitions:
                if partition.records:
                    partition.records = self.decrypt(partition.records)
        return FORWARD

    def decrypt(self, records: bytes | memoryview) -> bytes | memoryview:
        """A records payload with encrypted values decrypted; batches without one stay as they are
        (a trailing partial batch too)."""
        data = bytes(records)
        out: list[bytes] = []
        end = 0
        changed = False
        try:
            for batch in read_batches(data):
                if not isinstance(batch, RecordBatch):
                    return records  # a legacy message set: never encrypted here
                start = batch.position
                end = start + batch.size_in_bytes
                raw = data[start:end]
                if not batch.is_control:
                    rebuilt = self._decrypt_batch(batch)
                    if rebuilt is not None:
                        out.append(rebuilt)
                        changed = True
                        continue
                out.append(raw)
        except DecodeError as exc:
            _log.warning("records not decrypted: %s", exc)
            return records
        if not changed:
            return records
        out.append(data[end:])
        return b"".join(out)

    def _cipher(self, key_id: str, wrapped: bytes) -> AESGCM:
        """The cipher of a wrapped data key, unwrapped once (a batch's records share it)."""
        cipher = self._ciphers.get((key_id, wrapped))
        if cipher is None:
            if len(self._ciphers) >= _MAX_CACHED_KEYS:
                self._ciphers.clear()
            cipher = self._ciphers[(key_id, wrapped)] = AESGCM(self.keys.unwrap(key_id, wrapped))
        return cipher

    def _decrypt_batch(self, batch: RecordBatch[Any]) -> bytes | None:
        new: list[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]] = []
        deltas: list[int] = []
        changed = False
        base = batch.base_offset
        # The records of a batch share their header but for the nonce's last bytes: the part
        # before the nonce is parsed (and its key unwrapped) once, then recognised by equality.
        last_head: bytes | None = None
        open_: Callable[[bytes, bytes, None], bytes] | None = None
        for record in batch:
            value, headers = record.value, record.headers
            mark = None
            if headers:
                for k, v in headers:
                    if k == HEADER:
                        mark = v
                        break
            if mark is not None and value is not None:
                try:
                    mark = bytes(mark)
                    head, nonce = mark[:-12], mark[-12:]
                    if head != last_head or open_ is None:
                        key_id, wrapped, nonce = _parse_header(mark)
                        open_ = self._cipher(key_id, wrapped).decrypt
                        last_head = head
                    value = open_(nonce, value, None)
                    # Usually the mark is the only header (no list to build then).
                    headers = () if len(headers) == 1 else [(k, v) for k, v in headers if k != HEADER]
                    changed = True
                except (KeyError, ValueError, UnicodeDecodeError) as exc:
                    last_head = None
                    _log.warning("record at offset %d left encrypted: %s", record.offset, exc)
                except Exception as exc:  # cryptography's InvalidTag
                    _log.warning(
                        "record at offset %d does not authenticate: %s", record.offset, type(exc).__name__
                    )
            new.append((record.key, value, headers, record.timestamp))
            deltas.append(record.offset - base)
        return _rebuild(batch, new, deltas) if changed else None
