"""LogConfig (Kafka names, defaults, validation) and the index file formats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.broker.log import CONFIG_KEYS, ConfigError, ConfigType, LogConfig
from kafka_wire.broker.log.config import LONG_MAX, REMOVED_CONFIGS
from kafka_wire.broker.log.files import EffectQueue, PendingFile
from kafka_wire.broker.log.index import OffsetIndex, TimeIndex
from kafka_wire.errors import KafkaWireError
from kafka_wire.logformat.index import (
    decode_offset_entries,
    decode_time_entries,
    encode_offset_entry,
    encode_time_entry,
)
from kafka_wire.testing.memory_storage import MemoryStorage


def test_defaults_are_kafkas() -> None:
    c = LogConfig()
    props = c.to_properties()
    assert props["segment.bytes"] == "1073741824" and props["segment.ms"] == "604800000"
    assert props["segment.index.bytes"] == "10485760" and props["index.interval.bytes"] == "4096"
    assert props["retention.ms"] == "604800000" and props["retention.bytes"] == "-1"
    assert props["cleanup.policy"] == "delete" and props["min.compaction.lag.ms"] == "0"
    assert props["max.compaction.lag.ms"] == str(LONG_MAX) and props["delete.retention.ms"] == "86400000"
    assert props["min.cleanable.dirty.ratio"] == "0.5" and props["file.delete.delay.ms"] == "60000"
    assert props["max.message.bytes"] == "1048588" and props["message.timestamp.type"] == "CreateTime"
    assert props["flush.messages"] == str(LONG_MAX) and props["flush.ms"] == str(LONG_MAX)
    for name, value in props.items():
        assert CONFIG_KEYS[name].default == value
    assert c.overrides() == {}
    assert list(CONFIG_KEYS) == sorted(CONFIG_KEYS)


def test_kafka_4_defaults_and_bounds() -> None:
    """KIP-1030's 4.0 changes: segment.bytes at least 1 MiB, future timestamps at most an hour."""
    c = LogConfig()
    assert (
        c.message_timestamp_after_max_ms
        == 3_600_000
        == int(CONFIG_KEYS["message.timestamp.after.max.ms"].default)
    )
    assert c.message_timestamp_before_max_ms == LONG_MAX
    assert LogConfig.from_properties({"segment.bytes": "1048576"}).segment_bytes == 1 << 20
    with pytest.raises(ConfigError, match="below the minimum 1048576"):
        LogConfig.from_properties({"segment.bytes": "1048575"})
    with pytest.raises(ConfigError):
        LogConfig(segment_bytes=14)  # 3.x's minimum
    assert (c.compression_gzip_level, c.compression_lz4_level, c.compression_zstd_level) == (-1, 9, 3)


@pytest.mark.parametrize("key", sorted(REMOVED_CONFIGS))
def test_configs_removed_in_kafka_4_are_unknown(key: str) -> None:
    assert key not in CONFIG_KEYS and key.replace(".", "_") not in LogConfig.__dataclass_fields__
    with pytest.raises(ConfigError, match="unknown topic config"):
        LogConfig.from_properties({key: "true" if key.endswith("enable") else "3.0"})


@pytest.mark.parametrize(
    ("key", "good", "bad"),
    [
        ("compression.gzip.level", ["-1", "1", "9"], ["0", "10", "-2"]),
        ("compression.lz4.level", ["1", "17"], ["0", "18"]),
        ("compression.zstd.level", ["-131072", "22", "0"], ["-131073", "23"]),
    ],
)
def test_compression_levels(key: str, good: list[str], bad: list[str]) -> None:
    for value in good:
        LogConfig.from_properties({key: value})
    for value in bad:
        with pytest.raises(ConfigError):
            LogConfig.from_properties({key: value})


def test_types_follow_describe_configs() -> None:
    assert (
        CONFIG_KEYS["cleanup.policy"].type_id == 7 == ConfigType.LIST.value
        and CONFIG_KEYS["cleanup.policy"].is_list
    )
    assert CONFIG_KEYS["segment.bytes"].type_id == 3 and CONFIG_KEYS["retention.ms"].type_id == 5
    assert CONFIG_KEYS["min.cleanable.dirty.ratio"].type_id == 6
    assert CONFIG_KEYS["message.timestamp.type"].type_id == 2
    assert CONFIG_KEYS["unclean.leader.election.enable"].type_id == 1
    assert all(k.documentation and not k.sensitive for k in CONFIG_KEYS.values())


