"""Fetch, ListOffsets and DeleteRecords over the same records on both brokers.

Fetch v4 (Kafka 4's lowest), v7 (sessions), v12 (the last by name), v13 (topic ids), v17 and
v18: records, offsets out of range, unknown topics, ids and partitions, a small
``partition_max_bytes``, fetch sessions (new, incremental, unchanged, forgotten topics, a wrong
epoch, an unknown session, closing one). ListOffsets v1, v4, v7, v8, v9 and v11 with every special
timestamp and times before, at and after the records. DeleteRecords v0 and v2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from uuid import UUID

import pytest

from kafka_wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    ErrorCode,
    FetchRequest,
    FetchRequestForgottenTopic,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from tests.differential.compare import Rule
from tests.differential.pair import Pair, Peer
from tests.differential.records import RECORDS_RULES, batch, fetch, now_ms, produce

TOPIC: Final = "fe-data"
#: When the fixture's records were made: record ``i`` of batch ``b`` is at BASE + 100 * b + i.
BASE_MS: Final = now_ms() - 60_000
FETCH_VERSIONS: Final = [4, 12, 13, 18]
Make = Callable[[UUID | None], FetchRequest]
MakeFor = Callable[[Peer], FetchRequest]
#: A fetch session's id is each broker's own choice: compared as zero or not.
SESSION_RULES: Final = (
    *RECORDS_RULES,
    Rule("session_id", lambda v, s: v if v == 0 else "<session>", "each broker numbers its own sessions"),
)


@pytest.fixture(scope="module")
def data(pair_module: Pair) -> None:
    """``fe-data``: partition 0 has three batches (3, 2 and 4 records), partition 1 one (5)."""
    pair = pair_module
    pair.create_topic(TOPIC, 2)
    for partition, counts in ((0, (3, 2, 4)), (1, (5,))):
        for b, count in enumerate(counts):
            sent = batch(count, timestamp_ms=BASE_MS + 100 * b)
            kafka, wire = pair.both(produce(TOPIC, sent, partition=partition), 9)
            for answer in (kafka, wire):
                assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def each(pair: Pair, version: int, make: Make) -> MakeFor:
    """Each broker's request: ``make(topic_id or None)``, by that broker's topic id from v13."""
    ids = pair.topic_ids(TOPIC) if version >= 13 else {}

    def request(peer: Peer) -> FetchRequest:
        return make(ids.get(peer.side.name))

    return request


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@pytest.mark.parametrize(
    "offsets",
    [[(0, 0), (1, 0)], [(0, 3)], [(0, 4)], [(0, 9)], [(1, 5)], [(0, 10)], [(0, 1000)], [(0, -3)], [(9, 0)]],
    ids=lambda o: ",".join(f"{p}@{x}" for p, x in o),
)
def test_fetch(pair: Pair, data: None, version: int, offsets: list[tuple[int, int]]) -> None:
    """From the start, from a batch boundary, from inside a batch, at and past the end, out of
    range both ways, an unknown partition."""
    pair.check_each(
        each(pair, version, lambda topic_id: fetch(TOPIC, offsets, topic_id=topic_id)), version, RECORDS_RULES
    )


@pytest.mark.parametrize("version", [4, 12, 13, 17])
def test_fetch_unknown_topic(pair: Pair, version: int) -> None:
    request = fetch("fe-unknown", [(0, 0)], topic_id=UUID(int=0xBAD) if version >= 13 else None)
    pair.check(request, version)


@pytest.mark.parametrize("version", [4, 12, 17])
def test_fetch_a_little(pair: Pair, data: None, version: int) -> None:
    """``partition_max_bytes`` below one batch: the first batch comes whole anyway."""
    make = each(
        pair, version, lambda topic_id: fetch(TOPIC, [(0, 0), (1, 0)], topic_id=topic_id, max_bytes=10)
    )
    pair.check_each(make, version, RECORDS_RULES)


@pytest.mark.parametrize("version", [7, 12, 17])
def test_fetch_sessions(pair: Pair, version: int) -> None:
    """A new session, an incremental fetch with nothing new, one after new records, one forgetting
    a partition, a wrong epoch, an unknown session, then closing it."""
    topic = f"fe-session-{version}"
    pair.create_topic(topic, 2)
    pair.both(produce(topic, batch(3, timestamp_ms=BASE_MS)), 9)
    ids = pair.topic_ids(topic) if version >= 13 else {}
    sessions: dict[str, int] = {}

    def session_fetch(
        epoch: int,
        offsets: list[tuple[int, int]],
        *,
        forget: list[int] | None = None,
        session: int | None = None,
    ) -> MakeFor:
        def make(peer: Peer) -> FetchRequest:
            name = peer.side.name
            request = fetch(
                topic,
                offsets,
                topic_id=ids.get(name),
                session_id=sessions.get(name, 0) if session is None else session,
                session_epoch=epoch,
            )
            if forget:
                request.forgotten_topics_data = [
                    FetchRequestForgottenTopic(topic=topic if version < 13 else "", partitions=forget)
                ]
                if version >= 13:
                    request.forgotten_topics_data[0].topic_id = ids[name]
            return request

        return make

    kafka, wire = pair.check_each(session_fetch(0, [(0, 0), (1, 0)]), version, SESSION_RULES)
    assert kafka.session_id != 0
    sessions.update({"Kafka": kafka.session_id, "kafka-wire": wire.session_id})
    pair.check_each(session_fetch(1, []), version, SESSION_RULES)
    pair.both(produce(topic, batch(2, timestamp_ms=BASE_MS + 100), partition=1), 9)
    pair.check_each(session_fetch(2, [(1, 0)]), version, SESSION_RULES)
    pair.check_each(session_fetch(3, [], forget=[0]), version, SESSION_RULES)
    pair.check_each(session_fetch(9, []), version, SESSION_RULES)
    pair.check_each(session_fetch(1, [], session=0x7654321), version, SESSION_RULES)
    pair.check_each(session_fetch(-1, [(0, 0)]), version, SESSION_RULES)


# -- ListOffsets ----------------------------------------------------------------------------------

#: Kafka's special timestamps: latest, earliest, max timestamp (v7+), earliest local (v8+), latest
#: tiered (v9+), earliest pending upload (v11+).
SPECIAL: Final = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}


def list_offsets(
    topic: str, *partitions: tuple[int, int], isolation_level: int = 0, epoch: int = -1
) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[
            ListOffsetsRequestTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequestPartition(partition_index=p, timestamp=t, current_leader_epoch=epoch)
                    for p, t in partitions
                ],
            )
        ],
    )


@pytest.mark.parametrize("version", [1, 4, 7, 8, 9, 11])
@pytest.mark.parametrize("timestamp", sorted(SPECIAL))
def test_list_offsets_special(pair: Pair, data: None, version: int, timestamp: int) -> None:
    """Each special timestamp at each version, for both partitions and an unknown one."""
    pair.check(list_offsets(TOPIC, (0, timestamp), (1, timestamp), (5, timestamp)), version, RECORDS_RULES)


@pytest.mark.parametrize("version", [1, 4, 11])
def test_list_offsets_times(pair: Pair, data: None, version: int) -> None:
    """Before every record, at a record, between batches, after every record."""
    for at in (BASE_MS - 1000, BASE_MS + 101, BASE_MS + 150, BASE_MS + 10_000):
        pair.check(list_offsets(TOPIC, (0, at), (1, at)), version)


@pytest.mark.parametrize("version", [4, 11])
@pytest.mark.parametrize("epoch", [0, 5])
def test_list_offsets_leader_epoch(pair: Pair, data: None, version: int, epoch: int) -> None:
    """The current leader epoch (0) and one from the future."""
    pair.check(list_offsets(TOPIC, (0, -1), epoch=epoch), version)


@pytest.mark.parametrize("version", [2, 11])
def test_list_offsets_read_committed(pair: Pair, data: None, version: int) -> None:
    pair.check(list_offsets(TOPIC, (0, -1), (0, -3), isolation_level=1), version)


def test_list_offsets_unknown_topic(pair: Pair) -> None:
    pair.check(list_offsets("fe-unknown", (0, -1)), 11)


# -- DeleteRecords --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 2])
def test_delete_records(pair: Pair, version: int) -> None:
    """Before an offset, past the end, to the high watermark (-1), below the log start, an unknown
    partition; then what ListOffsets and Fetch say."""
    topic = f"dr-{version}"
    pair.create_topic(topic, 2)
    pair.both(produce(topic, batch(6, timestamp_ms=BASE_MS)), 9)
    pair.both(produce(topic, batch(3, timestamp_ms=BASE_MS), partition=1), 9)

    def delete(*offsets: tuple[int, int]) -> DeleteRecordsRequest:
        partitions = [DeleteRecordsRequestPartition(partition_index=p, offset=o) for p, o in offsets]
        return DeleteRecordsRequest(
            topics=[DeleteRecordsRequestTopic(name=topic, partitions=partitions)], timeout_ms=10_000
        )

    pair.check(delete((0, 2), (1, 100), (7, 1)), version)
    pair.check(delete((0, 1)), version)
    pair.check(delete((0, -1), (1, -1)), version)
    pair.check(delete((0, -7)), version)
    pair.check(list_offsets(topic, (0, -2), (1, -2), (0, -1)), 11)
    pair.check(fetch(topic, [(0, 0), (1, 3)]), 12, RECORDS_RULES)


def test_delete_records_unknown_topic(pair: Pair) -> None:
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequestTopic(
                name="dr-unknown", partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=1)]
            )
        ],
        timeout_ms=10_000,
    )
    pair.check(request, 2)
