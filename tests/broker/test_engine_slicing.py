"""Bounded work per engine call: heavy requests run in slices, continued at the next tick, with
other connections answered in between and one connection's requests kept in order."""

from __future__ import annotations

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.effects import Fsync
from kafka_wire.broker.node import Node
from kafka_wire.broker.work import PARTITION_WORK_BYTES
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from kafka_wire.protocol import Response
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create
from tests.broker.test_engine_limits import partition_dirs, topic


def engine_with_budget(work_bytes: int) -> Engine:
    return Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, max_work_bytes_per_call=work_bytes))


def tick(engine: Engine) -> None:
    """One timer call, at the deadline the broker asked for (now, while work remains)."""
    deadline = engine.broker.next_deadline_ms()
    assert deadline is not None and deadline <= engine.now_ms, "no work left to continue"
    engine._apply(engine.broker.tick(engine.now_ms))


def leos(engine: Engine, name: str, partitions: int) -> list[int]:
    state = engine.broker.state
    return [r.log_end_offset if (r := state.replica(name, i)) is not None else -1 for i in range(partitions)]


def produce_request(name: str, batches: list[bytes]) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name=name,
                partition_data=[
                    ProduceRequestPartitionProduceData(index=i, records=b) for i, b in enumerate(batches)
                ],
            )
        ],
    )


def metadata(client: Client, name: str, *, auto_create: bool = False) -> MetadataResponse:
    client.send(
        MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto_create), 9
    )
    [reply] = client.responses()  # answered within the call that brought it: no tick
    assert isinstance(reply.body, MetadataResponse)
    return reply.body


def only(responses: list[Response]) -> object:
    [reply] = responses
    return reply.body


def test_a_produce_runs_in_slices_and_other_connections_are_served_between() -> None:
    engine = engine_with_budget(250_000)
    producer, other = Client(engine, 1), Client(engine, 2)
    create(producer, "t", 8)
    batch = build_batch([NewRecord(None, b"v" * 100_000)], default_timestamp=engine.now_ms)
    producer.send(produce_request("t", [batch] * 8), 9)
    # 100 kB per partition against 250 kB per call: three partitions, then the call yields.
    assert leos(engine, "t", 8) == [1, 1, 1, 0, 0, 0, 0, 0]
    assert producer.responses() == []
    assert engine.broker.next_deadline_ms() == engine.now_ms
    # Another connection is answered in its own call, which does not continue the produce.
    assert metadata(other, "t").topics[0].error_code == ErrorCode.NONE
    assert leos(engine, "t", 8) == [1, 1, 1, 0, 0, 0, 0, 0]
    tick(engine)
    assert leos(engine, "t", 8) == [1, 1, 1, 1, 1, 1, 0, 0] and producer.responses() == []
    tick(engine)
    body = only(producer.responses())
    assert isinstance(body, ProduceResponse)
    assert [(p.index, p.error_code, p.base_offset) for p in body.responses[0].partition_responses] == [
        (i, ErrorCode.NONE, 0) for i in range(8)
    ]
    assert engine.broker.next_deadline_ms() != engine.now_ms


def test_requests_pipelined_on_one_connection_wait_for_its_job() -> None:
    engine = engine_with_budget(1)  # one step per call
    client = Client(engine, 1)
    create(client, "p", 3)
    batch = build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)
    offsets = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequestTopic(
                name="p",
                partitions=[ListOffsetsRequestPartition(partition_index=i, timestamp=-1) for i in range(3)],
            )
        ],
    )
    engine.feed(1, client.conn.send(produce_request("p", [batch] * 3), 9) + client.conn.send(offsets, 7))
    assert leos(engine, "p", 3) == [1, 0, 0] and client.responses() == []
    tick(engine)
    assert leos(engine, "p", 3) == [1, 1, 0] and client.responses() == []
    tick(engine)  # the produce's last step, its answer, then the ListOffsets read after it
    first, second = client.responses()
    assert isinstance(first.body, ProduceResponse) and isinstance(second.body, ListOffsetsResponse)
    assert [p.offset for p in second.body.topics[0].partitions] == [1, 1, 1]


