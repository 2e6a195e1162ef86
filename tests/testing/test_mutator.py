"""The structure-aware mutator: deterministic, bounded, every kind reached, and hostile enough.

"Hostile enough" is measured: over many seeds, a fair share of the outputs still decode (the
mutation reached past the framing into the values) and a fair share are rejected with a
``DecodeError`` (the mutation broke the encoding). Every output fed to our decoders gives a value
or a ``DecodeError``, nothing else.
"""

from __future__ import annotations

import random
import struct
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import decode_request
from kafka_wire.errors import DecodeError
from kafka_wire.messages import FetchResponse, MetadataRequest, ProduceRequest, ResponseHeader
from kafka_wire.protocol.framing import decode_request_frame, decode_response, encode_request, encode_response
from kafka_wire.records import read_batches
from kafka_wire.testing.generate import random_batch, random_message, random_request
from kafka_wire.testing.mutator import (
    BATCH_MUTATIONS,
    BYTES_MUTATIONS,
    ENCODING_MUTATIONS,
    REQUEST_FRAME_MUTATIONS,
    RESPONSE_FRAME_MUTATIONS,
    SET_MUTATIONS,
    VALUE_MUTATIONS,
    Mutator,
    libfuzzer_mutator,
    mutated_record_batches,
    mutated_requests,
    mutated_responses,
    tokenize,
)

CAPTURES = {
    p.name: bytes.fromhex(p.read_text().strip())
    for p in sorted((Path(__file__).parent.parent / "data" / "captures").glob("*.hex"))
}


def request_frame(rng: random.Random) -> bytes:
    header, body, version = random_request(rng)
    return encode_request(header, body, version)


def decodes(frame: bytes) -> bool:
    """True when the request frame decodes, False for a DecodeError; anything else propagates."""
    try:
        decode_request_frame(frame)
    except DecodeError:
        return False
    return True


def read_all(data: bytes) -> bool:
    try:
        for batch in read_batches(data):
            for _record in batch:
                pass
    except DecodeError:
        return False
    return True


def response_case(rng: random.Random) -> tuple[bytes, int, int]:
    api_key, version = rng.choice([(1, 12), (3, 9), (18, 3), (0, 9), (60, 0)])
    from kafka_wire.messages import RESPONSES
    from kafka_wire.protocol.framing import response_header_version

    body = random_message(RESPONSES[api_key], version, rng)
    header = random_message(ResponseHeader, response_header_version(api_key, version), rng)
    return encode_response(header, body, version), api_key, version


# ------------------------------------------------------------------------- determinism


def test_same_seed_same_bytes() -> None:
    def run(seed: int) -> list[bytes]:
        rng = random.Random(seed)
        m = Mutator(rng)
        frame = request_frame(rng)
        response, api_key, version = response_case(rng)
        body = random_message(ProduceRequest, 9, rng)
        out = []
        for _ in range(30):
            out.append(m.mutate_request_frame(frame))
            out.append(m.mutate_response_frame(response, api_key, version))
            out.append(m.mutate_records(random_batch(rng)))
            out.append(m.mutate_bytes(frame))
            out.append(m.mutate_encoding(body, 9))
            out.append(m.mutate_message(body, 9).encode(9))
        return out

    assert run(11) == run(11)
    assert run(11) != run(12)


# ------------------------------------------------------------------ frames: every kind


def test_every_request_mutation_kind_occurs_and_bites() -> None:
    kinds: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    outcome: Counter[bool] = Counter()
    inputs = list(CAPTURES.values())
    for seed in range(3000):
        rng = random.Random(seed)
        frame = inputs[seed % len(inputs)] if seed % 2 else request_frame(rng)
        m = Mutator(rng)
        out = m.mutate_request_frame(frame)
        kinds.update(m.applied)
        if out != frame:
            changed[m.applied[0]] += 1
        outcome[decodes(out)] += 1  # a value or a DecodeError, nothing else
    for name in (*REQUEST_FRAME_MUTATIONS, *ENCODING_MUTATIONS, *VALUE_MUTATIONS, *BYTES_MUTATIONS):
        if name in ("value_float", "value_bytes"):
            continue  # few requests have such fields; the message test below reaches them
        assert kinds[name] > 0, name
    for name in REQUEST_FRAME_MUTATIONS:
        assert changed[name] > kinds[name] // 2, name  # the output differs from the input, mostly
    share_ok = outcome[True] / sum(outcome.values())
    assert 0.25 < share_ok < 0.85, share_ok  # both outcomes are common


