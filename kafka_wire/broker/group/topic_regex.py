"""Regex subscriptions of KIP-848 consumer groups (``SubscribedTopicRegex``): RE2 syntax, as
Kafka's coordinator compiles them (with RE2/J; here Google's RE2 through the ``google-re2``
package), matched against whole topic names. Internal topics never match. A bad expression is
described as RE2/J describes it (the wording Kafka puts in INVALID_REGULAR_EXPRESSION)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final

import re2

#: Topics a regex subscription never picks up (Kafka's ``Topic.isInternal``).
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


#: RE2's error texts (before ``": "`` and the offending part) -> RE2/J's descriptions.
RE2J_DESCRIPTIONS: Final = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid named capture group": "invalid named capture",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
}


class BadRegex(Exception):
    """The expression is not valid RE2 (the heartbeat gets INVALID_REGULAR_EXPRESSION); the
    message is RE2/J's description of the error."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # errors are answered, not logged
    return options


_OPTIONS: Final = _options()


@lru_cache(maxsize=256)
def _compiled(expression: str) -> re2._Regexp[str]:
    try:
        return re2.compile(expression, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        code = text.split(": ", 1)[0]
        raise BadRegex(RE2J_DESCRIPTIONS.get(code, code)) from None


def check(expression: str) -> None:
    """Raise :class:`BadRegex` when ``expression`` does not compile."""
    _compiled(expression)


def matching(expression: str, topics: Iterable[str]) -> list[str]:
    """The topics whose whole name matches ``expression``, internal topics left out."""
    pattern = _compiled(expression)
    return [t for t in topics if t not in INTERNAL_TOPICS and pattern.fullmatch(t) is not None]
