"""The simulator's core: a cluster forms on the virtual network, crashes and partitions heal, a
seed replays byte for byte (in this process and through the CLI), and shrinking keeps only the
fault that makes a run fail."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import kafka_wire.cli.simulate as simulate_cli
from kafka_wire.broker.effects import Effect, PauseReading, ResumeReading
from kafka_wire.cli import main
from kafka_wire.cli.simulate import workload
from kafka_wire.errors import DecodeError
from kafka_wire.records import NewRecord, build_batch, read_batches
from kafka_wire.sim.checker import Checker
from kafka_wire.sim.checker.ends import check_end
from kafka_wire.sim.checker.observe import changed_snaps
from kafka_wire.sim.contracts import Violation, WorldView
from kafka_wire.sim.faults import FaultPlan, _Draw, isr_full
from kafka_wire.sim.history import History, Op, OpKind, OpType
from kafka_wire.sim.host import crc_covered
from kafka_wire.sim.run import SimOptions, SimResult, simulate, topic_names, unseen_acks
from kafka_wire.sim.shrink import shrink
from kafka_wire.sim.world import World, WorldConfig, derived_rng
from tests.sim.loader import Loader

ROOT = Path(__file__).resolve().parents[2]
FORM_MS = 30_000


def formed_world(seed: int = 1, nodes: int = 3, *, trace: bool = False) -> World:
    world = World(WorldConfig(seed=seed, nodes=nodes, trace=trace))
    world.start()
    assert world.run_until(world.cluster_ready, world.now_ms + FORM_MS), "the cluster did not form"
    return world


def loaded_world(seed: int = 1) -> tuple[World, Loader]:
    world = formed_world(seed)
    loader = Loader("producer-1", 3, [("t", 3, 3)], world.history, interval_ms=20)
    world.add_client(loader)
    assert world.run_until(lambda: loader.created and loader.acked >= 5, world.now_ms + FORM_MS)
    return world, loader


def faulty_world(clients: list[str] | None = None) -> tuple[World, FaultPlan]:
    """A loaded world whose every ISR is full, and a fault plan over it (faults applied by hand)."""
    world, _ = loaded_world()
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    names = clients or []
    plan = FaultPlan(world.scheduler, world.network, world.hosts, lambda: names, derived_rng(4, "faults"))
    return world, plan


def controller_of(world: World) -> int:
    node = world.hosts[0].node
    assert node is not None
    return node.view.controller_id


def test_a_cluster_forms_with_one_controller_and_every_broker_unfenced() -> None:
    world = formed_world()
    assert {controller_of(world)} <= {1, 2, 3}
    assert all(h.up for h in world.hosts)


def test_a_client_creates_a_topic_and_its_acks_all_writes_are_acknowledged() -> None:
    world, loader = loaded_world()
    world.run_for(2000)
    assert loader.acked >= 20
    leaders = {
        (r.topic, r.partition): h.node_id
        for h in world.hosts
        if h.broker is not None
        for r in h.broker.state.partitions.values()
        if r.is_leader and r.topic == "t"
    }
    assert sorted(leaders) == [("t", 0), ("t", 1), ("t", 2)]


def test_a_killed_controller_is_replaced_and_rejoins_after_its_restart() -> None:
    world, loader = loaded_world()
    victim = world.hosts[controller_of(world) - 1]
    victim.crash("kill")
    assert not victim.up
    others = [h for h in world.hosts if h is not victim]
    assert world.run_until(
        lambda: all(
            h.node is not None and h.node.view.controller_id not in (-1, victim.node_id) for h in others
        ),
        world.now_ms + FORM_MS,
    )
    acked = loader.acked
    world.run_for(8000)  # past broker.session.timeout.ms: its leaderships move
    assert loader.acked > acked  # writes go on with two of three nodes (min.insync.replicas=2)
    victim.start()
    assert world.run_until(world.cluster_ready, world.now_ms + FORM_MS)


def test_power_loss_drops_what_was_not_fsynced_and_the_node_recovers() -> None:
    world, _ = loaded_world()
    host = world.hosts[2]
    written = sum(len(d) for d in host.storage.files.values())
    host.crash("power-loss")
    assert host.storage_losses == [world.now_ms]
    assert sum(len(d) for d in host.storage.files.values()) < written
    host.start()
    assert world.run_until(world.cluster_ready, world.now_ms + FORM_MS)


def test_a_disk_fault_damages_the_last_fsynced_write_of_a_partition_segment() -> None:
    world, _ = loaded_world()
    world.run_for(3000)  # log.flush.interval.messages=8: the segments have fsynced writes
    host = world.hosts[1]
    durable = {p: bytes(d) for p, d in host.storage._durable.items()}
    lost = host.crash("disk-fault", derived_rng(1, "test"))
    kind, _, where = lost.partition(" ")
    path = where.split("[", 1)[0].split("@", 1)[0]
    assert kind in ("lost", "corrupt") and path.endswith(".log") and not path.startswith("__cluster_metadata")
    after = bytes(host.storage.files[path])
    assert after != durable[path]
    assert (len(after) < len(durable[path])) if kind == "lost" else (len(after) == len(durable[path]))
    host.start()
    assert world.run_until(world.cluster_ready, world.now_ms + FORM_MS)


def test_a_node_restarted_after_a_power_loss_does_not_count_as_in_sync_until_it_caught_up() -> None:
    # Seed 47: a power loss on node 3, its restart, and 6 ms later a disk fault on node 1 while
    # the others' registrations still named node 3 in every ISR (the controller had not heard
    # of the restart) but node 3 had not even opened its partitions: two of three copies of
    # unflushed committed records lost, which Kafka does not claim to survive.
    world, _ = loaded_world()
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    host = world.hosts[2]
    host.crash("power-loss")
    assert not isr_full(world.hosts)  # down
    host.start()
    assert not isr_full(world.hosts)  # up, but its partitions are not open and caught up yet
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)


def test_no_storage_loss_while_every_node_waits_to_register_again() -> None:
    # Seed 3201: every node had restarted (kills) and none had registered again, so none had
    # opened a partition and the check had no replica to compare: it passed, and a disk fault
    # struck node 3. The controller then fenced the old incarnations one by one, node 3 stayed
    # alone in every ISR, and was elected with what its power loss had left.
    world, _ = loaded_world()
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    for host in world.hosts:
        host.crash("kill")
    for host in world.hosts:
        host.start()
    assert all(h.up and h.broker is not None and not h.broker.state.partitions for h in world.hosts)
    assert not isr_full(world.hosts)  # up, but no node serves yet
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)


def test_after_a_storage_loss_no_node_crashes_until_the_node_that_lost_bytes_caught_up() -> None:
    # Seed 3201: node 3 lost power, restarted and could not register again (no quorum) while
    # the controller still named it in every ISR; nodes 2 and 1 were then killed in turn. The
    # controller fenced all three old incarnations, node 3 last, so it stayed alone in every ISR
    # and was elected with what its power loss had left: Kafka without ELR does the same.
    world, plan = faulty_world()
    lost = plan._apply(1, _Draw("power-loss", 2, 0, 500, 20, 1))
    assert lost is not None and lost.target == "n3"
    assert world.run_until(lambda: world.hosts[2].up, world.now_ms + 1000)
    assert not isr_full(world.hosts)
    assert plan._apply(2, _Draw("kill", 0, 0, 500, 20, 2)) is None  # node 3 has not caught up
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    killed = plan._apply(3, _Draw("kill", 0, 0, 500, 20, 3))
    assert killed is not None and killed.target == "n1"


def test_after_a_storage_loss_no_partition_cuts_nodes_apart_until_the_node_caught_up() -> None:
    # Seed 2390: node 2 lost power while partitions cut the nodes apart, and a one-way partition
    # then kept node 3, the leader, from the controller. The controller fenced node 3 and the
    # ISR kept only node 2's dead incarnation, elected on its return with what its power loss
    # had left (Kafka without ELR does the same): no live in-sync copy was left.
    world, plan = faulty_world(["c"])
    lost = plan._apply(1, _Draw("power-loss", 1, 0, 500, 20, 1))
    assert lost is not None and lost.target == "n2"
    assert world.run_until(lambda: world.hosts[1].up, world.now_ms + 1000)
    assert plan._apply(2, _Draw("partition-one-way", 2, 0, 500, 20, 2)) is None
    assert plan._apply(3, _Draw("partition", 0, 0, 500, 20, 3)) is None
    client = plan._apply(4, _Draw("partition-client", 0, 0, 500, 20, 2))  # no node cut from another
    assert client is not None and client.target == "c|n1"
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    cut = plan._apply(5, _Draw("partition-one-way", 2, 0, 5000, 20, 5))
    assert cut is not None and cut.target == "n3>n1"
    # And no storage loss while a partition cuts nodes apart (the registrations read are stale).
    assert isr_full(world.hosts)
    assert plan._apply(6, _Draw("power-loss", 0, 0, 500, 20, 6)) is None
    assert plan._apply(7, _Draw("disk-fault", 0, 0, 500, 20, 7)) is None
    killed = plan._apply(8, _Draw("kill", 0, 0, 500, 20, 8))
    assert killed is not None and killed.target == "n1"


def test_a_latency_spike_between_nodes_counts_as_a_partition_for_storage_losses() -> None:
    # Seed 8099 (transactional workload): node 1, the active controller, slowed by +486 ms each
    # way, heard its brokers' heartbeats late or not at all (1 s requests), while node 3 lost
    # power. It fenced brokers 2 and 1 and kept broker 3, whose last heartbeats (sent before the
    # power loss) came in late: the ISRs shrank to node 3's dead incarnation. The records, not
    # committed then, were committed when node 1 won the election of epoch 5 (Raft commits a new
    # leader's earlier entries with its own); node 3 returned, was elected with what its power
    # loss left, and the others truncated committed records (Kafka without ELR does the same).
    world, plan = faulty_world()
    spike = plan._apply(1, _Draw("latency-spike", 0, 0, 1000, 486, 1))
    assert spike is not None and spike.target == "n1"
    assert plan._apply(2, _Draw("power-loss", 2, 0, 500, 20, 2)) is None
    assert plan._apply(3, _Draw("disk-fault", 2, 0, 500, 20, 3)) is None
    killed = plan._apply(4, _Draw("kill", 2, 0, 500, 20, 4))  # a kill loses nothing stored
    assert killed is not None and killed.target == "n3"
    assert world.run_until(
        lambda: not world.network.extra_ms and isr_full(world.hosts), world.now_ms + FORM_MS
    )
    lost = plan._apply(5, _Draw("power-loss", 2, 0, 500, 20, 5))
    assert lost is not None and lost.target == "n3"
    # And no spike between nodes until the node that lost bytes caught up (as partitions).
    assert world.run_until(lambda: world.hosts[2].up, world.now_ms + 1000)
    assert plan._apply(6, _Draw("latency-spike", 0, 0, 1000, 486, 6)) is None
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    assert plan._apply(7, _Draw("latency-spike", 0, 0, 1000, 486, 7)) is not None


def test_no_storage_loss_while_a_leader_proposes_a_smaller_isr() -> None:
    # Seed 6172: node 2's clock jumped 4.5 s, past replica.lag.time.max.ms, while a latency spike
    # kept node 1 a fetch behind, so as leader of __consumer_offsets-2 it saw its followers out
    # of sync and proposed an ISR of itself alone (Kafka's ISR expiration reads the wall clock).
    # Every registration still named the full ISR, so the check passed and node 2 lost power;
    # the controller applied the AlterPartition it had sent, fenced its dead incarnation (leader
    # none, ISR {2}) and elected it on its return with an empty log: the others truncated
    # committed records (KIP-966's last replica standing; Kafka without ELR does the same).
    world, _ = loaded_world()
    assert world.run_until(lambda: isr_full(world.hosts), world.now_ms + FORM_MS)
    broker = world.hosts[1].broker
    assert broker is not None
    led = [r for r in broker.state.partitions.values() if r.is_leader]
    assert led
    replica = led[0]
    replica.pending_isr = (2,)  # the AlterPartition in flight, as the engine's sender keeps it
    assert not isr_full(world.hosts)  # every registration is still full, the proposal is not
    plan = FaultPlan(world.scheduler, world.network, world.hosts, lambda: [], derived_rng(4, "faults"))
    assert plan._apply(1, _Draw("power-loss", 1, 0, 500, 20, 1)) is None
    assert plan._apply(2, _Draw("disk-fault", 0, 0, 500, 20, 2)) is None
    replica.pending_isr = tuple(replica.registration.replicas) if replica.registration else None
    assert isr_full(world.hosts)  # a proposal of the whole replica set takes no one out
    replica.pending_isr = None
    lost = plan._apply(3, _Draw("power-loss", 1, 0, 500, 20, 3))
    assert lost is not None and lost.target == "n2"


def _batches_read(data: bytes) -> list[tuple[int, int]]:
    """(base offset, partition leader epoch) of each batch, or raise when one is found corrupt."""
    return [(b.base_offset, b.partition_leader_epoch) for b in read_batches(data, verify_crc=True)]


def _detected(data: bytes, count: int) -> bool:
    """A corrupt batch fails its CRC, or (a flipped length) reads as torn: recovery cuts there."""
    try:
        return len(_batches_read(data)) < count
    except DecodeError:
        return True


def test_a_disk_fault_flips_only_bits_a_checksum_covers() -> None:
    # Seed 47: a flip in a batch's partition leader epoch, which Kafka's CRC leaves out, was read
    # back as epoch 536870912 and replicated: nothing in Kafka can detect it.
    first = build_batch([NewRecord(b"k", b"v")], base_offset=0, partition_leader_epoch=3)
    second = build_batch(
        [NewRecord(b"k", b"w"), NewRecord(b"k", b"x")], base_offset=1, partition_leader_epoch=3
    )
    data = b"junk" + first + second
    spots = crc_covered(data, 4)
    assert 4 + 12 not in spots and 4 + 8 in spots and 4 + 16 in spots  # epoch out; length, magic in
    assert len(spots) == len(first) + len(second) - 2 * 12
    whole = _batches_read(data[4:])
    for at in spots:
        damaged = bytearray(data[4:])
        damaged[at - 4] ^= 0x20
        assert _detected(bytes(damaged), len(whole)), at
    flipped = bytearray(data[4:])
    flipped[12] ^= 0x20  # the leader epoch: read back as valid
    assert _batches_read(bytes(flipped))[0] == (0, 3 + (0x20 << 24))
    assert crc_covered(data[: len(data) - 1], 4) == spots[: len(first) - 12]  # a torn batch: left out


def test_a_partitioned_node_is_fenced_and_comes_back_after_the_heal() -> None:
    world, _ = loaded_world()
    lonely = world.hosts[controller_of(world) % 3]  # not the controller
    pairs = [(lonely.location, h.location) for h in world.hosts if h is not lonely]
    world.network.block(pairs + [(b, a) for a, b in pairs])
    # past broker.session.timeout.ms the controller fences it. The cut-off node itself still
    # names the old controller: with pre-vote (KIP-996) it never wins a pre-vote, so it keeps
    # its epoch and leader, as Kafka 4's does, and the others never see a new epoch.
    other = next(h for h in world.hosts if h is not lonely)
    assert lonely.node is not None and other.node is not None
    lonely_id, view = lonely.node.view.node_id, other.node.view
    assert world.run_until(
        lambda: any(b.node_id == lonely_id and b.fenced for b in view.brokers()), world.now_ms + FORM_MS
    )
    world.network.unblock(None)
    assert world.run_until(world.cluster_ready, world.now_ms + FORM_MS)


class Recorder:
    """A network end at ``location`` that accepts every dial and records what reaches it."""

    def __init__(self, location: str, got: list[bytes]) -> None:
        self.location = location
        self.got = got

    def net_accept(self, port: int, conn: object) -> int | None:
        return 7

    def net_connected(self, local_id: int) -> None:
        pass

    def net_data(self, local_id: int, data: bytes) -> None:
        self.got.append(data)

    def net_closed(self, local_id: int) -> None:
        self.got.append(b"closed")


def test_bytes_held_by_a_one_way_partition_arrive_in_order_after_the_heal() -> None:
    world = formed_world()
    a, b = world.hosts[0], world.hosts[1]
    got: list[bytes] = []

    world.network.hosts["sink"] = Recorder("sink", got)
    conn = world.network.dial(Recorder(a.location, []), -99, "sink", 1)
    world.run_for(100)
    assert conn.accepted and not conn.dead
    world.network.block([(a.location, "sink")])
    for i in range(5):
        world.network.send(conn, 0, bytes([i]))
    world.run_for(1000)
    assert got == []
    world.network.unblock([(a.location, "sink")])
    world.network.send(conn, 0, b"after")
    world.run_for(100)
    assert got == [bytes([i]) for i in range(5)] + [b"after"]
    del b


def test_bytes_a_partition_held_from_a_machine_that_lost_power_never_arrive() -> None:
    """Its kernel is gone: nothing is left to send them again after the heal (seed 2044: a
    follower's fetch from before its power loss reached the leader after the heal and raised
    its high watermark above what the follower still had)."""
    world = formed_world()
    got: list[bytes] = []

    for machine_lost, expected in ((False, [b"held", b"closed"]), (True, [b"closed"])):
        got.clear()
        world.network.hosts["sink"] = Recorder("sink", got)
        conn = world.network.dial(Recorder("source", []), -99, "sink", 1)
        world.run_for(100)
        world.network.block([("source", "sink")])
        world.network.send(conn, 0, b"held")
        world.run_for(100)
        world.network.crash("source", machine_lost=machine_lost)
        world.network.unblock([("source", "sink")])
        world.run_for(100)
        assert got == expected


def options(seed: int, **changes: object) -> SimOptions:
    base = SimOptions(seed=seed, events=1500, fault_interval_ms=400, liveness_deadline_ms=30_000)
    return replace(base, **changes)  # type: ignore[arg-type]


def loader_clients(world: World) -> list[Loader]:
    return [Loader("producer-1", 3, [(t, p, 3) for t, p in world.topics()], world.history)]


def test_the_same_seed_gives_a_byte_identical_trace_and_another_seed_differs() -> None:
    clients, checker = workload()  # the workload and checker of kafka-wire simulate
    first = simulate(options(7, trace=True, clients=clients, checker=checker))
    second = simulate(options(7, trace=True, clients=clients, checker=checker))
    other = simulate(options(8, trace=True, clients=clients, checker=checker))
    assert first.trace is not None and second.trace is not None and other.trace is not None
    assert first.ok, first.violations
    assert first.faults, "faults were injected"
    assert any(" ok send " in line for line in first.trace), "history ops are in the trace"
    assert "\n".join(first.trace) == "\n".join(second.trace)
    assert first.trace != other.trace


def test_a_run_with_faults_converges_in_the_liveness_phase() -> None:
    result = simulate(options(3, clients=loader_clients))
    assert result.ok, result.violations
    assert result.converged
    assert sum(result.fault_counts.values()) == len(result.faults) > 3


def test_convergence_waits_for_acked_writes_in_partitions_not_polled_yet() -> None:
    # Seed 8030: topic-2-1 had no leader until the liveness phase, so the consumer had polled no
    # record of it when its first writes were acknowledged; other partitions had been polled. The
    # world must not count as converged before the consumer reads them: the end check reports
    # every acknowledged write never polled (``unseen``), whatever partition it is in.
    history = History()

    def send(value: str, partition: int, offset: int) -> None:
        sent = Op(1, "p", OpType.INVOKE, OpKind.SEND, topic="t", partition=partition, value=value, acks=-1)
        history.add(sent)
        history.add(replace(sent, time_ms=2, type=OpType.OK, offset=offset))

    send("p-0", 0, 0)
    send("p-1", 1, 0)
    assert unseen_acks(history) == 0, "nothing polled yet: a workload without consumers"
    history.add(Op(3, "c", OpType.OK, OpKind.POLL, topic="t", partition=0, records=((0, "p-0"),)))
    assert unseen_acks(history) == 1
    tp0, tp1 = ("t", 0), ("t", 1)
    report = check_end(history, {}, {tp0: 1, tp1: 1}, {}, 9)
    assert [v.anomaly for v in report.violations] == ["unseen"]
    history.add(Op(4, "c", OpType.OK, OpKind.POLL, topic="t", partition=1, records=((0, "p-1"),)))
    assert unseen_acks(history) == 0
    assert check_end(history, {}, {tp0: 1, tp1: 1}, {}, 9).violations == []


def test_a_replayed_script_applies_only_its_faults_at_the_same_times() -> None:
    full = simulate(options(5))
    picked = [f for f in full.faults if f.kind in ("kill", "partition", "clock-jump")][:2]
    assert picked
    replayed = simulate(options(5, script=frozenset(f.index for f in picked)))
    assert [(f.index, f.time_ms, f.kind, f.target) for f in replayed.faults] == [
        (f.index, f.time_ms, f.kind, f.target) for f in picked
    ]


class FailsOnPowerLoss:
    """A test-only checker: the run fails once a node has lost storage."""

    def __init__(self, world: World) -> None:
        self.world = world

    def after_event(self, world: WorldView) -> list[Violation]:
        lost = [h for h in world.nodes() if h.storage_losses]
        return [Violation("planted", world.now_ms, f"{lost[0].node_id} lost storage")] if lost else []

    def at_end(self, world: WorldView) -> list[Violation]:
        return []


def test_shrinking_a_failure_keeps_only_the_fault_that_causes_it() -> None:
    opts = options(
        13,
        checker=FailsOnPowerLoss,
        fault_kinds=frozenset({"kill", "power-loss", "partition", "reset", "clock-jump"}),
    )
    failed = simulate(opts)
    assert failed.anomaly == "planted"
    assert len(failed.faults) > 1
    shrunk = shrink(opts, failed)
    assert [f.kind for f in shrunk.faults] == ["power-loss"]
    assert shrunk.result.anomaly == "planted"
    assert shrunk.result.trace is not None and any("power-loss" in line for line in shrunk.result.trace)


def test_a_failing_run_reports_the_engine_crash_as_a_violation() -> None:
    class Boom:
        def __init__(self, world: World) -> None:
            pass

        def after_event(self, world: WorldView) -> list[Violation]:
            raise RuntimeError("boom")

        def at_end(self, world: WorldView) -> list[Violation]:
            return []

    result: SimResult = simulate(options(1, events=10, checker=Boom))
    assert result.anomaly == "crash" and "boom" in result.violations[0].detail


def test_fault_draws_do_not_depend_on_the_world() -> None:
    world = formed_world()
    plans = [
        FaultPlan(world.scheduler, world.network, world.hosts, lambda: [], derived_rng(4, "faults"))
        for _ in range(2)
    ]
    assert [plans[0]._draw() for _ in range(20)] == [plans[1]._draw() for _ in range(20)]
    assert topic_names(SimOptions(seed=1)) == [("topic-1", 3), ("topic-2", 3), ("topic-3", 3)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_WIRE_PURE": os.environ.get("KAFKA_WIRE_PURE", "")}
    env.pop("PYTHONHASHSEED", None)
    return subprocess.run(
        [sys.executable, "-m", "kafka_wire.cli", "simulate", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_cli_replays_a_seed_byte_for_byte_in_two_processes() -> None:
    first = cli("--seed", "4", "--events", "2000", "--trace")
    second = cli("--seed", "4", "--events", "2000", "--trace")
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("\n") > 2000
    assert "fault " in first.stdout
    assert first.stdout == second.stdout
    assert "events/s per core" in first.stderr


def test_the_cli_runs_seeds_and_prints_a_summary() -> None:
    done = cli("--seeds", "1..2", "--events", "300", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "seeds              " in done.stdout and "violations" in done.stdout
    assert "2/2 seeds" in done.stderr
    bad = cli("--seeds", "x")
    assert bad.returncode == 2 and "--seeds x" in bad.stderr


def test_the_cli_exits_1_on_a_violation_and_prints_the_replay_and_shrunk_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(simulate_cli, "workload", lambda name="default": (None, FailsOnPowerLoss))
    status = main(["simulate", "--seeds", "2", "--events", "2000", "--jobs", "1"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "VIOLATION planted" in out
    assert "replay: kafka-wire simulate --seed 2 --events 2000 --nodes 3 --trace" in out
    shrunk = [line for line in out.splitlines() if "shrunk:" in line]
    assert len(shrunk) == 1 and "--faults " in shrunk[0]
    faults = shrunk[0].split("--faults ", 1)[1].split(" ", 1)[0]
    assert len(faults.split(",")) == 1  # one power loss is enough
    # To a log file, the failing seed and its shrunk faults as soon as it is known.
    failing = [line for line in err.splitlines() if line.startswith("seed 2: ")]
    assert len(failing) == 1 and "VIOLATION planted" in failing[0]
    assert failing[0].endswith(f"(shrunk: --faults {faults})")


def test_bytes_for_a_paused_connection_wait_until_the_engine_resumes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = formed_world()
    host = world.hosts[0]
    broker = host.broker
    assert broker is not None
    conn_id = min(c for c in host._conns if c > 0)  # one a peer dialled
    seen: list[tuple[int, bytes]] = []

    def spy(conn: int, data: bytes, now_ms: int) -> list[Effect]:
        seen.append((conn, data))
        return []

    monkeypatch.setattr(broker, "receive_data", spy)
    host._apply([PauseReading(conn_id)])
    host.net_data(conn_id, b"held")
    assert seen == [] and host._inbox[conn_id] == [b"held"]
    host._apply([ResumeReading(conn_id)])
    assert seen == []  # delivered as an event of its own
    world.run_for(1)
    assert (conn_id, b"held") in seen and conn_id not in host._inbox


def test_the_checker_reads_again_only_the_nodes_an_event_called(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []

    def recording(node_id: int, broker: Any, seen: dict[Any, Any]) -> list[Any]:
        read.append(node_id)
        return changed_snaps(node_id, broker, seen)

    monkeypatch.setattr("kafka_wire.sim.checker.changed_snaps", recording)
    world = formed_world()
    checker = Checker()
    assert checker.after_event(world) == []
    assert read == [1, 2, 3]  # the first time, every node
    for _ in range(50):
        read.clear()
        before = {h.node_id: h.calls for h in world.hosts}
        world.scheduler.run_one()
        assert checker.after_event(world) == []
        assert read == [h.node_id for h in world.hosts if h.calls != before[h.node_id]]
