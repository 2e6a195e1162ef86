"""KIP-848 consumer groups (``group.protocol=consumer``) with real clients, on ``kafka-wire serve``
and on Apache Kafka 4.4 (the judge of the test itself).

Three members of one group on a 6-partition topic (``test_group_rebalance``'s scenario): each
partition is consumed by exactly one member, a member that leaves moves only its own partitions
(the other two keep everything they had: no stop-the-world rebalance), every record is processed
and committed. Then the broker restarts, and a member of the same group consumes a third phase:
it starts from the committed offsets, so it processes no record of the first two phases.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.apache_kafka import START_TIMEOUT_S, apache_kafka
from tests.e2e.brokers import QUICK_GROUPS, BrokerProcess, kafka_wire
from tests.e2e.test_group_rebalance import (
    BATCH,
    Bootstrapped,
    members_leave_and_rebalance,
    processed,
    produce,
    wait_processed,
)
from tests.interop.harness import Client, DriverOptions, LiveDriver


@pytest.fixture(params=["kafka_wire", "apache_kafka"])
def restartable(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """A broker of the test's own that it may restart: ``kafka-wire serve`` or Apache Kafka 4.4
    (both with ``QUICK_GROUPS``)."""
    workdir = tmp_path_factory.mktemp(request.param)
    if request.param == "kafka_wire":
        broker: BrokerProcess = kafka_wire(workdir, settings=QUICK_GROUPS)
    else:
        broker = apache_kafka(workdir, overrides=QUICK_GROUPS)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.mark.parametrize("client", ["confluent", "java4"])
def test_members_leave_and_offsets_survive_a_restart(restartable: BrokerProcess, client: Client) -> None:
    name = f"kip848-{client}"
    produced = members_leave_and_rebalance(restartable, client, "consumer", name=name)
    restartable.stop()
    restartable.restart(START_TIMEOUT_S)  # a Kafka node takes longer than kafka-wire
    consume_from_committed(restartable, client, name, produced)


def consume_from_committed(
    target: Bootstrapped, client: Client, name: str, produced: dict[tuple[int, int], str]
) -> None:
    """A new member of group ``name`` consumes a third phase from the committed offsets: it
    processes none of ``produced`` (everything of it was committed)."""
    member = LiveDriver(
        client,
        target.bootstrap,
        "group",
        topic=name,
        timeout_s=60.0,
        options=DriverOptions(group=name, batch=BATCH, group_protocol="consumer"),
        name="after-restart",
    )
    try:
        phase3 = produce(target, name, client)
        assert wait_processed([member], set(phase3)), "phase 3 was not processed after the restart"
        member.terminate()
        run = member.finish(20.0)
    finally:
        member.kill()
    again = processed(run.events) & set(produced)
    assert not again, f"committed records processed again after the restart: {sorted(again)[:20]}"