def test_create_topics_opens_partitions_in_slices() -> None:
    engine = engine_with_budget(3 * PARTITION_WORK_BYTES)
    creator, other = Client(engine, 1), Client(engine, 2)
    creator.send(CreateTopicsRequest(topics=[topic("big", 10)], timeout_ms=1000), 7)
    # Answered once the controller committed it; the replica manager opens 3 partitions a call.
    body = only(creator.responses())
    assert isinstance(body, CreateTopicsResponse) and body.topics[0].error_code == ErrorCode.NONE
    assert leos(engine, "big", 10) == [0, 0, 0] + [-1] * 7
    described = metadata(other, "big").topics[0]
    assert [(p.error_code, p.leader_id) for p in described.partitions] == [(ErrorCode.NONE, 1)] * 10
    other.send(CreateTopicsRequest(topics=[topic("big", 1)], timeout_ms=1000), 7)
    again = only(other.responses())
    assert (
        isinstance(again, CreateTopicsResponse)
        and again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    )
    for opened in (6, 9, 10):
        tick(engine)
        assert sum(x >= 0 for x in leos(engine, "big", 10)) == opened
    assert len(partition_dirs(engine, "big")) == 10


def test_delete_topics_in_slices_and_the_name_is_free_at_once() -> None:
    engine = engine_with_budget(2 * PARTITION_WORK_BYTES)
    deleter, other = Client(engine, 1), Client(engine, 2)
    create(deleter, "gone", 5)
    engine.advance(1)
    old_id = engine.broker.state.topic_named("gone").topic_id  # type: ignore[union-attr]
    deleter.send(DeleteTopicsRequest(topic_names=["gone"], timeout_ms=1000), 5)
    body = only(deleter.responses())
    assert isinstance(body, DeleteTopicsResponse) and body.responses[0].error_code == ErrorCode.NONE
    assert 0 < len(partition_dirs(engine, "gone")) < 5, "some directories deleted in this call"
    # As in Kafka's KRaft mode the name is free once the deletion is committed; the new topic's
    # directories come after the old ones are gone.
    assert create(other, "gone", 2).topics[0].error_code == ErrorCode.NONE
    engine.advance(1)
    topic = engine.broker.state.topic_named("gone")
    assert topic is not None and topic.topic_id != old_id and topic.partitions == 2
    assert sorted(partition_dirs(engine, "gone")) == ["gone-0", "gone-1"]
    assert [engine.broker.state.replica("gone", i).topic_id for i in range(2)] == [topic.topic_id] * 2  # type: ignore[union-attr]


def test_admin_jobs_finish_without_their_connection_produce_jobs_do_not() -> None:
    engine = engine_with_budget(1)
    creator = Client(engine, 1)
    creator.send(CreateTopicsRequest(topics=[topic("orphan", 4)], timeout_ms=1000), 7)
    engine._apply(engine.broker.connection_closed(1, engine.now_ms))
    engine.advance(10)
    assert leos(engine, "orphan", 4) == [0, 0, 0, 0]
    producer = Client(engine, 2)
    batch = build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)
    producer.send(produce_request("orphan", [batch] * 4), 9)
    engine._apply(engine.broker.connection_closed(2, engine.now_ms))
    engine.advance(10)
    assert leos(engine, "orphan", 4) == [1, 0, 0, 0]


