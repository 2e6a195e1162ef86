"""Compaction: the latest record per key stays, offsets never change, tombstones expire late."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.broker.effects import Rename
from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.records import build_batch, read_batches

from .helpers import CODECS, DIR, MIB, Driven, all_records, contents, noise

DAY = 86_400_000
COMPACT = LogConfig(
    cleanup_policy=("compact",), segment_bytes=MIB, min_cleanable_dirty_ratio=0.01, delete_retention_ms=DAY
)


def _v(tag: bytes, size: int = 100_000) -> bytes:
    """A value starting with ``tag``, ``size`` bytes longer: ten to a segment of COMPACT."""
    return tag + noise(size, tag)


def _put(
    d: Driven,
    pairs: list[tuple[bytes, bytes | None]],
    now_ms: int = 1000,
    compression: str = "none",
    **kw: Any,
) -> None:
    r = d.append(
        build_batch([(k, v, (), now_ms) for k, v in pairs], compression=compression, **kw), now_ms=now_ms
    )
    assert r.error_code == 0, r


def _latest(history: list[tuple[int, bytes, bytes | None]]) -> dict[bytes, tuple[int, bytes | None]]:
    out: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, key, value in history:
        out[key] = (offset, value)
    return out


def _run(d: Driven, now_ms: int, rounds: int = 50) -> None:
    for _ in range(rounds):
        d.maintain(now_ms)
        if d.log.cleaner_job is None and d.log.next_deadline_ms() not in (now_ms,):
            break


@settings(max_examples=20)
@given(
    writes=st.lists(
        st.tuples(
            st.integers(0, 7),
            st.one_of(st.none(), st.binary(min_size=1, max_size=40)),
            st.sampled_from(CODECS),
        ),
        min_size=1,
        max_size=60,
    ),
    per_call=st.sampled_from([300_000, 1_500_000, 1 << 30]),
    map_entries=st.sampled_from([2, 3, 100]),
)
def test_latest_value_per_key_survives_with_its_offset(
    writes: list[tuple[int, bytes | None, str]], per_call: int, map_entries: int
) -> None:
    d = Driven(COMPACT)
    d.log.cleaner_bytes_per_call = per_call
    d.log.cleaner_map_entries = map_entries
    history = []
    for key_id, drawn, codec in writes:
        key = b"key-%d" % key_id
        value = None if drawn is None else _v(drawn + b"@%d" % d.log.log_end_offset)
        history.append((d.log.log_end_offset, key, value))
        _put(d, [(key, value)], compression=codec)
    before = contents(d.log)
    active_base = d.log.segments[-1].base_offset
    _run(d, 2000)
    after = contents(d.log)
    assert set(after) <= set(before)  # nothing new, offsets unchanged
    assert [r[0] for r in after] == sorted(r[0] for r in after)
    latest = _latest(history)
    kept = {(o, k, v) for o, _, k, v in after}
    for key, (offset, value) in latest.items():
        assert (offset, key, value) in kept  # tombstones too, within delete.retention.ms
    # nothing is left twice for a key below the active segment once a full pass ran
    if map_entries >= 8:
        below = [r for r in after if r[0] < active_base]
        keys = [r[2] for r in below]
        assert len(keys) == len(set(keys))
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    assert d.log.log_end_offset == len(writes)
    # after delete.retention.ms, the tombstones go (unless in the active segment)
    _run(d, 2000 + DAY + 1)
    _run(d, 2000 + 2 * DAY + 2)
    final = contents(d.log)
    for offset, _, _, value in final:
        if value is None:
            assert offset >= d.log.segments[-1].base_offset or offset >= active_base
    # a restart sees the same log
    assert contents(d.reopen()) == final


def test_compaction_rewrites_only_closed_segments() -> None:
    d = Driven(COMPACT)
    for i in range(40):
        _put(d, [(b"k%d" % (i % 3), _v(b"v%d" % i))])
    active = d.log.segments[-1]
    active_bytes = bytes(d.storage.files[active.log.path])
    _run(d, 2000)
    assert d.log.segments[-1] is active
    assert bytes(d.storage.files[active.log.path]) == active_bytes
    assert d.log.segment_count < 10
    assert d.storage.read(f"{DIR}/cleaner-offset", 0, 20) == b"%d\n" % active.base_offset


def test_min_compaction_lag_is_honoured() -> None:
    config = LogConfig(
        cleanup_policy=("compact",),
        segment_bytes=MIB,
        min_cleanable_dirty_ratio=0.01,
        min_compaction_lag_ms=10_000,
    )
    d = Driven(config)
    for i in range(20):
        _put(d, [(b"k", _v(b"v%d" % i, 250_000))], now_ms=1000 + i)
    before = contents(d.log)
    _run(d, 5000)
    assert contents(d.log) == before
    deadline = d.log.next_deadline_ms()
    assert deadline is not None and 5000 < deadline <= 1000 + 20 + 10_000 + 1
    _run(d, 1000 + 20 + 10_001)
    assert len(contents(d.log)) < len(before)


def test_dirty_ratio_gate() -> None:
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=MIB, min_cleanable_dirty_ratio=1.0)
    d = Driven(config)
    for i in range(20):
        _put(d, [(b"k", _v(b"v%d" % i, 250_000))])
    _run(d, 5000)
    n = len(contents(d.log))
    assert n < 20  # all dirty: ratio 1.0 is reached
    for i in range(2):
        _put(d, [(b"k", b"w%d" % i)])
    d.log.roll(6000)
    d.apply()
    _run(d, 6000)
    assert d.log.cleaner_job is None


def test_tombstones_get_a_delete_horizon_then_go() -> None:
    d = Driven(COMPACT)
    _put(d, [(b"a", b"1"), (b"b", b"1")])
    _put(d, [(b"a", None)])
    d.log.roll(1000)
    d.apply()
    _run(d, 5000)
    recs = all_records(d.log)
    assert [(r.offset, r.key, r.value) for r in recs] == [(1, b"b", b"1"), (2, b"a", None)]
    data = d.log.read_bytes(d.log.read(2, 1000))
    tomb_batch = next(iter(read_batches(data)))
    assert tomb_batch.delete_horizon_ms == 5000 + DAY
    assert [r.timestamp for r in tomb_batch.records()] == [1000]
    assert d.log.delete_horizon_ms == 5000 + DAY
    _run(d, 5000 + 60_000)  # the replaced files go after file.delete.delay.ms
    assert d.log.next_deadline_ms() == 5000 + DAY
    _run(d, 5000 + DAY - 1)
    assert len(all_records(d.log)) == 2
    _run(d, 5000 + DAY)
    assert [(r.offset, r.key) for r in all_records(d.log)] == [(1, b"b")]
    assert d.log.log_end_offset == 3


def test_idempotent_batches_leave_an_empty_batch() -> None:
    d = Driven(COMPACT)
    _put(d, [(b"a", b"1"), (b"a", b"2")], producer_id=9, producer_epoch=1, base_sequence=0)
    _put(d, [(b"a", b"3")])
    d.log.roll(1000)
    d.apply()
    _run(d, 5000)
    batches = list(read_batches(d.log.read_bytes(d.log.read(0, 10**6))))
    assert [(b.base_offset, b.last_offset, b.record_count, b.producer_id) for b in batches] == [
        (0, 1, 0, 9),
        (2, 2, 1, -1),
    ]


def test_swap_is_completed_after_a_crash_at_any_point() -> None:
    rng = random.Random(3)
    for _ in range(15):
        d = Driven(COMPACT)
        for i in range(30):
            _put(d, [(b"k%d" % rng.randrange(4), _v(b"v%d" % i))])
        d.storage.apply(d.log.close())  # everything durable: the crash only cuts the cleaner's effects
        before = contents(d.log)
        latest = {k: (o, v) for o, _, k, v in before}
        d.log.maintain(2000)
        effects = d.log.take_effects()
        renames = [i for i, e in enumerate(effects) if isinstance(e, Rename)]
        assert renames
        cut = rng.randrange(len(effects) + 1)
        d.storage.apply(effects[:cut])
        d.storage.crash()
        log = PartitionLog.open(DIR, COMPACT, d.storage, 3000)
        d.storage.apply(log.take_effects())
        after = contents(log)
        assert set(after) <= set(before)
        kept = {(o, k, v) for o, _, k, v in after}
        for key, (offset, value) in latest.items():
            assert (offset, key, value) in kept
        assert log.log_end_offset == before[-1][0] + 1
        names = d.storage.list_dir(DIR)
        assert not any(n.endswith((".swap", ".cleaned")) for n in names)


def test_retention_abandons_a_running_pass() -> None:
    config = LogConfig(
        cleanup_policy=("compact", "delete"),
        segment_bytes=MIB,
        min_cleanable_dirty_ratio=0.01,
        retention_ms=10_000,
    )
    d = Driven(config)
    d.log.cleaner_bytes_per_call = 150_000
    for i in range(30):
        _put(d, [(b"k%d" % (i % 4), _v(b"v%d" % i))], now_ms=1000 + i)
    d.maintain(1500)
    assert d.log.cleaner_job is not None
    d.maintain(1000 + 29 + 10_001)
    assert not any(n.endswith(".cleaned") for n in d.storage.list_dir(DIR))
