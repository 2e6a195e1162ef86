"""Fetch session eviction (KIP-227, Kafka's FetchSessionCache): a full cache makes room for a new
session by evicting a stale one, else a less valuable one it may evict; otherwise the new fetch
goes on without a session."""

from __future__ import annotations

import random
import uuid

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.fetch_sessions import FetchSession, FetchSessionCache, SessionPartition
from kafka_wire.messages import (
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
)
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create

EVICTION_MS = 1000


def cache(slots: int = 2) -> FetchSessionCache:
    return FetchSessionCache(slots, random.Random(1), eviction_ms=EVICTION_MS)


def open_session(
    sessions: FetchSessionCache, now_ms: int, size: int, *, privileged: bool = False
) -> FetchSession | None:
    session = sessions.create(now_ms, privileged=privileged, size=size)
    if session is not None:
        for index in range(size):
            session.partitions["t", index] = SessionPartition("t", uuid.UUID(int=0), index, 0, 1 << 20)
        sessions.touch(session, now_ms)
    return session


def test_a_full_cache_of_recent_sessions_makes_no_room() -> None:
    sessions = cache()
    assert open_session(sessions, 0, 1) and open_session(sessions, 0, 1)
    assert open_session(sessions, 500, 5) is None
    assert len(sessions) == 2 and sessions.evictions == 0


def test_the_least_recently_used_session_is_evicted_once_stale() -> None:
    sessions = cache()
    first, second = open_session(sessions, 0, 3), open_session(sessions, 0, 3)
    assert first is not None and second is not None
    sessions.touch(first, 900)
    assert open_session(sessions, 1000, 1) is None  # unused for 1000 ms: not yet stale
    assert open_session(sessions, 1001, 1) is not None
    assert sessions.get(second.session_id) is None and sessions.get(first.session_id) is first


def test_a_larger_session_evicts_the_smallest_session_that_is_old_enough() -> None:
    sessions = cache()
    small, large = open_session(sessions, 0, 1), open_session(sessions, 0, 3)
    assert small is not None and large is not None
    # Used again after the eviction time since creation: now evictable by size (not stale).
    sessions.touch(small, 1500)
    sessions.touch(large, 1500)
    assert open_session(sessions, 1600, 1) is None  # the same size does not evict
    newcomer = open_session(sessions, 1600, 2)
    assert newcomer is not None and sessions.get(small.session_id) is None
    # The newcomer is young: nothing smaller than 3 evicts the large one, and the newcomer is
    # evictable by nobody but a privileged session.
    assert open_session(sessions, 1700, 2) is None


def test_a_privileged_session_evicts_unprivileged_ones_but_not_young_privileged_ones() -> None:
    sessions = cache()
    consumer, follower = open_session(sessions, 0, 5), open_session(sessions, 0, 1, privileged=True)
    assert consumer is not None and follower is not None
    assert open_session(sessions, 10, 1) is None  # a consumer cannot evict anything young
    replacement = open_session(sessions, 10, 1, privileged=True)
    assert replacement is not None and sessions.get(consumer.session_id) is None
    assert open_session(sessions, 20, 9, privileged=True) is None  # both left are young and privileged


def full_fetch(client: Client, offset: int = 0, *, session_id: int = 0, epoch: int = 0) -> FetchResponse:
    reply = client.request(
        FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            session_id=session_id,
            session_epoch=epoch,
            topics=[
                FetchRequestTopic(
                    topic="fs",
                    partitions=[
                        FetchRequestPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                    ],
                )
            ]
            if epoch == 0
            else [],
        ),
        12,
    )
    assert isinstance(reply.body, FetchResponse)
    return reply.body


def test_the_broker_evicts_a_session_unused_for_the_eviction_time() -> None:
    engine = Engine(BrokerConfig(fetch_session_cache_slots=1, fetch_session_eviction_ms=120_000))
    first, second = Client(engine, 1), Client(engine, 2)
    create(first, "fs")
    session_id = full_fetch(first).session_id
    assert session_id != 0
    assert full_fetch(second).session_id == 0  # the cache is full of a recent session
    engine.advance(120_001)
    assert full_fetch(second).session_id != 0
    assert (
        full_fetch(first, session_id=session_id, epoch=1).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
