"""The leader epoch cache: Kafka's assign, endOffsetFor and truncation rules, and its file."""

from __future__ import annotations

from kafka_wire.broker.log.files import EffectQueue
from kafka_wire.broker.partition.epoch_cache import EpochCache
from kafka_wire.testing.memory_storage import MemoryStorage


def stored(entries: list[tuple[int, int]]) -> tuple[EpochCache, MemoryStorage, EffectQueue]:
    storage, queue = MemoryStorage(), EffectQueue()
    cache = EpochCache(path="p/leader-epoch-checkpoint", queue=queue)
    cache.assign_all(entries)
    storage.apply(queue.take())
    return cache, storage, queue


def test_end_offset_for_follows_kafkas_rule() -> None:
    cache = EpochCache([(1, 10), (3, 20), (4, 30)])
    assert cache.end_offset_for(0, 50) == (0, 10)  # below the first: its start
    assert cache.end_offset_for(1, 50) == (1, 20)
    assert cache.end_offset_for(2, 50) == (1, 20)  # not cached: the largest below
    assert cache.end_offset_for(4, 50) == (4, 50)  # the latest ends at the log end
    assert cache.end_offset_for(5, 50) == (-1, -1)
    assert cache.end_offset_for(-1, 50) == (-1, -1)
    assert EpochCache().end_offset_for(0, 5) == (-1, -1)


def test_assign_keeps_epochs_and_offsets_increasing() -> None:
    cache = EpochCache()
    cache.assign_all([(0, 0), (0, 5), (2, 10), (1, 12)])
    assert cache.entries == [(0, 0), (2, 10)]
    cache.assign(3, 8)  # a newer epoch from an earlier offset replaces what conflicts
    assert cache.entries == [(0, 0), (3, 8)]


def test_truncation_from_the_end_and_from_the_start() -> None:
    cache = EpochCache([(0, 0), (1, 10), (2, 20)])
    cache.truncate_from_end(20)
    assert cache.entries == [(0, 0), (1, 10)]
    cache.truncate_from_start(15)
    assert cache.entries == [(1, 15)]
    cache = EpochCache([(0, 0), (1, 10)])
    cache.truncate_from_start(10)
    assert cache.entries == [(1, 10)]


def test_every_change_is_written_as_a_leader_epoch_checkpoint() -> None:
    cache, storage, queue = stored([(0, 0), (4, 7)])
    assert storage.files["p/leader-epoch-checkpoint"] == b"0\n2\n0 0\n4 7\n"
    cache.truncate_from_end(5)
    storage.apply(queue.take())
    assert storage.files["p/leader-epoch-checkpoint"] == b"0\n1\n0 0\n"
    assert EpochCache.load(storage, "p", queue).entries == [(0, 0)]


def test_an_unreadable_checkpoint_loads_empty() -> None:
    storage, queue = MemoryStorage(), EffectQueue()
    storage.files["p/leader-epoch-checkpoint"] = bytearray(b"7\nnonsense\n")
    assert EpochCache.load(storage, "p", queue).entries == []
