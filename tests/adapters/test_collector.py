"""The serve process's full garbage collections: only when the broker is quiet, and the
interpreter's own thresholds back afterwards."""

from __future__ import annotations

import asyncio
import gc

import pytest

from kafka_wire.adapters import collector
from kafka_wire.adapters.collector import Collector


def _cycles(count: int) -> None:
    """Garbage that only a collection frees, through enough middle-generation collections."""
    for _ in range(count):
        node: list[object] = []
        node.append(node)
        gc.collect(1)


@pytest.mark.parametrize("quiet", [True, False])
def test_full_collections_wait_for_a_quiet_broker(monkeypatch: pytest.MonkeyPatch, quiet: bool) -> None:
    monkeypatch.setattr(collector, "_CHECK_S", 0.01)
    before = gc.get_threshold()

    async def run() -> None:
        full = Collector(lambda: 10.0 if quiet else 0.0)
        full.start()
        assert gc.get_threshold()[2] > 1_000_000  # the interpreter never collects it alone
        _cycles(20)
        assert gc.get_count()[2] >= 10
        for _ in range(50):
            await asyncio.sleep(0.01)
        done = gc.get_count()[2] < 10
        await full.stop()
        assert done is quiet

    asyncio.run(run())
    assert gc.get_threshold() == before
