"""``kafka-wire serve`` keeps serving a well-behaved client while the fuzzer runs against it, and
its memory stays bounded (the short version of ``bench/netfuzz_memory.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("netfuzz_memory", ROOT / "bench" / "netfuzz_memory.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_serve_keeps_a_producer_and_a_consumer_going_with_bounded_memory_under_fuzzing(
    tmp_path: Path,
) -> None:
    result = bench().measure(1500, seed=3, sample_s=0.2, workdir=tmp_path)
    assert result.fuzz_status == 0, result.fuzz_summary
    assert result.produced > 50 and result.consumed > 50, result.client_errors
    assert len(result.samples) >= 3
    # a few thousand requests must not grow the server by more than a few tens of MiB
    assert result.rss_peak_kib - result.rss_before_kib < 64 * 1024, result
