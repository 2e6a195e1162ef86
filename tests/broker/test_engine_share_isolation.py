"""Share group configs that change what a share-partition hands out, as Kafka 4.4 applies them:

* ``share.auto.offset.reset=by_duration:<duration>``: a share-partition with no state starts at
  the first record whose timestamp is at or after now less the duration; with none, its share
  fetches answer OFFSET_NOT_AVAILABLE and it is started again at a later fetch.
"""

from __future__ import annotations

from kafka_wire.messages import ErrorCode
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client
from tests.broker.test_engine import produce
from tests.broker.test_engine_share import (
    acquired,
    alter_group,
    fetch,
    fetch_until_acquired,
    produce_values,
    setup,
)

E = ErrorCode


def produce_at(client: Client, values: list[bytes], timestamp_ms: int) -> None:
    reply = produce(
        client, "q", build_batch([NewRecord(b"k", v) for v in values], default_timestamp=timestamp_ms)
    )
    assert reply is not None and reply.responses[0].partition_responses[0].error_code == E.NONE


def test_by_duration_starts_at_the_first_record_at_or_after_now_less_the_duration() -> None:
    engine, client, topic_id = setup(warm=False)
    produce_at(client, [b"old0", b"old1"], engine.now_ms - 3_600_000)  # 0-1, an hour old
    produce_at(client, [b"new0", b"new1"], engine.now_ms - 60_000)  # 2-3, a minute old
    produce_at(client, [b"older"], engine.now_ms - 7_200_000)  # 4: the lookup takes the first at or after
    assert alter_group(client, "share.auto.offset.reset", "by_duration:-PT1H") == E.INVALID_CONFIG
    assert alter_group(client, "share.auto.offset.reset", "by_duration:PT") == E.INVALID_CONFIG
    assert alter_group(client, "share.auto.offset.reset", "by_duration:PT30M") == E.NONE
    engine.advance(0)
    # now - 30 min falls between the two: the share-partition starts at 2 (latest would be 5,
    # earliest 0)
    assert fetch_until_acquired(engine, client, topic_id) == [(2, 4, 1)]


def test_by_duration_with_no_record_recent_enough_answers_offset_not_available() -> None:
    engine, client, topic_id = setup(warm=False)
    produce_at(client, [b"old"], engine.now_ms - 7_200_000)  # 0
    assert alter_group(client, "share.auto.offset.reset", "by_duration:PT1H") == E.NONE
    engine.advance(0)
    errors: list[int] = []
    epoch = 0
    for _ in range(30):
        reply = fetch(client, topic_id, epoch)
        errors += [p.error_code for t in reply.responses for p in t.partitions if p.error_code]
        assert acquired(reply) == []
        epoch += 1
        engine.advance(100)
    share = engine.broker.state.share
    assert share is not None and ("sg", topic_id, 0) not in share.partitions
    assert errors and set(errors) == {E.OFFSET_NOT_AVAILABLE}
    # a record recent enough: the share-partition starts there at a later fetch
    produce_values(engine, client, [b"new"])  # 1
    for _ in range(30):
        got = acquired(fetch(client, topic_id, epoch))
        epoch += 1
        if got:
            break
        engine.advance(100)
    assert got == [(1, 1, 1)]
