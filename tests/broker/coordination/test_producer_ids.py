"""Producer ids from controller-allocated blocks (AllocateProducerIds), as Kafka's RPCProducerIdManager."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.broker.apis import init_producer_id
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.producer_ids import BLOCK_SIZE, RETRY_BACKOFF_MS, IdBlock, ProducerIdBlocks
from kafka_wire.broker.state import BrokerState, Context
from kafka_wire.messages import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    RequestHeader,
)
from kafka_wire.protocol.events import Request
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine

from .fakes import NOW, FakeCluster, node_state

E = ErrorCode


@dataclass
class FakeController:
    """Hands out consecutive blocks, as the controller's ProducerIdsRecord chain does."""

    next_start: int = 0
    length: int = BLOCK_SIZE

    def answer(self, cluster: FakeCluster, now_ms: int = NOW) -> AllocateProducerIdsRequest:
        outbound = cluster.sent.pop(0)
        assert isinstance(outbound.body, AllocateProducerIdsRequest)
        assert (outbound.destination, outbound.listener) == (
            cluster.controller_id,
            cluster.controller_listener,
        )
        reply = AllocateProducerIdsResponse(producer_id_start=self.next_start, producer_id_len=self.length)
        self.next_start += self.length
        outbound.on_reply(reply, now_ms)
        return outbound.body


def test_a_request_without_a_block_is_retriable_and_asks_for_one() -> None:
    cluster = FakeCluster(node_id=2)
    blocks = ProducerIdBlocks(cluster, lambda: 77)
    assert blocks.next_id(NOW) is None
    assert blocks.next_id(NOW) is None  # one request in flight
    assert len(cluster.sent) == 1
    body = FakeController(next_start=5000).answer(cluster)
    assert (body.broker_id, body.broker_epoch) == (2, 77)
    assert [blocks.next_id(NOW) for _ in range(3)] == [5000, 5001, 5002]
    assert blocks.current_block == IdBlock(5000, BLOCK_SIZE)


def test_the_next_block_is_prefetched_at_90_percent() -> None:
    cluster = FakeCluster()
    controller = FakeController()
    blocks = ProducerIdBlocks(cluster, lambda: 1)
    blocks.next_id(NOW)
    controller.answer(cluster)
    ids = [blocks.next_id(NOW) for _ in range(900)]
    assert ids == list(range(900)) and not cluster.sent
    assert blocks.next_id(NOW) == 900  # first + 90% of the block: the next is asked for
    assert len(cluster.sent) == 1 and blocks.in_flight
    controller.answer(cluster)
    assert blocks.prefetched_block == IdBlock(1000, BLOCK_SIZE)
    ids = [blocks.next_id(NOW) for _ in range(200)]
    assert ids == list(range(901, 1101))  # no gap, no wait at the block's end
    assert blocks.current_block == IdBlock(1000, BLOCK_SIZE) and not cluster.sent


def test_two_brokers_never_hand_out_the_same_id() -> None:
    controller = FakeController()
    one, two = FakeCluster(node_id=1), FakeCluster(node_id=2)
    brokers = [(one, ProducerIdBlocks(one, lambda: 1)), (two, ProducerIdBlocks(two, lambda: 2))]
    handed: list[int] = []
    for turn in range(5000):
        cluster, blocks = brokers[turn % 3 % 2]  # uneven use
        got = blocks.next_id(NOW)
        if cluster.sent:
            controller.answer(cluster)
        if got is not None:
            handed.append(got)
    assert len(handed) == len(set(handed)) > 4900
    assert controller.next_start >= max(handed)


def test_failures_back_off_and_bad_blocks_are_refused() -> None:
    cluster = FakeCluster()
    blocks = ProducerIdBlocks(cluster, lambda: 1)
    blocks.next_id(NOW)
    cluster.sent.pop().on_reply(None, NOW)  # timed out / connection lost
    assert blocks.next_id(NOW + RETRY_BACKOFF_MS - 1) is None and not cluster.sent
    assert blocks.next_id(NOW + RETRY_BACKOFF_MS) is None and len(cluster.sent) == 1
    cluster.sent.pop().on_reply(AllocateProducerIdsResponse(error_code=E.STALE_BROKER_EPOCH), NOW + 60)
    assert blocks.next_id(NOW + 200) is None
    FakeController(next_start=1000).answer(cluster, NOW + 200)
    assert blocks.next_id(NOW + 200) == 1000
    for _ in range(900):
        blocks.next_id(NOW + 200)
    # A block that goes backwards is not used.
    FakeController(next_start=0).answer(cluster, NOW + 300)
    assert blocks.prefetched_block is None
    controller = FakeController(next_start=2000, length=0)
    blocks.next_id(NOW + 400)
    controller.answer(cluster, NOW + 400)
    assert blocks.prefetched_block is None


def init(state: BrokerState, now_ms: int = NOW) -> InitProducerIdResponse:
    body = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    header = RequestHeader(request_api_key=22, request_api_version=4, correlation_id=1, client_id="c")
    ctx = Context(state=state, effects=EffectSink(), conn_id=1, request=Request(header, body), now_ms=now_ms)
    return init_producer_id.handle(ctx, body)


def test_init_producer_id_answers_from_the_blocks_in_a_cluster() -> None:
    cluster = FakeCluster()
    state = node_state(cluster, MemoryStorage())
    assert init(state).error_code == E.COORDINATOR_LOAD_IN_PROGRESS  # no blocks wired: no id
    state.producer_ids = ProducerIdBlocks(cluster, lambda: 12)
    first = init(state)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (
        E.COORDINATOR_LOAD_IN_PROGRESS,
        -1,
        -1,
    )
    FakeController(next_start=3000).answer(cluster)
    second = init(state)
    assert (second.error_code, second.producer_id, second.producer_epoch) == (E.NONE, 3000, 0)


def test_a_single_node_hands_out_ids_from_its_own_controllers_blocks_never_twice() -> None:
    engine = Engine()
    client = Client(engine, 1)
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    ids = []
    for _ in range(3):
        answer = client.request(request, 4).body
        assert isinstance(answer, InitProducerIdResponse) and answer.error_code == E.NONE
        ids.append(answer.producer_id)
    assert ids == [0, 1, 2], "the first block was fetched when the node started"
    again = Engine(storage=engine.storage)
    answer = Client(again, 1).request(request, 4).body
    assert isinstance(answer, InitProducerIdResponse) and answer.producer_id >= 1000  # the next block
