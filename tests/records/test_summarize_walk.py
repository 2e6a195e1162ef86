"""The records' C walk without record objects (``summarize_records_v2``, compiled flavour), as
the broker's log validator uses it (``validation._passes_as_is``) for a v2 batch kept in its
codec: every append is decided exactly as the full check that makes every record decides it
(same offsets, bytes, errors, record errors and work), on valid, late, keyless, gapped,
LogAppendTime, control and corrupted batches of every codec. Here rather than under
``tests/broker`` (which ``tools/test_flavours.py`` runs on the pure flavour only), so that the
compiled run has it; the pure run skips it, having no C walk."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.broker.log import validation
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.records import TimestampType, build_batch, build_commit_marker, loops
from kafka_wire.records.constants import RECORD_BATCH_OVERHEAD
from kafka_wire.records.crc import crc32c
from tests.records.helpers import CODECS_V2, EXAMPLES, v2_records

pytestmark = pytest.mark.skipif(
    loops.summarize_records_v2 is None,
    reason="the C walk is the compiled flavour's (KAFKA_WIRE_COMPILE=1, KAFKA_WIRE_PURE unset)",
)

NOW = 1_700_000_000_000


def both(data: bytes, config: LogConfig, monkeypatch: pytest.MonkeyPatch, now: int = NOW) -> tuple[Any, bool]:
    """``validate_records`` with the C walk, and whether it decided (the full check's result must
    be the same)."""
    taken = []
    walk = validation._passes_as_is

    def spy(*args: Any) -> Any:
        out = walk(*args)
        taken.append(out is not None)
        return out

    def run() -> Any:
        return validation.validate_records(
            data,
            config,
            now,
            next_offset=100,
            leader_epoch=3,
            assign_offsets=True,
            origin="client",
            log_append_time=config.log_append_time,
        )

    with monkeypatch.context() as m:
        m.setattr(validation, "_passes_as_is", spy)
        quick = run()
    with monkeypatch.context() as m:
        m.setattr(validation, "summarize_records_v2", None)
        full = run()
    assert quick == full
    return quick, any(taken)


def with_crc(data: bytearray) -> bytes:
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def gapped() -> bytes:
    """Three records whose second has offset delta 2 (its varint byte 4 where 2 was)."""
    data = bytearray(build_batch([(b"k", b"v", [], NOW)] * 3))
    second = RECORD_BATCH_OVERHEAD + 9  # the first record is 9 bytes: length 8, then 8 bytes
    assert data[second + 3] == 2
    data[second + 3] = 4
    return with_crc(data)


def overlong() -> bytes:
    """Three records in a batch whose header declares two (offsets 0..1): bytes left after them."""
    data = bytearray(build_batch(records(3)))
    data[23:27] = (1).to_bytes(4, "big")  # last offset delta
    data[57:61] = (2).to_bytes(4, "big")  # record count
    return with_crc(data)


def records(n: int, key: bytes | None = b"k", ts: int = NOW) -> list[tuple[Any, ...]]:
    return [(key, b"v%d" % i * 20, [("h", b"x")], ts + i) for i in range(n)]


@pytest.mark.parametrize("codec", CODECS_V2)
def test_a_batch_that_passes_is_walked_in_c(codec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = build_batch(records(50), compression=codec) + build_batch(records(3), compression=codec)
    result, walked = both(data, LogConfig(), monkeypatch)
    assert isinstance(result, validation.ValidRecords) and walked
    assert (result.first_offset, result.last_offset) == (100, 152)


@pytest.mark.parametrize(
    ("data", "config", "walked"),
    [
        (build_batch(records(5, ts=NOW + 7_200_000)), LogConfig(), False),  # too far ahead
        (build_batch(records(5, ts=0)), LogConfig(message_timestamp_before_max_ms=1000), False),
        (build_batch(records(5, key=None)), LogConfig(cleanup_policy=("compact",)), False),
        (build_batch(records(5, key=None)), LogConfig(), True),
        (build_batch(records(5, ts=0)), LogConfig(message_timestamp_type="LogAppendTime"), True),
        (
            build_batch(records(5), timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW),
            LogConfig(message_timestamp_before_max_ms=10),
            True,
        ),
        (build_batch(records(4), compression="lz4"), LogConfig(compression_type="zstd"), False),
        (gapped(), LogConfig(), False),
        (overlong(), LogConfig(), False),
        (
            build_commit_marker(producer_id=7, producer_epoch=0, coordinator_epoch=1, timestamp=NOW),
            LogConfig(),
            False,
        ),
    ],
)
def test_what_the_c_walk_leaves_to_the_full_check(
    data: bytes, config: LogConfig, walked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert both(data, config, monkeypatch)[1] == walked


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    batch=v2_records(max_size=20),
    codec=st.sampled_from(CODECS_V2),
    compact=st.booleans(),
    changes=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=3),
    now=st.integers(2**20, 2**50),
)
def test_any_batch_is_decided_as_the_full_check_decides(
    batch: list[tuple[Any, ...]], codec: str, compact: bool, changes: list[tuple[int, int]], now: int
) -> None:
    """Random records and codecs, with bytes of the records changed and the CRC made right again
    (so the walk sees them): the same result with and without it."""
    data = bytearray(build_batch(batch, compression=codec))
    for at, byte in changes:
        if len(data) > RECORD_BATCH_OVERHEAD:
            data[RECORD_BATCH_OVERHEAD + at % (len(data) - RECORD_BATCH_OVERHEAD)] = byte
    config = LogConfig(cleanup_policy=("compact",) if compact else ("delete",))
    with pytest.MonkeyPatch.context() as monkeypatch:
        both(with_crc(data), config, monkeypatch, now)
