"""BrokerLifecycle against a fake controller: registration, heartbeats, fencing, controlled shutdown."""

from __future__ import annotations

import random

from kafka_wire.broker.cluster_settings import ClusterSettings, Voter
from kafka_wire.broker.cluster_view import Endpoint, Outbound
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.lifecycle import BrokerLifecycle, LifecycleState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ErrorCode,
)


class FakeController:
    """Collects what the broker sends; the test answers."""

    def __init__(self) -> None:
        self.sent: list[Outbound] = []
        self.controller_id = 9
        self.offset = 0

    def send(self, outbound: Outbound) -> None:
        self.sent.append(outbound)

    def answer(self, body: Message | None, now_ms: int) -> None:
        outbound = self.sent[-1]
        outbound.on_reply(body, now_ms)


def lifecycle(fake: FakeController, previous_broker_epoch: int = -1, **config: int | bool) -> BrokerLifecycle:
    return BrokerLifecycle(
        BrokerConfig(node_id=4, rack="r1", broker_heartbeat_interval_ms=2000, **config),  # type: ignore[arg-type]
        cluster_id="c-1",
        rng=random.Random(1),
        listeners=[Endpoint("PLAINTEXT", "h4", 9100)],
        controller_listener="CONTROLLER",
        controller_id=lambda: fake.controller_id,
        metadata_offset=lambda: fake.offset,
        send=fake.send,
        previous_broker_epoch=previous_broker_epoch,
    )


def test_the_registration_announces_each_listeners_security_protocol() -> None:
    fake = FakeController()
    settings = ClusterSettings(
        roles=frozenset({"broker"}),
        listeners=(Endpoint("CLIENT", "h4", 9100), Endpoint("INTERNAL", "h4", 9101)),
        advertised_listeners=(Endpoint("CLIENT", "h4", 9100), Endpoint("INTERNAL", "h4", 9101)),
        controller_listener_names=("CONTROLLER",),
        inter_broker_listener="INTERNAL",
        voters=(Voter(9, "h9", 9300),),
        security_protocols=(("CLIENT", "SASL_SSL"), ("INTERNAL", "SSL")),
    )
    life = BrokerLifecycle(
        BrokerConfig(node_id=4, cluster=settings),
        cluster_id="c-1",
        rng=random.Random(1),
        listeners=settings.advertised_listeners,
        controller_listener="CONTROLLER",
        controller_id=lambda: fake.controller_id,
        metadata_offset=lambda: fake.offset,
        send=fake.send,
    )
    life.start(0)
    life.tick(0)
    body = fake.sent[-1].body
    assert isinstance(body, BrokerRegistrationRequest)
    assert [(e.name, e.security_protocol) for e in body.listeners] == [("CLIENT", 3), ("INTERNAL", 1)]


def registered(fake: FakeController, life: BrokerLifecycle, epoch: int = 17) -> None:
    life.start(0)
    life.tick(0)
    fake.answer(BrokerRegistrationResponse(broker_epoch=epoch), 1)


