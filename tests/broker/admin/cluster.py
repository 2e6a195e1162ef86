"""A fake ClusterView (three brokers, one fenced, a partition offline) and an engine that uses it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from kafka_wire.broker.cluster_view import BrokerInfo, Endpoint, Outbound, PartitionState
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.codec.structs import Message
from tests.broker.engine import Engine

TOPIC_ID = uuid.UUID("5f1b2c3d-0000-4000-8000-000000000001")


def endpoints(node_id: int) -> tuple[Endpoint, ...]:
    return (
        Endpoint("PLAINTEXT", f"broker{node_id}", 9090 + 2 * node_id),
        Endpoint("CONTROLLER", f"broker{node_id}", 9091 + 2 * node_id),
    )


class FakeView:
    """Brokers 1 and 2 unfenced, 3 fenced; ``orders`` partitions: 0 led by 1, 1 led by 2, 2
    offline (its only ISR member, 3, is fenced). Requests sent are recorded in :attr:`sent`."""

    def __init__(self, *, controller_id: int = 3000) -> None:
        self.node_id = 1
        self.controller_id = controller_id
        self.inter_broker_listener = "PLAINTEXT"
        self.controller_listener = "CONTROLLER"
        self._brokers = {
            1: BrokerInfo(1, 10, endpoints(1), rack="a", fenced=False),
            2: BrokerInfo(2, 11, endpoints(2), rack="b", fenced=False),
            3: BrokerInfo(3, 12, endpoints(3), rack="c", fenced=True),
        }
        self._partitions = {
            ("orders", 0): PartitionState(
                "orders", 0, TOPIC_ID, (1, 2, 3), (1, 2), 1, 5, 7, elr=(3,), last_known_elr=()
            ),
            ("orders", 1): PartitionState("orders", 1, TOPIC_ID, (2, 3, 1), (2, 1), 2, 3, 4),
            ("orders", 2): PartitionState(
                "orders", 2, TOPIC_ID, (3,), (3,), -1, 9, 9, elr=(), last_known_elr=(3,)
            ),
        }
        self.sent: list[Outbound] = []

    def brokers(self) -> Sequence[BrokerInfo]:
        return list(self._brokers.values())

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self._brokers.get(node_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self._partitions.get((topic, partition))

    def partitions_of(self, topic: str) -> Sequence[PartitionState]:
        return [p for (t, _), p in sorted(self._partitions.items()) if t == topic]

    def finalized_features(self) -> tuple[int, Mapping[str, int]]:
        return -1, {}

    def send(self, outbound: Outbound) -> None:
        self.sent.append(outbound)


def cluster_engine(view: FakeView | None = None) -> tuple[Engine, FakeView]:
    """An engine on broker 1 of the fake cluster, whose metadata has topic ``orders``."""
    view = view or FakeView()
    engine = Engine()
    state = engine.broker.state
    state.cluster = view
    state.metadata.topics["orders"] = TopicInfo(name="orders", topic_id=TOPIC_ID, partitions=3)
    return engine, view


def deliver(engine: Engine, view: FakeView, reply: Message | None, index: int = 0) -> None:
    """Give the broker the reply to the ``index``-th request it sent, then let it answer."""
    view.sent[index].on_reply(reply, engine.now_ms)
    engine._apply(engine.broker.tick(engine.now_ms))
