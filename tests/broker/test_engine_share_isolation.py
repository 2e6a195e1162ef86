"""Share group configs that change what a share-partition hands out, as Kafka 4.4 applies them:

* ``share.isolation.level=read_committed``: a share fetch reads up to the last stable offset, and
  the records of aborted transactions are archived instead of acquired (their ABORT and COMMIT
  markers are acquired as any record: the Java client skips control records and acknowledges
  their offsets as gaps). The level is read at every share fetch;
* ``share.auto.offset.reset=by_duration:<duration>``: a share-partition with no state starts at
  the first record whose timestamp is at or after now less the duration; with none, its share
  fetches answer OFFSET_NOT_AVAILABLE and it is started again at a later fetch.
"""

from __future__ import annotations

import uuid

from kafka_wire.broker.group.share_partition import RecordState
from kafka_wire.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import produce
from tests.broker.test_engine_share import (
    acknowledge,
    acquired,
    alter_group,
    fetch,
    fetch_until_acquired,
    produce_values,
    setup,
)

E = ErrorCode


class Transactions:
    """One transactional producer ("tx") of topic ``q`` partition 0, through the broker's
    transaction coordinator (InitProducerId, AddPartitionsToTxn v3, Produce, EndTxn)."""

    def __init__(self, engine: Engine, client: Client) -> None:
        self.engine, self.client = engine, client
        for _ in range(20):
            found = client.request(FindCoordinatorRequest(key="tx", key_type=1), 3).body
            assert isinstance(found, FindCoordinatorResponse)
            if found.error_code == E.NONE:
                break
            engine.advance(100)
        for _ in range(20):
            init = client.request(
                InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000), 4
            ).body
            assert isinstance(init, InitProducerIdResponse)
            if init.error_code == E.NONE:
                break
            engine.advance(100)
        assert isinstance(init, InitProducerIdResponse) and init.error_code == E.NONE
        self.producer_id, self.epoch = init.producer_id, init.producer_epoch
        self.sequence = 0

    def transaction(self, values: list[bytes], commit: bool) -> None:
        added = self.client.request(
            AddPartitionsToTxnRequest(
                v3_and_below_transactional_id="tx",
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=[AddPartitionsToTxnRequestTopic(name="q", partitions=[0])],
            ),
            3,
        ).body
        assert isinstance(added, AddPartitionsToTxnResponse)
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == E.NONE
        batch = build_batch(
            [NewRecord(b"k", v) for v in values],
            default_timestamp=self.engine.now_ms,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        self.sequence += len(values)
        self._produce(batch)
        ended = self.client.request(
            EndTxnRequest(
                transactional_id="tx",
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                committed=commit,
            ),
            3,
        ).body
        assert isinstance(ended, EndTxnResponse) and ended.error_code == E.NONE
        self.engine.advance(0)  # the markers go round (WriteTxnMarkers to this broker)

    def _produce(self, batch: bytes) -> None:
        reply = self.client.request(
            ProduceRequest(
                transactional_id="tx",
                acks=-1,
                timeout_ms=1000,
                topic_data=[
                    ProduceRequestTopicProduceData(
                        name="q", partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
                    )
                ],
            ),
            9,
        ).body
        assert isinstance(reply, ProduceResponse)
        assert reply.responses[0].partition_responses[0].error_code == E.NONE

    def open(self, values: list[bytes]) -> None:
        """Records of a transaction left open (it holds the last stable offset back)."""
        self.client.request(
            AddPartitionsToTxnRequest(
                v3_and_below_transactional_id="tx",
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=[AddPartitionsToTxnRequestTopic(name="q", partitions=[0])],
            ),
            3,
        )
        batch = build_batch(
            [NewRecord(b"k", v) for v in values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        self.sequence += len(values)
        self._produce(batch)


def produce_at(client: Client, values: list[bytes], timestamp_ms: int) -> None:
    reply = produce(
        client, "q", build_batch([NewRecord(b"k", v) for v in values], default_timestamp=timestamp_ms)
    )
    assert reply is not None and reply.responses[0].partition_responses[0].error_code == E.NONE


def _state(engine: Engine, topic_id: uuid.UUID, offset: int) -> RecordState | None:
    share = engine.broker.state.share
    assert share is not None
    record = share.partitions[("sg", topic_id, 0)].records.get(offset)
    return None if record is None else record.state


def test_read_committed_archives_aborted_transactions_and_stops_at_the_last_stable_offset() -> None:
    engine, client, topic_id = setup()
    assert alter_group(client, "share.isolation.level", "read_committed") == E.NONE
    engine.advance(0)
    txns = Transactions(engine, client)
    txns.transaction([b"a0", b"a1"], commit=False)  # 0-1, its ABORT marker 2
    txns.transaction([b"c0", b"c1"], commit=True)  # 3-4, its COMMIT marker 5
    produce_values(engine, client, [b"plain"])  # 6
    txns.open([b"o0"])  # 7: open, so the last stable offset stays at 7
    replica = engine.broker.state.replica("q", 0)
    assert replica is not None and (replica.last_stable_offset, replica.high_watermark) == (7, 8)
    # 0-1 aborted: archived, not delivered; the markers are delivered as records (skipped by the
    # Java client, which acknowledges them as gaps); 7 is past the last stable offset
    assert acquired(fetch(client, topic_id, 0)) == [(2, 6, 1)]
    assert (_state(engine, topic_id, 0), _state(engine, topic_id, 1)) == (RecordState.ARCHIVED,) * 2
    assert _state(engine, topic_id, 7) is None
    done = acknowledge(client, topic_id, 1, [(2, 2, [0]), (3, 4, [1]), (5, 5, [0]), (6, 6, [1])])
    assert done.responses[0].partitions[0].error_code == E.NONE
    share = engine.broker.state.share
    assert share is not None and share.partitions[("sg", topic_id, 0)].start_offset == 7
    assert acquired(fetch(client, topic_id, 2)) == []


def test_read_uncommitted_delivers_aborted_records_and_the_level_applies_to_later_fetches() -> None:
    engine, client, topic_id = setup()
    txns = Transactions(engine, client)
    txns.transaction([b"a0", b"a1"], commit=False)  # 0-1, marker 2
    assert acquired(fetch(client, topic_id, 0)) == [(0, 2, 1)]  # the default: read uncommitted
    assert acknowledge(client, topic_id, 1, [(0, 2, [1])]).responses[0].partitions[0].error_code == E.NONE
    # the group's level changes: the next fetches read committed
    assert alter_group(client, "share.isolation.level", "read_committed") == E.NONE
    engine.advance(0)
    txns.transaction([b"a2"], commit=False)  # 3, marker 4
    txns.open([b"o0"])  # 5
    assert acquired(fetch(client, topic_id, 2)) == [(4, 4, 1)]
    assert _state(engine, topic_id, 3) == RecordState.ARCHIVED
    assert alter_group(client, "share.isolation.level", "read_uncommitted") == E.NONE
    engine.advance(0)
    assert acquired(fetch(client, topic_id, 3)) == [(5, 5, 1)]  # past the last stable offset again


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
