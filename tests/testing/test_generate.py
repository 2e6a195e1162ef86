"""random_message / random_request: valid by construction, deterministic, fast enough to fuzz with."""

from __future__ import annotations

import random
import time

import pytest

from kafka_wire import decode_request
from kafka_wire.codec import interp
from kafka_wire.codec.structs import Message
from kafka_wire.messages import DATA, HEADERS, REQUESTS, ProduceRequest, RequestHeader, catalog
from kafka_wire.protocol.framing import encode_request, request_header_version
from kafka_wire.records import read_batches
from kafka_wire.testing.generate import random_batch, random_message, random_request

CASES = [
    pytest.param(cls, v, id=f"{cls.__name__}-v{v}")
    for api in catalog()
    for cls in (api.request, api.response)
    for v in api.versions
] + [pytest.param(cls, v, id=f"{cls.__name__}-v{v}") for cls in HEADERS + DATA for v in cls.VERSIONS]

DRAWS = 12


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_every_message_round_trips(cls: type[Message], version: int) -> None:
    rng = random.Random(f"{cls.__name__}-{version}")
    for _ in range(DRAWS):
        msg = random_message(cls, version, rng)
        encoded = msg.encode(version)
        decoded = cls.decode(encoded, version, strict=True)
        assert decoded == msg
        assert decoded.encode(version) == encoded
        reference = bytearray()
        interp.encode(msg, version, reference)  # the independent codec agrees
        assert bytes(reference) == encoded


def test_same_seed_same_messages() -> None:
    def draw(seed: int) -> list[bytes]:
        rng = random.Random(seed)
        out = []
        for _ in range(200):
            header, body, version = random_request(rng)
            out.append(encode_request(header, body, version))
        return out

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_requests_cover_apis_and_versions_and_decode() -> None:
    rng = random.Random(1)
    seen: set[tuple[int, int]] = set()
    for _ in range(3000):
        header, body, version = random_request(rng)
        assert body.API_KEY == header.request_api_key
        assert version == header.request_api_version
        frame = encode_request(header, body, version)
        decoded_header, decoded_body = decode_request(frame, strict=True)
        assert decoded_body == body
        assert decoded_header.correlation_id == header.correlation_id
        seen.add((header.request_api_key, version))
    assert {key for key, _ in seen} == set(REQUESTS)
    assert len(seen) > 300  # of 368 (api, version) pairs


def test_request_choice_is_restricted() -> None:
    rng = random.Random(2)
    for _ in range(200):
        header, _body, version = random_request(rng, api_keys=[0, 1], versions={0: (3, 5)})
        assert header.request_api_key in (0, 1)
        if header.request_api_key == 0:
            assert 3 <= version <= 5
    with pytest.raises(ValueError, match="no version"):
        random_request(rng, api_keys=[0], versions={0: (100, 200)})
    with pytest.raises(ValueError, match="unknown api key"):
        random_request(rng, api_keys=[9999])


def test_header_version_follows_the_api() -> None:
    rng = random.Random(3)
    for _ in range(300):
        header, _body, version = random_request(rng, api_keys=[7])  # ControlledShutdown: v0 has header v0
        frame = encode_request(header, _body, version)
        assert decode_request(frame, strict=True)[0] == header
        if version == 0:
            assert request_header_version(7, 0) == 0
            assert header.client_id == ""  # header v0 has no client id


def test_boundaries_and_nulls_are_drawn() -> None:
    rng = random.Random(4)
    values = [random_message(RequestHeader, 1, rng) for _ in range(400)]
    correlation_ids = {h.correlation_id for h in values}
    assert {0, -1, 2**31 - 1, -(2**31)} <= correlation_ids
    assert any(h.client_id is None for h in values)
    assert any(h.client_id for h in values)


def test_records_fields_hold_valid_batches_and_arbitrary_bytes() -> None:
    rng = random.Random(5)
    batch = random_batch(rng, max_records=3)
    assert sum(1 for _ in read_batches(batch)) == 1
    valid = invalid = 0
    for _ in range(200):
        data = random_message(ProduceRequest, 9, rng).topic_data
        for topic in data:
            for partition in topic.partition_data:
                if partition.records is None:
                    continue
                try:
                    list(read_batches(bytes(partition.records)))
                    valid += len(partition.records) > 0
                except Exception:
                    invalid += 1
    assert valid > 20 and invalid > 5


def test_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="no version"):
        random_message(RequestHeader, 9, random.Random(0))


def test_fast() -> None:
    rng = random.Random(6)
    random_request(rng)  # warm the plans of a few classes
    start = time.perf_counter()
    n = 2000
    for _ in range(n):
        random_request(rng)
    per_request = (time.perf_counter() - start) / n
    assert per_request < 2e-3, per_request