def test_a_topic_deleted_while_being_created() -> None:
    engine = engine_with_budget(2 * PARTITION_WORK_BYTES)
    creator, deleter = Client(engine, 1), Client(engine, 2)
    creator.send(CreateTopicsRequest(topics=[topic("brief", 8)], timeout_ms=1000), 7)
    deleter.send(DeleteTopicsRequest(topic_names=["brief"], timeout_ms=1000), 5)
    engine.advance(10)
    created, deleted = only(creator.responses()), only(deleter.responses())
    assert isinstance(created, CreateTopicsResponse) and isinstance(deleted, DeleteTopicsResponse)
    assert deleted.responses[0].error_code == ErrorCode.NONE
    assert partition_dirs(engine, "brief") == [] and "brief" not in engine.broker.state.metadata.topics
    assert engine.broker.state.partitions.keys().isdisjoint({("brief", i) for i in range(8)})


def test_a_restart_completes_what_a_shutdown_cut_short() -> None:
    engine = engine_with_budget(PARTITION_WORK_BYTES)
    create(Client(engine, 2), "doomed", 4)
    engine.advance(1)
    Client(engine, 1).send(CreateTopicsRequest(topics=[topic("late", 6)], timeout_ms=1000), 7)
    Client(engine, 3).send(DeleteTopicsRequest(topic_names=["doomed"], timeout_ms=1000), 5)
    assert len(partition_dirs(engine, "late")) < 6 and partition_dirs(engine, "doomed")
    engine._apply(engine.broker.shutdown(engine.now_ms))  # bounded: the queue stops where it is
    restarted = Engine(storage=engine.storage)
    restarted.advance(10)
    assert leos(restarted, "late", 6) == [0] * 6  # the metadata names 6 partitions: all opened
    assert partition_dirs(restarted, "doomed") == []  # what was left is moved aside
    assert any(d.startswith("doomed-") and d.endswith("-stray") for d in restarted.storage.list_dir(""))


def test_due_log_work_is_done_at_its_deadline_while_jobs_run() -> None:
    engine = engine_with_budget(1)
    client = Client(engine, 1)
    create(client, "f", 1, flush_ms="100")
    produce_at = engine.now_ms
    client.send(
        produce_request("f", [build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)]), 9
    )
    assert client.responses()

    def fsyncs() -> int:
        return sum(isinstance(e, Fsync) and e.path.startswith("f-0/") for e in engine.log)

    synced = fsyncs()
    client.send(CreateTopicsRequest(topics=[topic("slow", 100)], timeout_ms=1000), 7)
    tick(engine)
    engine.now_ms = produce_at + 50  # a tick of the job before the flush is due: no flush
    tick(engine)
    assert fsyncs() == synced
    engine.now_ms = produce_at + 100  # the log's deadline is in the engine's timer queue
    tick(engine)
    assert fsyncs() > synced


def metadata_batches(engine: Engine) -> int:
    """Batches of records in the metadata log (the controller writes one per request)."""
    node = engine.broker.node
    assert isinstance(node, Node)
    return node.parts.image.offset


def test_metadata_auto_creation_asks_the_controller_once_for_all_the_topics() -> None:
    engine = engine_with_budget(3 * PARTITION_WORK_BYTES)
    asker, other = Client(engine, 1), Client(engine, 2)
    names = [f"auto-{i}" for i in range(10)]
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in [*names, "auto-0"]], allow_auto_topic_creation=True
    )
    asker.send(request, 9)
    body = only(asker.responses())
    assert isinstance(body, MetadataResponse)
    assert {t.error_code for t in body.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}  # as Kafka answers
    assert set(names) <= set(engine.broker.state.metadata.topics), "one CreateTopics made them all"
    assert metadata(other, "auto-9").topics[0].partitions[0].error_code == ErrorCode.NONE
    engine.advance(1)
    asker.send(request, 9)
    body = only(asker.responses())
    assert isinstance(body, MetadataResponse)
    assert [(t.name, t.error_code, len(t.partitions)) for t in body.topics] == [
        (n, ErrorCode.NONE, 1) for n in [*names, "auto-0"]
    ]


