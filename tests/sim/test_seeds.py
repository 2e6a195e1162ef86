"""CI's fixed set of simulation seeds: the default workload and checker of ``kafka-wire
simulate``, three nodes, three topics of three partitions at replication factor 3, every fault
kind, 5,000 events each; none may report a violation. The long run (10,000 seeds) is the command
in docs/benchmarks/simulation.md. Seeds of the long run that once failed run here too."""

from __future__ import annotations

import pytest

from kafka_wire.cli.simulate import workload
from kafka_wire.sim.run import SimOptions, simulate

#: Seeds every test run simulates (about a second each).
CI_SEEDS = range(1, 31)


def test_a_fixed_set_of_seeds_passes_every_invariant() -> None:
    clients, checker = workload()
    failures = []
    faults = 0
    for seed in CI_SEEDS:
        result = simulate(SimOptions(seed=seed, events=5000, clients=clients, checker=checker))
        faults += len(result.faults)
        if not result.ok:
            failures.append(
                f"seed {seed}: {result.violations[0].line()} "
                f"(replay: kafka-wire simulate --seed {seed} --events 5000 --nodes 3 --trace)"
            )
        elif not result.converged:
            failures.append(f"seed {seed}: did not converge")
    assert not failures, "\n".join(failures)
    assert faults > 5 * len(CI_SEEDS), "faults were injected"


#: Seeds of the long run that once failed, with the faults they were shrunk to: 3212, a KIP-848
#: heartbeat answered from group state no replica stored (two members then owned a partition);
#: 7505, a restarted member that fetched its committed offset from a node still leading at an older
#: epoch (out of range there: it reset to the log's start), as a consumer without KIP-320's
#: committed leader epochs does.
REGRESSION_SEEDS = {3212: frozenset({1, 3}), 7505: frozenset({1, 2, 3, 4, 5, 6, 8, 11})}


@pytest.mark.parametrize("seed", sorted(REGRESSION_SEEDS))
def test_seeds_that_once_failed_run_clean(seed: int) -> None:
    clients, checker = workload()
    faults = REGRESSION_SEEDS[seed]
    for script in (faults, None):  # the shrunk faults, then all the seed draws
        result = simulate(SimOptions(seed=seed, events=5000, script=script, clients=clients, checker=checker))
        assert result.ok, f"kafka-wire simulate --seed {seed} --trace: {result.violations[0].line()}"
