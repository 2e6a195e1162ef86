"""A few seeds of the transactional workload (``kafka-wire simulate --workload txn``: producers of
transaction versions 1 and 2, retries, stalls past the timeout, restarts leaving zombies, a
read_committed consumer, consume-transform-produce workers) run clean under every fault kind:
those that catch the planted transaction bugs, so that each also shows the run is clean without
its bug."""

from __future__ import annotations

import pytest

from kafka_wire.cli.simulate import workload, workload_settings
from kafka_wire.sim.run import SimOptions, SimResult, simulate

#: The seeds that catch the planted transaction bugs (``test_bugs_caught.py``), clean without them.
SEEDS = (1, 4, 10, 25)


@pytest.mark.parametrize("seed", SEEDS)
def test_transactional_seeds_run_clean_under_faults(seed: int) -> None:
    result = _run_clean(seed)
    assert sum(result.fault_counts.values()) > 0


def test_a_new_group_coordinator_keeps_an_aborted_transactions_offsets_out() -> None:
    """Seed 145 with its two faults (a power loss of n2, a clock jump of n3), found by the 10,000
    seed run: a consume-transform-produce worker's transaction is fenced after its TxnOffsetCommit
    was written and replicated; the group's ``__consumer_offsets`` partition moves to another node,
    which loads it. The offsets were written as a plain batch, so the new coordinator took them as
    committed: the worker resumed past an input whose output was aborted (``eos-lost``). They are
    a transactional batch of the producer now, pending on load until its ABORT marker."""
    _run_clean(145, {1, 2})


def test_a_bit_flipped_in_a_fsynced_batch_is_cut_at_restart() -> None:
    """Seed 3686 with its five faults, found by the 10,000 seed run: a disk fault on n2 flips a
    bit in the third batch of ``topic-3-1``'s only segment, fsynced with its recovery point at
    the segment's end. Recovery looked only at segments past the point, so n2 kept the damaged
    batch, rejoined the ISR, and was elected when n1 was killed: the final leader held nothing
    readable where acknowledged writes were (``lost-write``). Kafka recovers the segment holding
    the recovery point, cutting the log at the first corrupt batch; so does the loader now."""
    result = _run_clean(3686, {1, 2, 3, 4, 5})
    assert sum(result.fault_counts.values()) > 0


def test_a_consumer_keeps_a_partitions_newer_leader_when_a_node_behind_answers_metadata() -> None:
    """Seed 9839 with its one fault (n1 cut off from n2 and n3 for 3.5 s), found by the 10,000
    seed run: after the heal n1 still named itself leader of ``topic-1-0`` at epoch 0 (n2 led at
    epoch 1) and a consume-transform-produce worker took that answer, fetched from n1 past its log
    end and started its inputs again from offset 0 on OFFSET_OUT_OF_RANGE, writing one input's
    outputs twice (``eos-duplicate``). Clients keep the leader of the newer epoch now, as Kafka's
    do."""
    _run_clean(9839, {2})


def test_no_power_loss_while_a_latency_spike_slows_the_controller() -> None:
    """Seed 8099 with its three faults (a +486 ms spike on n1, the active controller; a short one
    on n2; a power loss of n3 during the first), found by the 10,000 seed run: the controller
    fenced the two live brokers and left the ISRs to n3's dead incarnation, elected on its return
    with what its power loss left (``committed-truncated``). The fault plan treats a spike
    between nodes as a partition now (``test_world.py``), so the power loss is not applied."""
    result = _run_clean(8099, {1, 2, 4})
    assert result.fault_counts["latency-spike"] == 2 and result.fault_counts["power-loss"] == 0


def _run_clean(seed: int, faults: set[int] | None = None) -> SimResult:
    """The transactional workload's ``seed`` (with only ``faults``, a shrunk schedule, when
    given), which must run with no violation."""
    clients, checker = workload("txn")
    options = SimOptions(
        seed=seed,
        events=5000,
        script=None if faults is None else frozenset(faults),
        clients=clients,
        checker=checker,
        settings=workload_settings("txn"),
    )
    result = simulate(options)
    listed = "" if faults is None else " --faults " + ",".join(str(f) for f in sorted(faults))
    assert result.ok, f"kafka-wire simulate --seed {seed} --workload txn{listed} --trace: {result.violations}"
    return result
