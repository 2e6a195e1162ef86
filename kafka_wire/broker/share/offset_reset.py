"""``share.auto.offset.reset``, the group config that places a share-partition with no state:
``latest`` (Kafka's default: the high watermark), ``earliest`` (the log start) or
``by_duration:<ISO-8601 duration>`` (Kafka 4.1+: the first record whose timestamp is at or after
now less the duration).

The values Kafka 4.4 takes are those of its ``ShareGroupAutoOffsetResetStrategy``: exactly
``latest`` or ``earliest`` (lower case; ``none``, which a consumer takes, is refused), or
``by_duration:`` followed by what ``java.time.Duration.parse`` reads (JDK 17), not negative. That
grammar is checked here as the JDK checks it: an optional sign, ``P``, days, then after ``T``
hours, minutes and seconds with up to nine fraction digits (``.`` or ``,``), each part optional
but one at least, each number signed, letters in either case; an upper-case ``T`` with nothing
after it is refused (a lower-case one is not, as in the JDK); every part and every sum must fit
in a 64-bit count of seconds.
"""

from __future__ import annotations

import re
from typing import Final

EARLIEST: Final = "earliest"
LATEST: Final = "latest"
BY_DURATION_PREFIX: Final = "by_duration:"

_PATTERN: Final = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)
_LONG_MIN: Final = -(1 << 63)
_LONG_MAX: Final = (1 << 63) - 1
_NANOS: Final = 1_000_000_000


def _long(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise OverflowError
    return value


def duration_nanos(text: str) -> int | None:
    """The length in nanoseconds of an ISO-8601 duration as ``java.time.Duration.parse`` reads
    it, or None where it refuses it."""
    match = _PATTERN.fullmatch(text)
    if match is None or match.group(3) == "T":
        return None
    days, hours, minutes, seconds, fraction = match.group(2, 4, 5, 6, 7)
    if days is None and hours is None and minutes is None and seconds is None:
        return None
    try:
        total = 0
        # the JDK adds seconds to minutes, then hours, then days, each sum in range
        for part, unit in ((seconds, 1), (minutes, 60), (hours, 3600), (days, 86400)):
            if part is not None:
                total = _long(total + _long(_long(int(part)) * unit))
        nanos = int((fraction or "").ljust(9, "0"))
        if seconds is not None and seconds.startswith("-"):
            nanos = -nanos
        whole = _long(total + nanos // _NANOS)
        exact = whole * _NANOS + nanos % _NANOS
        if match.group(1) == "-":
            exact = -exact
            _long(exact // _NANOS)
    except OverflowError:
        return None
    return exact


def parse_offset_reset(value: str) -> str | int | None:
    """``earliest``, ``latest``, the duration of a ``by_duration`` value in nanoseconds, or None
    when Kafka 4.4 refuses the value (its ``ShareGroupAutoOffsetResetStrategy.fromString``)."""
    if value in (EARLIEST, LATEST):
        return value
    if not value.startswith(BY_DURATION_PREFIX):
        return None
    nanos = duration_nanos(value[len(BY_DURATION_PREFIX) :])
    if nanos is None or nanos < 0:
        return None
    return nanos


def reset_timestamp_ms(now_ms: int, nanos: int) -> int:
    """The timestamp a ``by_duration`` reset looks up: now less the duration, in whole
    milliseconds rounded down (as ``Instant.minus(duration).toEpochMilli()``)."""
    return (now_ms * 1_000_000 - nanos) // 1_000_000