def test_registration_then_heartbeats_until_unfenced() -> None:
    fake = FakeController()
    life = lifecycle(fake)
    life.start(0)
    assert life.next_deadline_ms() == 0
    life.tick(0)
    (out,) = fake.sent
    assert out.destination == 9 and out.listener == "CONTROLLER"
    body = out.body
    assert isinstance(body, BrokerRegistrationRequest)
    assert (body.broker_id, body.cluster_id, body.rack) == (4, "c-1", "r1")
    assert body.incarnation_id == life.incarnation_id
    assert [(e.name, e.host, e.port, e.security_protocol) for e in body.listeners] == [
        ("PLAINTEXT", "h4", 9100, 0)
    ]
    assert {f.name for f in body.features} == {"metadata.version", "kraft.version", "transaction.version"}
    assert life.next_deadline_ms() is None  # one request at a time
    fake.answer(BrokerRegistrationResponse(broker_epoch=17), 5)
    assert life.state is LifecycleState.RECOVERY and life.broker_epoch == 17
    life.tick(5)  # the first heartbeat at once
    heartbeat = fake.sent[-1].body
    assert isinstance(heartbeat, BrokerHeartbeatRequest)
    assert (heartbeat.broker_epoch, heartbeat.want_fence, heartbeat.want_shut_down) == (17, True, False)
    fake.answer(BrokerHeartbeatResponse(is_fenced=True), 6)
    assert life.state is LifecycleState.RECOVERY and life.next_deadline_ms() == 2006
    fake.offset = 42
    life.caught_up(7)
    assert life.next_deadline_ms() == 7  # the heartbeat asking to be unfenced goes at once
    life.tick(7)
    heartbeat = fake.sent[-1].body
    assert isinstance(heartbeat, BrokerHeartbeatRequest)
    assert (heartbeat.current_metadata_offset, heartbeat.want_fence) == (42, False)
    fake.answer(BrokerHeartbeatResponse(is_fenced=False), 8)
    assert life.state.name == "RUNNING" and not life.fenced


def test_failed_registration_is_retried_with_doubling_backoff() -> None:
    fake = FakeController()
    life = lifecycle(fake)
    life.start(0)
    life.tick(0)
    fake.answer(None, 10)
    assert life.next_deadline_ms() == 110
    life.tick(110)
    fake.answer(BrokerRegistrationResponse(error_code=ErrorCode.NOT_CONTROLLER), 120)
    assert life.next_deadline_ms() == 320
    fake.controller_id = -1  # no controller known: wait without sending
    life.tick(320)
    assert len(fake.sent) == 2 and life.next_deadline_ms() == 720


def test_a_lost_registration_registers_again() -> None:
    fake = FakeController()
    life = lifecycle(fake, previous_broker_epoch=9)  # what the clean-shutdown marker held
    registered(fake, life)
    first = fake.sent[0].body
    assert isinstance(first, BrokerRegistrationRequest) and first.previous_broker_epoch == 9
    life.tick(1)
    fake.answer(BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH), 2)
    assert life.state is LifecycleState.STARTING
    life.tick(2)
    again = fake.sent[-1].body
    assert isinstance(again, BrokerRegistrationRequest)
    # The same incarnation again, with the same previous epoch (Kafka's lifecycle manager sends
    # the marker's for as long as the process lives).
    assert (again.incarnation_id, again.previous_broker_epoch) == (first.incarnation_id, 9)


def test_controlled_shutdown_waits_for_should_shut_down() -> None:
    fake = FakeController()
    life = lifecycle(fake)
    registered(fake, life)
    life.tick(1)
    fake.answer(BrokerHeartbeatResponse(is_fenced=False), 2)
    life.begin_shutdown(100)
    assert life.state is LifecycleState.PENDING_CONTROLLED_SHUTDOWN and not life.may_stop
    life.tick(100)
    asked = fake.sent[-1].body
    assert isinstance(asked, BrokerHeartbeatRequest) and asked.want_shut_down
    fake.answer(BrokerHeartbeatResponse(is_fenced=False, should_shut_down=False), 101)
    life.tick(2101)
    fake.answer(BrokerHeartbeatResponse(is_fenced=True, should_shut_down=True), 2102)
    assert life.may_stop


def test_controlled_shutdown_gives_up_at_its_bound() -> None:
    fake = FakeController()
    life = lifecycle(fake, controlled_shutdown_timeout_ms=500)
    registered(fake, life)
    life.begin_shutdown(10)
    assert life.next_deadline_ms() == 10
    life.tick(10)
    assert life.next_deadline_ms() == 510  # the bound, while the heartbeat is unanswered
    life.tick(510)
    assert life.may_stop


def test_shutdown_before_registration_needs_no_controller() -> None:
    fake = FakeController()
    life = lifecycle(fake)
    life.start(0)
    life.begin_shutdown(0)
    assert life.may_stop
