"""A rate measured over sampled windows, as Kafka's ``Rate`` over a ``SampledStat``.

Values are summed into ``samples`` windows of ``window_ms`` each, in a ring. A window takes
values from its start until ``window_ms`` has passed; the next value then starts the next window
(reusing the oldest). A window that started more than ``samples * window_ms`` ago counts nothing
(it is reset when the rate is measured). The rate is the sum of the windows over the time they
span: from the start of the oldest window to now, but never less than ``samples - 1`` whole
windows (so a first burst is spread over the whole span instead of seeming infinitely fast).
"""

from __future__ import annotations

from kafka_wire.quick_dataclass import dataclass


@dataclass(slots=True)
class _Window:
    start_ms: int
    total: float = 0.0


class SampledRate:
    """Units per second over the last ``samples`` windows of ``window_ms`` (time is ``now_ms``)."""

    __slots__ = ("_current", "_samples", "_window_ms", "_windows")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        if samples < 2 or window_ms < 1:
            raise ValueError("a sampled rate needs at least 2 windows of at least 1 ms")
        self._samples = samples
        self._window_ms = window_ms
        self._windows = [_Window(now_ms)]
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        window = self._windows[self._current]
        if now_ms - window.start_ms >= self._window_ms:
            self._current = (self._current + 1) % self._samples
            if self._current >= len(self._windows):
                self._windows.append(_Window(now_ms))
            else:
                window = self._windows[self._current]
                window.start_ms, window.total = now_ms, 0.0
            window = self._windows[self._current]
        window.total += value

    def _purge(self, now_ms: int) -> None:
        expire_before = now_ms - self._samples * self._window_ms
        for window in self._windows:
            if window.start_ms <= expire_before:
                window.start_ms, window.total = now_ms, 0.0

    def span_ms(self, now_ms: int) -> int:
        """The time the windows are measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        oldest = min(w.start_ms for w in self._windows)
        elapsed = now_ms - oldest
        full = elapsed // self._window_ms
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window_ms
        return elapsed

    def total(self, now_ms: int) -> float:
        self._purge(now_ms)
        return sum(w.total for w in self._windows)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        span = self.span_ms(now_ms)
        return self.total(now_ms) * 1000.0 / span


class TokenBucket:
    """Kafka's ``TokenBucket`` stat (KIP-599): credits refilled at ``quota`` per second up to a
    burst of ``quota * samples * window``, taken by what is recorded; it may go below zero (the
    request that empties it is still let through), and a negative balance is a violation."""

    __slots__ = ("_samples", "_window_ms", "last_ms", "tokens")

    def __init__(self, samples: int, window_ms: int, quota: float, now_ms: int) -> None:
        self._samples = samples
        self._window_ms = window_ms
        self.tokens = self.burst(quota)  # Kafka's first refill fills it (its last update is 0)
        self.last_ms = now_ms

    def burst(self, quota: float) -> float:
        return self._samples * self._window_ms / 1000 * quota

    def measure(self, quota: float, now_ms: int) -> float:
        """The credits left at ``now_ms`` (after the refill since the last update)."""
        elapsed = max(0, now_ms - self.last_ms)
        self.tokens = min(self.burst(quota), self.tokens + quota * elapsed / 1000)
        self.last_ms = max(self.last_ms, now_ms)
        return self.tokens

    def record(self, value: float, quota: float, now_ms: int) -> None:
        self.tokens = min(self.burst(quota), self.measure(quota, now_ms) - value)
