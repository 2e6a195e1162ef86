"""Shrinking a finding to a small reproducer, as a pure state machine.

A scenario is what runs on a fresh connection after the handshake: the ``prefix`` requests, sent
one at a time (each answered before the next), then the ``burst`` sent together, whose outcome
must give the same kind of finding again. The shrinker proposes candidates
(:meth:`Shrinker.next_candidate`) and is told whether each reproduced (:meth:`Shrinker.tell`):

1. the culprit request alone, then each other request of its burst alone (the one that
   reproduces becomes the culprit), then the whole burst alone;
2. failing that, the original scenario (it must reproduce, else the finding is flaky and kept
   as it is), then delta debugging over the prefix (ddmin: drop chunks, halving their size);
3. byte-level shrinking of the culprit frame: drop chunks of its bytes after the 4-byte size
   prefix (which is rewritten to stay consistent), then zero bytes, keeping only candidates the
   caller's ``admissible`` predicate accepts (for a crash or a hang: still a valid request, since
   a close after garbage is no finding), without spending a trial on the others.

Trials are bounded (``max_trials``), as are the candidates looked at (``max_candidates``).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

_SIZE: Final = struct.Struct(">i")

DEFAULT_MAX_TRIALS: Final = 150
DEFAULT_MAX_CANDIDATES: Final = 20_000


@dataclass(frozen=True, slots=True)
class Scenario:
    """Requests sent on a fresh connection after the handshake: ``prefix`` one at a time, then
    ``burst`` together; ``culprit`` indexes the burst request the finding is about."""

    prefix: tuple[bytes, ...]
    burst: tuple[bytes, ...]
    culprit: int = 0

    @property
    def size(self) -> int:
        return sum(map(len, self.prefix)) + sum(map(len, self.burst))


class Phase(enum.Enum):
    ALONE = "alone"
    ORIGINAL = "original"
    PREFIX = "prefix"
    BYTES = "bytes"
    DONE = "done"


def resize(frame: bytes) -> bytes:
    """The frame with its size prefix rewritten to count the bytes after it."""
    out = bytearray(frame)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


class _DeltaDebugging:
    """ddmin over a tuple of requests, one candidate at a time (complements of chunks, the
    chunk size halving when no chunk can go)."""

    def __init__(self, items: tuple[bytes, ...]) -> None:
        self.current = items
        self.n = 2
        self.start = 0
        self.progressed = False

    def _chunk(self) -> int:
        return max(1, len(self.current) // self.n)

    def candidate(self) -> tuple[bytes, ...] | None:
        """The next subset to try, or None when ddmin is over."""
        while self.current:
            if self.start < len(self.current):
                chunk = self._chunk()
                return self.current[: self.start] + self.current[self.start + chunk :]
            if not self.progressed and self._chunk() == 1:
                return None
            if not self.progressed:
                self.n = min(len(self.current), self.n * 2)
            self.start = 0
            self.progressed = False
        return None

    def tell(self, candidate: tuple[bytes, ...], reproduced: bool) -> None:
        if reproduced:
            self.current = candidate
            self.progressed = True
            self.n = max(self.n - 1, 2)
        else:
            self.start += self._chunk()


def _byte_candidates(frame: bytes, best: list[bytes]) -> Iterator[bytes]:
    """Chunk removals after the size prefix (halving the chunk size), then byte zeroing; reads
    the best frame so far from ``best[0]`` (updated by the driver)."""
    chunk = max(1, (len(frame) - 4) // 2)
    while chunk >= 1:
        start = 4
        while start < len(best[0]):
            current = best[0]
            candidate = resize(current[:start] + current[start + chunk :])
            yield candidate
            if best[0] is current:  # not taken: move on
                start += chunk
        chunk //= 2
    position = 4
    while position < len(best[0]):
        current = best[0]
        if current[position] != 0:
            yield current[:position] + b"\x00" + current[position + 1 :]
        position += 1


class Shrinker:
    """Proposes smaller scenarios for one finding and keeps the smallest that reproduced."""

    def __init__(
        self,
        original: Scenario,
        admissible: Callable[[bytes], bool],
        *,
        max_trials: int = DEFAULT_MAX_TRIALS,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
    ) -> None:
        self.original = original
        self.best = original
        self.admissible = admissible
        self.max_trials = max_trials
        self.max_candidates = max_candidates
        self.trials = 0
        self.candidates = 0
        self.phase = Phase.ALONE
        # The culprit alone, then each other request of its burst alone (when several were
        # unanswered at a close, the first is blamed, not necessarily the one that caused it),
        # then the whole burst.
        order = [original.culprit] + [i for i in range(len(original.burst)) if i != original.culprit]
        self._alone: list[tuple[Scenario, int]] = [(Scenario((), (original.burst[i],), 0), i) for i in order]
        if len(original.burst) > 1:
            self._alone.append((Scenario((), original.burst, original.culprit), original.culprit))
        #: The index in the original burst of the request the result is about.
        self.origin = original.culprit
        self._origin_pending = original.culprit
        self._pending: Scenario | None = None
        self._ddmin: _DeltaDebugging | None = None
        self._bytes: Iterator[bytes] | None = None
        self._best_frame: list[bytes] = []
        #: Whether any candidate (or the original) reproduced.
        self.reproduced = False

    @property
    def done(self) -> bool:
        return self.phase is Phase.DONE

    def next_candidate(self) -> Scenario | None:
        """The next scenario to try, or None when shrinking is over."""
        assert self._pending is None, "tell() the outcome of the last candidate first"
        while self.phase is not Phase.DONE:
            if self.trials >= self.max_trials or self.candidates >= self.max_candidates:
                self.phase = Phase.DONE
                break
            candidate = self._propose()
            if candidate is not None:
                self.trials += 1
                self._pending = candidate
                return candidate
        return None

    def _propose(self) -> Scenario | None:
        """A candidate of the current phase, or None after moving to the next phase."""
        best = self.best
        if self.phase is Phase.ALONE:
            if self._alone:
                scenario, self._origin_pending = self._alone.pop(0)
                return scenario
            self.phase = Phase.ORIGINAL if not self.reproduced else self._bytes_phase()
            return None
        if self.phase is Phase.ORIGINAL:
            return self.original
        if self.phase is Phase.PREFIX:
            assert self._ddmin is not None
            subset = self._ddmin.candidate()
            if subset is None:
                self.phase = self._bytes_phase()
                return None
            return Scenario(subset, best.burst, best.culprit)
        if self.phase is Phase.BYTES:
            assert self._bytes is not None
            for frame in self._bytes:
                self.candidates += 1
                if self.candidates >= self.max_candidates:
                    break
                if self.admissible(frame):
                    burst = list(best.burst)
                    burst[best.culprit] = frame
                    return Scenario(best.prefix, tuple(burst), best.culprit)
            self.phase = Phase.DONE
            return None
        return None

    def _bytes_phase(self) -> Phase:
        frame = self.best.burst[self.best.culprit]
        self._best_frame = [frame]
        self._bytes = _byte_candidates(frame, self._best_frame)
        return Phase.BYTES

    def tell(self, reproduced: bool) -> None:
        """Whether the last candidate reproduced the finding."""
        candidate = self._pending
        assert candidate is not None, "no candidate is out"
        self._pending = None
        if self.phase is Phase.ALONE:
            if reproduced and (not self.reproduced or candidate.size < self.best.size):
                self.best = candidate
                self.origin = self._origin_pending
            if reproduced and not self.reproduced:
                self.reproduced = True
                self._alone.clear()  # the culprit alone (tried first) is as small as it gets
        elif self.phase is Phase.ORIGINAL:
            if not reproduced:
                self.phase = Phase.DONE  # flaky: keep the original
                return
            self.reproduced = True
            self.phase = Phase.PREFIX
            self._ddmin = _DeltaDebugging(self.original.prefix)
        elif self.phase is Phase.PREFIX:
            assert self._ddmin is not None
            self._ddmin.tell(candidate.prefix, reproduced)
            if reproduced:
                self.best = candidate
        elif self.phase is Phase.BYTES:
            if reproduced:
                self.best = candidate
                self._best_frame[0] = candidate.burst[candidate.culprit]

    def result(self) -> Scenario:
        """The smallest scenario that reproduced (the original when none did)."""
        return self.best


def shrink_offline(
    original: Scenario,
    reproduces: Callable[[Scenario], bool],
    admissible: Callable[[bytes], bool],
    **limits: int,
) -> Scenario:
    """Run a :class:`Shrinker` against a predicate (tests, and callers with no I/O)."""
    shrinker = Shrinker(original, admissible, **limits)
    while (candidate := shrinker.next_candidate()) is not None:
        shrinker.tell(reproduces(candidate))
    return shrinker.result()


__all__ = ["Phase", "Scenario", "Shrinker", "resize", "shrink_offline"]
