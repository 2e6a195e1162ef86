"""Each planted bug is caught by the simulator: one seed per bug (the first that catches it,
found by ``bench/sim_bench.py``), run with the workload and checker of ``kafka-wire simulate``,
must report the anomaly that names the bug's class. Without the bug the same seed passes
(``tests/sim/test_seeds.py`` runs seeds 1 to 30)."""

from __future__ import annotations

import pytest

from kafka_wire.cli.simulate import workload
from kafka_wire.sim.bugs import BUGS
from kafka_wire.sim.run import SimOptions, simulate

#: bug -> (seed, the anomaly the checker reports)
CAUGHT = {
    "hw-without-isr": (1, "hw-above-isr"),
    "skip-truncation": (3, "committed-truncated"),
    "unclean-election": (210, "unclean-election"),
    "ack-before-isr": (17, "inconsistent-offsets"),
    "forget-producer-state": (1, "producer-state-lost"),
    "serve-above-hw": (10, "inconsistent-offsets"),
    "offsets-not-loaded": (7, "committed-offset-lost"),
    "no-epoch-bump": (1, "two-leaders"),
    "assign-before-revoke": (2, "double-ownership"),
}


def test_every_planted_bug_has_a_seed() -> None:
    assert sorted(CAUGHT) == sorted(BUGS)


@pytest.mark.parametrize("bug", sorted(CAUGHT))
def test_the_simulator_catches_the_planted_bug(bug: str) -> None:
    seed, anomaly = CAUGHT[bug]
    clients, checker = workload()
    result = simulate(SimOptions(seed=seed, events=5000, bugs=(bug,), clients=clients, checker=checker))
    assert result.anomaly == anomaly, (
        f"kafka-wire simulate --seed {seed} --bug {bug} --trace: {result.violations}"
    )


def test_the_seeds_pass_without_the_bugs() -> None:
    clients, checker = workload()
    for seed in sorted({s for s, _ in CAUGHT.values()} - set(range(1, 31))):
        result = simulate(SimOptions(seed=seed, events=5000, clients=clients, checker=checker))
        assert result.ok, f"seed {seed}: {result.violations}"
