"""Regex subscriptions of KIP-848 consumer groups (``SubscribedTopicRegex``): RE2 syntax, as
Kafka's coordinator compiles them (Google's RE2 through the ``google-re2`` package), matched
against whole topic names. Internal topics never match."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final

import re2

#: Topics a regex subscription never picks up (Kafka's ``Topic.isInternal``).
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class BadRegex(Exception):
    """The expression is not valid RE2 (the heartbeat gets INVALID_REGULAR_EXPRESSION)."""


@lru_cache(maxsize=256)
def _compiled(expression: str) -> re2._Regexp[str]:
    try:
        return re2.compile(expression)
    except re2.error as exc:
        raise BadRegex(str(exc)) from None


def check(expression: str) -> None:
    """Raise :class:`BadRegex` when ``expression`` does not compile."""
    _compiled(expression)


def matching(expression: str, topics: Iterable[str]) -> list[str]:
    """The topics whose whole name matches ``expression``, internal topics left out."""
    pattern = _compiled(expression)
    return [t for t in topics if t not in INTERNAL_TOPICS and pattern.fullmatch(t) is not None]
