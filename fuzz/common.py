"""What every harness of ``fuzz/`` shares: the memory bound, the finding type, the atheris entry.

A harness is a module with ``fuzz_one_input(data: bytes) -> None`` that raises only when it finds
something (a :class:`Finding`, or whatever escaped the code under test) and a ``main()`` that runs
it under atheris. ``fuzz_one_input`` needs no atheris, so pytest and Hypothesis call it directly.

Memory: one call in :data:`MEMORY_SAMPLE_EVERY` runs under ``tracemalloc``, and its peak must
stay within ``MEMORY_FACTOR * len(data) + MEMORY_SLACK_BYTES`` (:func:`memory_bound`). The
sample is chosen by a call counter, so a given sequence of inputs is always sampled the same way.
A sampled call over the bound runs once more: the first call down a code path fills one-time
caches (lazy imports, per-class decoder tables) that no input size explains; only a second
excess is a finding.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Final

#: One call in this many is measured with tracemalloc (tracing makes a call several times slower).
MEMORY_SAMPLE_EVERY: Final = 64
#: Peak bytes allowed per input byte: a decoded message keeps Python objects for what the input
#: holds (a 1-byte int8 becomes a 28-byte int and an 8-byte list slot), and a decompressed
#: payload may be larger than the input (capped by ``ReadConfig.max_decompressed_bytes``).
MEMORY_FACTOR: Final = 64
#: Fixed allowance: the objects every call makes whatever its input (messages, events, a broker).
MEMORY_SLACK_BYTES: Final = 1 << 20

_SIZE: Final = struct.Struct(">i")

OneInput = Callable[[bytes], None]


class Finding(AssertionError):
    """A harness's rule broken: what the fuzzer reports as a crash."""


def memory_bound(size: int, factor: int = MEMORY_FACTOR, slack: int = MEMORY_SLACK_BYTES) -> int:
    """The most a call on ``size`` input bytes may allocate at its peak."""
    return factor * size + slack


class MemorySampler:
    """Runs one call in ``every`` under tracemalloc and checks its peak against :func:`memory_bound`."""

    def __init__(
        self, every: int = MEMORY_SAMPLE_EVERY, factor: int = MEMORY_FACTOR, slack: int = MEMORY_SLACK_BYTES
    ) -> None:
        self.every = every
        self.factor = factor
        self.slack = slack
        self.calls = 0
        self.sampled = 0

    def run(self, check: OneInput, data: bytes) -> None:
        self.calls += 1
        if self.calls % self.every or tracemalloc.is_tracing():
            check(data)
            return
        self.sampled += 1
        peak = self._peak(check, data)
        limit = memory_bound(len(data), self.factor, self.slack)
        if peak > limit:
            # The first call down a path fills one-time caches (a lazily imported module, a
            # decoder table): measure again, with them filled; only a second excess counts.
            peak = self._peak(check, data)
            if peak > limit:
                raise Finding(f"peak memory {peak} bytes for a {len(data)}-byte input (bound {limit})")

    @staticmethod
    def _peak(check: OneInput, data: bytes) -> int:
        tracemalloc.start()
        try:
            check(data)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


#: ``KAFKA_WIRE_FUZZ_INSTRUMENT`` chooses what atheris instruments for coverage: ``all`` (the
#: default: every kafka_wire module, every generated codec loaded and instrumented at start, which
#: takes about 25 s of CPU), ``core`` (the packages the harness targets: a few seconds; the CI runs) or
#: ``none`` (libFuzzer then mutates blind).
INSTRUMENT_ENV: Final = "KAFKA_WIRE_FUZZ_INSTRUMENT"


@contextlib.contextmanager
def _instrumented(include: list[str], exclude: list[str], load_messages: bool) -> Iterator[None]:
    import atheris  # type: ignore[import-untyped]  # ships no annotations

    with atheris.instrument_imports(include=include, exclude=exclude):
        yield
        if load_messages:  # loaded lazily otherwise, after the import hook is gone
            from kafka_wire.messages import catalog

            for api in catalog():
                _ = api.request, api.response


def instrumenting(fuzzing: bool, targets: tuple[str, ...]) -> AbstractContextManager[None]:
    """Wrap a harness's imports: under atheris (``fuzzing``, the script run as ``__main__``) the
    kafka_wire modules imported inside are instrumented: all of kafka_wire, every generated
    message module loaded up front (``all``), or the ``targets`` packages (``core``); otherwise
    nothing happens. Modules first imported after the block are not instrumented."""
    scope = os.environ.get(INSTRUMENT_ENV, "all")
    if not fuzzing or scope == "none":
        return contextlib.nullcontext()
    if scope not in ("all", "core"):
        raise SystemExit(f"{INSTRUMENT_ENV} must be all, core or none, not {scope!r}")
    if scope == "all":
        return _instrumented(["kafka_wire"], [], load_messages=True)
    return _instrumented(["kafka_wire"], modules_outside(targets), load_messages=False)


def modules_outside(targets: tuple[str, ...]) -> list[str]:
    """Every kafka_wire module (found on disk, nothing imported) not in one of the ``targets``
    packages: atheris's ``include`` takes top-level packages only, its ``exclude`` exact names."""
    root = Path(__file__).resolve().parent.parent / "kafka_wire"
    names = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(n for n in names if not any(n == t or n.startswith(t + ".") for t in targets))


def fuzz_main(one_input: OneInput, custom_mutator: Callable[[bytes, int, int], bytes] | None = None) -> None:
    """Run ``one_input`` under atheris with ``sys.argv`` as libFuzzer's arguments (a corpus
    directory, flags; files named instead of a directory are replayed: ``fuzz_X.py crash-file``)."""
    import atheris

    kwargs: dict[str, Any] = {}
    if custom_mutator is not None:
        kwargs["custom_mutator"] = custom_mutator
    atheris.Setup(sys.argv, one_input, **kwargs)
    atheris.Fuzz()


def structure_mutator(kind: str) -> Callable[[bytes, int, int], bytes]:
    """The structure-aware custom mutator for ``kind`` (``kafka_wire.testing.mutator``): decodes
    the input, mutates fields and the encoding, encodes; the mutator's own byte-level mutation
    when the input does not decode."""
    from kafka_wire.testing.mutator import libfuzzer_mutator

    return libfuzzer_mutator(kind)


def with_size_fixed(data: bytes) -> bytes | None:
    """``data`` with its 4-byte size prefix set to the length of what follows, or None when it
    already is (or there is no prefix): byte-level insertions and deletions then still reach the
    decoders behind the frame check."""
    if len(data) < 4 or _SIZE.unpack_from(data)[0] == len(data) - 4:
        return None
    return _SIZE.pack(len(data) - 4) + data[4:]
