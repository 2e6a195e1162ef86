"""The driver's collector policy: survivors of a full collection are frozen (later collections
skip them), and the whole heap is walked again once the frozen objects grew past the bound, so
cyclic garbage among them is freed after all."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from kafka_wire.adapters.gc_policy import CollectorPolicy


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_survivors_of_a_full_collection_are_frozen_and_skipped() -> None:
    policy = CollectorPolicy(floor=10**9)
    policy.start()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    kept = [Node() for _ in range(1000)]
    policy.after_call()
    assert gc.get_freeze_count() == frozen  # no full collection ran: nothing to do
    gc.collect()
    policy.after_call()
    assert gc.get_freeze_count() >= frozen + 1000
    ref = weakref.ref(kept[0])
    del kept
    gc.collect()
    assert ref() is not None  # frozen cyclic garbage: not freed while frozen


def test_the_whole_heap_is_walked_again_once_the_frozen_objects_doubled() -> None:
    policy = CollectorPolicy(growth=2.0, floor=0)
    policy.start()
    base = gc.get_freeze_count()
    doomed = Node()
    ref = weakref.ref(doomed)
    grown = [Node() for _ in range(2 * base)]
    gc.collect()
    policy.after_call()  # past twice the base: everything unfrozen for the next full collection
    assert gc.get_freeze_count() == 0
    del doomed
    gc.collect()
    assert ref() is None  # the whole-heap walk freed it
    policy.after_call()
    assert gc.get_freeze_count() >= len(grown)  # frozen again, the new base
    gc.collect()
    policy.after_call()
    assert gc.get_freeze_count() > 0  # under twice the new base: frozen, not unfrozen