def test_every_response_mutation_kind_occurs() -> None:
    kinds: Counter[str] = Counter()
    outcome: Counter[bool] = Counter()
    for seed in range(1500):
        rng = random.Random(seed)
        frame, api_key, version = response_case(rng)
        m = Mutator(rng)
        out = m.mutate_response_frame(frame, api_key, version)
        kinds.update(m.applied)
        try:
            decode_response(out, api_key, version)
            outcome[True] += 1
        except DecodeError:
            outcome[False] += 1
    assert set(RESPONSE_FRAME_MUTATIONS) <= set(kinds)
    assert outcome[True] > 300 and outcome[False] > 300, outcome


def test_value_mutations_keep_messages_encodable_and_leave_the_input_alone() -> None:
    kinds: Counter[str] = Counter()
    different = 0
    for seed in range(1500):
        rng = random.Random(seed)
        # Any request, and often one with records (Produce) or a float64 (AlterClientQuotas) in it.
        _header, body, version = random_request(rng, api_keys=[(0, 49)[seed % 2]] if seed % 3 else None)
        before = body.encode(version)
        m = Mutator(rng)
        out = m.mutate_message(body, version)
        kinds.update(m.applied)
        encoded = out.encode(version)  # never raises
        assert body.encode(version) == before
        assert type(out).decode(encoded, version) is not None
        different += encoded != before
    assert set(VALUE_MUTATIONS) <= set(kinds), set(VALUE_MUTATIONS) - set(kinds)
    assert different > 1200


def test_tokens_join_to_the_encoding() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        _header, body, version = random_request(rng)
        assert b"".join(t.data for t in tokenize(body, version)) == body.encode(version)


def test_wire_mutations_break_what_they_say() -> None:
    """Overlong compact lengths still decode to the same value; a 6-byte one is refused; a
    duplicate unknown tag and a lying tag size are seen by the decoder."""
    msg = MetadataRequest(topics=None, allow_auto_topic_creation=True)
    version = 12
    plain = msg.encode(version)
    m = Mutator(random.Random(0))
    seen: Counter[str] = Counter()
    results: dict[str, Counter[bool]] = {}
    for _ in range(2000):
        out = m.mutate_encoding(msg, version)
        name = m.applied[0]
        seen[name] += 1
        try:
            decoded = MetadataRequest.decode(out, version, strict=True)
            ok = True
            if name == "varint_overlong" and len(out) - len(plain) <= 4:
                assert decoded.encode(version) == plain  # same value, canonical form again
        except DecodeError:
            ok = False
        results.setdefault(name, Counter())[ok] += 1
    assert results["length_huge"][False] > 0
    assert results["varint_overlong"][True] > 0 and results["varint_overlong"][False] > 0
    assert results["tag_size_wrong"][False] > 0
    assert results["tag_unknown"][True] > 0


# ------------------------------------------------------------------------------ records


def test_records_every_kind_magic_and_codec() -> None:
    kinds: Counter[str] = Counter()
    outcome: Counter[bool] = Counter()
    for seed in range(3000):
        rng = random.Random(seed)
        m = Mutator(rng)
        data = m.mutate_records(b"")  # a fresh batch of some magic and codec, mutated
        data = m.mutate_records(data)
        kinds.update(m.applied)
        outcome[read_all(data)] += 1
    for name in (*BATCH_MUTATIONS, *SET_MUTATIONS, "crc_fixed"):
        assert kinds[name] > 0, name
    for magic in (0, 1, 2):
        for codec in ("none", "gzip", "snappy", "lz4", *(("zstd",) if magic == 2 else ())):
            assert kinds[f"magic{magic}_{codec}"] > 0, (magic, codec)
    assert outcome[True] > 600 and outcome[False] > 600, outcome


def test_record_mutations_reach_past_the_crc() -> None:
    """With the CRC recomputed, a batch whose records were changed inside fails (when it fails)
    on the records, not on the checksum."""
    from kafka_wire.errors import CorruptBatchError

    failures: Counter[str] = Counter()
    for seed in range(800):
        rng = random.Random(seed)
        m = Mutator(rng)
        batch = random_batch(rng, max_records=3)
        if batch[57:61] == bytes(4):
            continue  # no record to change: the mutation changes a header field instead
        out = BATCH_MUTATIONS["batch_record_wire"](m, batch)
        if "crc_fixed" not in m.applied:
            continue
        try:
            for b in read_batches(out):
                for _r in b:
                    pass
        except CorruptBatchError as exc:
            failures["crc" if "CRC" in str(exc) or "crc" in str(exc) else "other"] += 1
        except DecodeError:
            failures["other"] += 1
    assert failures["other"] > 50 and failures["crc"] == 0, failures


# ------------------------------------------------------------------------------ bounds