def test_from_properties() -> None:
    base = LogConfig.from_properties({"segment.bytes": "1048576"})
    c = LogConfig.from_properties({"cleanup.policy": "compact, delete", "retention.ms": "-1"}, base=base)
    assert c.segment_bytes == 1048576 and c.cleanup_policy == ("compact", "delete") and c.compact and c.delete
    assert c.retention_ms == -1
    assert LogConfig.from_properties(c.to_properties()) == c
    assert c.overrides() == {
        "cleanup.policy": "compact,delete",
        "retention.ms": "-1",
        "segment.bytes": "1048576",
    }
    assert LogConfig.from_properties({"message.timestamp.type": "LogAppendTime"}).log_append_time


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "10"),
        ("segment.bytes", "abc"),
        ("segment.bytes", "99999999999"),
        ("retention.ms", "-2"),
        ("cleanup.policy", "shrink"),
        ("cleanup.policy", ""),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "nan"),
        ("message.timestamp.type", "Now"),
        ("unclean.leader.election.enable", "yes"),
        ("flush.messages", "0"),
        ("no.such.key", "1"),
    ],
)
def test_invalid_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        LogConfig.from_properties({key: value})
    assert info.value.key == key and isinstance(info.value, KafkaWireError)


def test_constructor_validates() -> None:
    with pytest.raises(ConfigError):
        LogConfig(segment_ms=0)


@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)), max_size=20))
def test_offset_entries_round_trip(pairs: list[tuple[int, int]]) -> None:
    entries = sorted(set(pairs))
    clean: list[tuple[int, int]] = []
    for rel, pos in entries:
        if not clean or (rel > clean[-1][0] and pos >= clean[-1][1]):
            clean.append((rel, pos))
    data = b"".join(encode_offset_entry(r, p) for r, p in clean)
    assert decode_offset_entries(data) == clean
    assert decode_offset_entries(data + bytes(8 * 5)) == clean or clean == []


def test_time_entries_and_zero_tail() -> None:
    data = encode_time_entry(5, 0) + encode_time_entry(9, 3) + bytes(24)
    assert decode_time_entries(data) == [(5, 0), (9, 3)]


def _index(entries: list[tuple[int, int]], tail: int = 0) -> tuple[OffsetIndex, MemoryStorage]:
    storage = MemoryStorage()
    data = b"".join(encode_offset_entry(r, p) for r, p in entries) + bytes(8 * tail)
    storage.files["i"] = bytearray(data)
    return OffsetIndex.load(PendingFile(EffectQueue(), "i", len(data)), storage, 100), storage


@pytest.mark.parametrize("tail", [0, 1, 7, 100])
def test_offset_index_lookup_for_every_offset(tail: int) -> None:
    entries = [(0, 0), (3, 100), (10, 250), (11, 300), (40, 999)]
    index, storage = _index(entries, tail)
    assert index.entries == 5 and (index.last_offset, index.last_position) == (140, 999)
    for target in range(90, 160):
        expected = None
        for rel, pos in entries:
            if 100 + rel <= target:
                expected = (100 + rel, pos)
        assert index.lookup(storage, target) == expected
    assert index.entries_before_position(storage, 250) == 2


def test_non_increasing_entries_stop_the_index() -> None:
    index, _ = _index([(0, 0), (5, 10), (3, 20), (9, 30)])
    assert index.entries == 2


def test_time_index_lookup() -> None:
    storage = MemoryStorage()
    data = encode_time_entry(10, 0) + encode_time_entry(20, 5) + encode_time_entry(35, 9) + bytes(12 * 3)
    storage.files["t"] = bytearray(data)
    index = TimeIndex.load(PendingFile(EffectQueue(), "t", len(data)), storage, 50)
    assert index.entries == 3 and index.last_timestamp == 35
    assert index.lookup(storage, 9) is None
    assert index.lookup(storage, 20) == (20, 55)
    assert index.lookup(storage, 34) == (20, 55)
    assert index.lookup(storage, 99) == (35, 59)
    # appending after a tolerated zero tail first cuts it
    queue = index.file._queue
    index.maybe_append(40, 60)
    effects = queue.take()
    storage.apply(effects)
    assert decode_time_entries(bytes(storage.files["t"])) == [(10, 0), (20, 5), (35, 9), (40, 10)]
    assert len(storage.files["t"]) == 48