def test_many_topics_in_one_request_are_one_metadata_batch() -> None:
    engine = Engine()
    client = Client(engine, 1)
    before = engine.broker.state.cluster.partitions_of("m0")
    reply = client.request(
        CreateTopicsRequest(topics=[topic(f"m{i}", 1) for i in range(50)], timeout_ms=1000), 7
    )
    assert isinstance(reply.body, CreateTopicsResponse) and {t.error_code for t in reply.body.topics} == {
        ErrorCode.NONE
    }
    assert not before and engine.broker.state.cluster.partitions_of("m49")
    offset = metadata_batches(engine)
    gone = client.request(DeleteTopicsRequest(topic_names=[f"m{i}" for i in range(50)], timeout_ms=1000), 5)
    assert isinstance(gone.body, DeleteTopicsResponse) and {r.error_code for r in gone.body.responses} == {
        ErrorCode.NONE
    }
    assert metadata_batches(engine) == offset + 50, "50 RemoveTopicRecords, one batch"


def test_a_failed_acks0_produce_in_slices_closes_its_connection() -> None:
    engine = engine_with_budget(1)
    client = Client(engine, 1)
    create(client, "z", 2)
    batch = build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)
    request = produce_request("z", [batch] * 3)  # partition 2 does not exist
    request.acks = 0
    client.send(request, 9)
    assert 1 not in engine.closed
    engine.advance(10)
    assert 1 in engine.closed and leos(engine, "z", 2) == [1, 1]


def test_a_request_after_an_acks0_produce_in_slices_waits_for_it() -> None:
    """Found by ``kafka-wire fuzz``: the engine read on past an acks=0 produce still in slices,
    answered the next request, then closed when the produce failed; Kafka handles one request at
    a time, so the request after a failing acks=0 produce is never answered."""
    engine = engine_with_budget(1)
    client = Client(engine, 1)
    create(client, "z", 2)
    batch = build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)
    request = produce_request("z", [batch] * 3)  # partition 2 does not exist
    request.acks = 0
    client.send(request, 9)
    client.send(MetadataRequest(topics=None), 9)
    assert engine.take(1) == b""  # the Metadata waits for the produce
    engine.advance(10)
    assert 1 in engine.closed and engine.take(1) == b""


def test_a_request_after_a_good_acks0_produce_in_slices_is_answered_once_it_is_done() -> None:
    engine = engine_with_budget(1)
    client = Client(engine, 1)
    create(client, "z", 3)
    batch = build_batch([NewRecord(None, b"x")], default_timestamp=engine.now_ms)
    request = produce_request("z", [batch] * 3)
    request.acks = 0
    client.send(request, 9)
    reply = client.request(MetadataRequest(topics=None), 9)
    assert isinstance(reply.body, MetadataResponse)
    assert leos(engine, "z", 3) == [1, 1, 1] and 1 not in engine.closed


def test_a_large_create_topics_is_decided_replayed_and_published_in_steps_and_seen_whole() -> None:
    engine = Engine()  # the default budget
    creator, other = Client(engine, 1), Client(engine, 2)
    creator.send(CreateTopicsRequest(topics=[topic("wide", 2_000)], timeout_ms=30_000), 7)
    calls, replies = 1, []
    seen: list[int] = []
    while not seen or seen[-1] == 0:
        # Between two steps another connection is answered, and sees none of the topic or all of
        # it (the broker may publish it just after the controller answered, as a Kafka broker can).
        described = metadata(other, "wide").topics[0]
        seen.append(len(described.partitions) if described.error_code == ErrorCode.NONE else 0)
        assert len(engine.broker.state.cluster.partitions_of("wide")) in (0, 2_000)
        replies += creator.responses()
        if seen[-1] == 0:
            tick(engine)
            calls += 1
    replies += creator.responses()
    body = only(replies)
    assert isinstance(body, CreateTopicsResponse) and body.topics[0].error_code == ErrorCode.NONE
    assert calls > 5, "the creation took steps in many calls"
    assert set(seen) == {0, 2_000}