def test_output_never_exceeds_max_size() -> None:
    big = CAPTURES["aiokafka-produce-v7-none.hex"]
    for seed in range(400):
        rng = random.Random(seed)
        m = Mutator(rng, max_size=96)
        assert len(m.mutate_request_frame(big)) <= 96
        assert len(m.mutate_records(random_batch(rng, max_records=4))) <= 96
        assert len(m.mutate_bytes(big)) <= 96
        assert len(m.mutate_encoding(random_message(ProduceRequest, 9, rng), 9)) <= 96
    m = Mutator(random.Random(0))
    assert all(len(m.mutate_request_frame(big)) <= 1 << 16 for _ in range(300))


def test_fast_on_captured_frames() -> None:
    m = Mutator(random.Random(0))
    n = 0
    start = time.perf_counter()
    for _ in range(5):
        for frame in CAPTURES.values():
            m.mutate_request_frame(frame)
            n += 1
    assert (time.perf_counter() - start) / n < 1e-3


# --------------------------------------------------------------------- decoders survive


def test_every_output_decodes_or_raises_decode_error() -> None:
    for seed in range(2000):
        rng = random.Random(seed)
        frame = request_frame(rng)
        m = Mutator(rng)
        for _ in range(rng.randint(1, 4)):
            frame = m.mutate_request_frame(frame)
            try:
                decode_request(frame)
            except DecodeError:
                pass


# ---------------------------------------------------------------------------- Hypothesis


@settings(max_examples=150)
@given(mutated_requests())
def test_strategy_any_request(frame: bytes) -> None:
    assert isinstance(frame, bytes)
    decodes(frame)


@settings(max_examples=80)
@given(mutated_requests(ProduceRequest, 9))
def test_strategy_one_request(frame: bytes) -> None:
    if decodes(frame):
        header, body = decode_request(frame)
        assert (
            isinstance(body, ProduceRequest) or header.request_api_key != 0 or header.request_api_version != 9
        )


@settings(max_examples=80)
@given(mutated_responses(FetchResponse, 12))
def test_strategy_responses(frame: bytes) -> None:
    try:
        decode_response(frame, 1, 12)
    except DecodeError:
        pass


@settings(max_examples=80)
@given(mutated_record_batches())
def test_strategy_record_batches(data: bytes) -> None:
    read_all(data)


# ------------------------------------------------------------------------------- atheris


@pytest.mark.parametrize("kind", ["request", "response", "records"])
def test_libfuzzer_mutator_is_deterministic_and_bounded(kind: str) -> None:
    mutate = libfuzzer_mutator(kind)
    rng = random.Random(kind)
    if kind == "request":
        data = request_frame(rng)
    elif kind == "response":
        frame, api_key, version = response_case(rng)
        data = struct.pack(">hh", api_key, version) + frame
    else:
        data = random_batch(rng)
    outputs = set()
    for seed in range(200):
        out = mutate(data, 300, seed)
        assert out == mutate(data, 300, seed)
        assert len(out) <= 300
        outputs.add(out)
    assert len(outputs) > 100
    assert mutate(b"", 4096, 1)  # empty input: a fresh valid one


def test_libfuzzer_response_layout() -> None:
    mutate = libfuzzer_mutator("response")
    out = mutate(b"", 1 << 16, 5)
    api_key, version = struct.unpack_from(">hh", out)
    decode_response(out[4:], api_key, version)  # a fresh input is a valid response


def test_libfuzzer_fallback_is_called_for_undecodable_input() -> None:
    calls: list[bytes] = []

    def fallback(data: bytes, max_size: int) -> bytes:
        calls.append(data)
        return data[::-1]

    mutate = libfuzzer_mutator("request", fallback=fallback)
    data = b"\x00\x00\x00\x01garbage"
    out = mutate(data, 100, 3)
    assert calls == [data]
    assert out[4:] == data[::-1][4:]  # the size prefix may have been set to what follows


def test_libfuzzer_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="kind"):
        libfuzzer_mutator("bogus")


@given(st.binary(max_size=64), st.integers(0, 2**32 - 1))
def test_libfuzzer_mutator_takes_any_input(data: bytes, seed: int) -> None:
    for kind in ("request", "response", "records"):
        assert len(libfuzzer_mutator(kind)(data, 128, seed)) <= 128


def test_batch_header_mutation_takes_any_attributes() -> None:
    """Regression: flipping an attribute bit of a batch whose attributes are negative (int16)
    overflowed the int16 packer."""
    from kafka_wire.testing.mutations.records import BATCH_MUTATIONS as batch_mutations

    batch = bytearray(random_batch(random.Random(0), max_records=1))
    struct.pack_into(">h", batch, 21, -1)
    for seed in range(300):
        out = batch_mutations["batch_header_field"](Mutator(random.Random(seed)), bytes(batch))
        assert len(out) == len(batch)
