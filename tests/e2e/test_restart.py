"""Stopping, killing and restarting the broker: acknowledged data and committed offsets survive.

Written against the ``broker`` fixture (conftest.py): a fresh ``kafka-wire serve`` per test, on
its own port and data dir, which the test stops (SIGTERM), kills (SIGKILL) and restarts on the same
port and data dir. Tansu has memory storage only, so it cannot play this part (its one test here
checks the fixture mechanics and that it does forget); these tests need ``kafka-wire serve``.

* A clean stop (SIGTERM) exits with status 0 within ``brokers.STOP_TIMEOUT_S``.
* Records acknowledged with acks=all (librdkafka's default) are all there after a restart, after
  SIGTERM and after SIGKILL alike (a process kill, not a machine crash: data handed to the OS
  before the acknowledgement survives without an fsync), with their keys, values and headers, and
  new records continue each partition's offsets.
* Offsets a group committed before the restart are where the group resumes after it.
* A consumer that stays up while the broker restarts reconnects and goes on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.brokers import BrokerProcess, tansu
from tests.interop.harness import DriverOptions, DriverRun, LiveDriver, run_driver

PARTITIONS = 3
COUNT = 60
TIMEOUT_S = 60.0

Event = dict[str, Any]


def produce(broker: BrokerProcess, topic: str, *, create: bool = False) -> DriverRun:
    steps = "create,produce" if create else "produce"
    return run_driver(
        "confluent",
        broker.bootstrap,
        steps,
        topic=topic,
        count=COUNT,
        timeout_s=TIMEOUT_S,
        options=DriverOptions(partitions=PARTITIONS, headers=True, compression="lz4"),
    ).check()


def expected(run: DriverRun) -> dict[tuple[int, int], list[Any]]:
    """(partition, offset) -> [key, value, headers] of what a ``produce`` run sent."""
    return {
        (p, o): [f"k{i}", f"confluent-{i}", [["i", str(i)], ["client", "confluent"]]]
        for i, (p, o) in enumerate(run.event("produced")["records"])
    }


def consume_all(
    broker: BrokerProcess, topic: str, count: int, group: str
) -> dict[tuple[int, int], list[Any]]:
    run = run_driver(
        "confluent",
        broker.bootstrap,
        "consume",
        topic=topic,
        count=count,
        timeout_s=TIMEOUT_S,
        options=DriverOptions(group=group),
    ).check()
    records = run.event("consumed")["records"]
    got = {(r[0], r[1]): r[2:] for r in records}
    assert len(got) == len(records), f"a record was read twice: {run.describe()}"
    return got


def end_offsets(records: dict[tuple[int, int], Any]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for p, o in records:
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends


def take_down(broker: BrokerProcess, how: str) -> None:
    if how == "sigterm":
        status = broker.stop()
        assert status == 0, (
            f"SIGTERM: exit status {status} (None: still running after the timeout)\n{broker.log()[-3000:]}"
        )
    else:
        broker.kill()


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_acknowledged_records_survive_restart(broker: BrokerProcess, how: str) -> None:
    topic = f"restart-{how}"
    before = expected(produce(broker, topic, create=True))
    assert end_offsets(before) == {p: COUNT // PARTITIONS for p in range(PARTITIONS)}

    take_down(broker, how)
    broker.restart()

    metadata = run_driver("confluent", broker.bootstrap, "metadata", timeout_s=TIMEOUT_S).check()
    assert topic in metadata.event("metadata")["topics"], metadata.describe()
    assert consume_all(broker, topic, COUNT, f"after-{how}") == before

    # New records continue each partition's offsets.
    after = expected(produce(broker, topic))
    firsts = {p: min(o for q, o in after if q == p) for p in range(PARTITIONS)}
    assert firsts == end_offsets(before), f"offsets after the restart start at {firsts}"
    assert consume_all(broker, topic, 2 * COUNT, f"after-{how}-2") == {**before, **after}


def processed(events: list[Event]) -> set[tuple[int, int]]:
    return {(r[0], r[1]) for e in events if e.get("event") == "processed" for r in e["records"]}


def committed(events: list[Event]) -> dict[int, int]:
    last: dict[int, int] = {}
    for e in events:
        if e.get("event") == "committed":
            last.update({p: c for p, c in e["offsets"]})
    return last


def group_member(broker: BrokerProcess, topic: str, group: str) -> LiveDriver:
    return LiveDriver(
        "confluent",
        broker.bootstrap,
        "group",
        topic=topic,
        timeout_s=90.0,
        options=DriverOptions(group=group, batch=10),
    )


def finish_member(member: LiveDriver) -> DriverRun:
    member.terminate()
    run = member.finish(20.0)
    assert run.returncode == 0 and [e["event"] for e in run.events][-2:] == ["closed", "done"], run.describe()
    return run


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_committed_offsets_survive_restart(broker: BrokerProcess, how: str) -> None:
    topic, group = f"offsets-{how}", f"offsets-{how}"
    phase1 = expected(produce(broker, topic, create=True))
    member = group_member(broker, topic, group)
    try:
        assert member.wait_for(
            lambda ev: set(phase1) <= processed(ev) and committed(ev) == end_offsets(phase1), 45.0
        ), member.events
        first = finish_member(member)
    finally:
        member.kill()
    assert committed(first.events) == end_offsets(phase1)

    take_down(broker, how)
    broker.restart()

    phase2 = expected(produce(broker, topic))
    member = group_member(broker, topic, group)
    try:
        assert member.wait_for(lambda ev: set(phase2) <= processed(ev), 45.0), member.events
        second = finish_member(member)
    finally:
        member.kill()
    # Resumed exactly at the committed offsets: nothing of phase 1 again, all of phase 2.
    assert processed(second.events) == set(phase2), second.describe()
    assert committed(second.events) == end_offsets({**phase1, **phase2}), second.describe()


def test_consumer_rides_through_restart(broker: BrokerProcess) -> None:
    """A group member stays up while the broker stops and starts again; it reconnects, rejoins
    and processes what is produced after the restart, without reprocessing committed records."""
    topic, group = "ride-through", "ride-through"
    phase1 = expected(produce(broker, topic, create=True))
    member = group_member(broker, topic, group)
    try:
        assert member.wait_for(
            lambda ev: set(phase1) <= processed(ev) and committed(ev) == end_offsets(phase1), 45.0
        ), member.events
        take_down(broker, "sigterm")
        broker.restart()
        phase2 = expected(produce(broker, topic))
        assert member.wait_for(lambda ev: set(phase1) | set(phase2) <= processed(ev), 60.0), member.events
        run = finish_member(member)
    finally:
        member.kill()
    counts: dict[tuple[int, int], int] = {}
    for e in run.events:
        if e.get("event") == "processed":
            for p, o, _ in e["records"]:
                counts[(p, o)] = counts.get((p, o), 0) + 1
    assert set(counts) == set(phase1) | set(phase2), run.describe()
    twice = sorted(k for k, n in counts.items() if n > 1 and k in phase1)
    assert not twice, f"committed records processed again after the restart: {twice}"


def test_tansu_restarts_on_the_same_port(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The fixture mechanics, on Tansu: stop, kill and restart on the same port. Tansu's memory
    storage forgets the topic on each restart, which is why it cannot stand in for the tests above."""
    broker = tansu(tmp_path_factory.mktemp("tansu-restart"))
    try:
        broker.start()
        port = broker.address.port
        produce(broker, "tansu-restart", create=True)

        status = broker.stop()
        assert status is not None, "Tansu ignored SIGTERM"
        broker.restart()
        assert broker.address.port == port and broker.running()
        metadata = run_driver("confluent", broker.bootstrap, "metadata", timeout_s=TIMEOUT_S).check()
        assert "tansu-restart" not in metadata.event("metadata")["topics"], (
            "Tansu kept data in memory storage?"
        )

        assert broker.kill() == -9
        broker.restart()
        produce(broker, "tansu-restart", create=True)  # serves again, from empty
        assert len(broker.startups_s) == 3
    finally:
        broker.close()
