"""Fetch sessions (KIP-227): the partitions a consumer fetches, remembered between requests.

A full fetch with epoch 0 opens a session (when the cache has room, or an entry can be evicted);
later requests carry only what changed (new offsets, added partitions, ``forgotten_topics_data``)
with the next epoch, and their responses hold only partitions with something new: records, an
error, or a changed high watermark, last stable offset or log start offset. Epoch -1 closes a
session. Session ids come from the broker's injected random generator.

Eviction follows Kafka's ``FetchSessionCache``: the cache holds at most
``max.incremental.fetch.session.cache.slots`` sessions. When it is full, a new session may take
the place of

1. the least recently used session, if it has not been used for longer than
   ``min.incremental.fetch.session.eviction.ms`` (stale); otherwise
2. the least valuable evictable session, ordered by (privileged, partition count, session id),
   if the new session is worth at least as much. A privileged (follower) session may evict any
   unprivileged session and privileged ones older than the eviction time; an unprivileged one
   only sessions older than the eviction time with fewer partitions (an unprivileged session
   never evicts a privileged one).

Whether a session is evictable is decided when it is created or used (Kafka's ``touch``), so a
session becomes evictable by size only once it is used after the eviction time has passed.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import field
from typing import Final

from kafka_wire.quick_dataclass import dataclass

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
#: Kafka's ``max.incremental.fetch.session.cache.slots`` default.
DEFAULT_MAX_FETCH_SESSIONS: Final = 1000
#: Kafka's ``min.incremental.fetch.session.eviction.ms`` default (2 minutes).
DEFAULT_FETCH_SESSION_EVICTION_MS: Final = 120_000


@dataclass(slots=True)
class SessionPartition:
    topic: str
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    #: What the client was last told, so incremental responses can leave unchanged partitions out.
    sent_high_watermark: int = -1
    sent_last_stable_offset: int = -1
    sent_log_start_offset: int = -1

    def changed(self, high_watermark: int, last_stable_offset: int, log_start_offset: int) -> bool:
        return (high_watermark, last_stable_offset, log_start_offset) != (
            self.sent_high_watermark,
            self.sent_last_stable_offset,
            self.sent_log_start_offset,
        )

    def remember(self, high_watermark: int, last_stable_offset: int, log_start_offset: int) -> None:
        self.sent_high_watermark = high_watermark
        self.sent_last_stable_offset = last_stable_offset
        self.sent_log_start_offset = log_start_offset


@dataclass(slots=True)
class FetchSession:
    session_id: int
    #: Created by a follower (a fetch with a replica id): such sessions are kept in preference.
    privileged: bool = False
    created_ms: int = 0
    last_used_ms: int = 0
    #: The epoch the next incremental request must carry.
    next_epoch: int = 1
    #: Keyed by (topic name, partition), in the order they were added.
    partitions: dict[tuple[str, int], SessionPartition] = field(default_factory=dict)
    #: Decided at the last touch: the partition count then, and who may evict the session.
    cached_size: int = 0
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def eviction_key(self) -> tuple[bool, int, int]:
        """Sessions with smaller keys are evicted first."""
        return (self.privileged, self.cached_size, self.session_id)


class FetchSessionCache:
    """At most ``slots`` sessions, evicted by Kafka's rules (see the module docstring)."""

    def __init__(
        self, slots: int, rng: random.Random, *, eviction_ms: int = DEFAULT_FETCH_SESSION_EVICTION_MS
    ) -> None:
        self._slots = slots
        self._rng = rng
        self._eviction_ms = eviction_ms
        #: In least recently used first order (``touch`` moves a session to the end).
        self._sessions: dict[int, FetchSession] = {}
        #: Sessions evicted so far (Kafka's IncrementalFetchSessionEvictionsPerSec).
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used: it becomes the most recently used, and its size and evictability
        are recomputed."""
        self._sessions.pop(session.session_id, None)
        self._sessions[session.session_id] = session
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.created_ms > self._eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old

    def create(self, now_ms: int, *, privileged: bool = False, size: int = 0) -> FetchSession | None:
        """A new session for a full fetch of ``size`` partitions, or None when the cache is full and
        nothing may be evicted for it (the fetch goes on without a session). The caller adds the
        partitions, then calls :meth:`touch`."""
        if len(self._sessions) >= self._slots and not self._evict_for(privileged, size, now_ms):
            return None
        while True:
            session_id = self._rng.randrange(1, 2**31)
            if session_id not in self._sessions:
                session = FetchSession(
                    session_id, privileged=privileged, created_ms=now_ms, last_used_ms=now_ms
                )
                self._sessions[session_id] = session
                return session

    def _evict_for(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self._sessions:
            return False
        oldest = next(iter(self._sessions.values()))
        victim: FetchSession | None = None
        if now_ms - oldest.last_used_ms > self._eviction_ms:
            victim = oldest
        else:
            candidates = [
                s
                for s in self._sessions.values()
                if (s.evictable_by_privileged if privileged else s.evictable_by_all)
            ]
            if candidates:
                cheapest = min(candidates, key=FetchSession.eviction_key)
                # The new session's key carries id 0: a tie on (privileged, size) does not evict.
                if (privileged, size, 0) >= cheapest.eviction_key():
                    victim = cheapest
        if victim is None:
            return False
        del self._sessions[victim.session_id]
        self.evictions += 1
        return True
