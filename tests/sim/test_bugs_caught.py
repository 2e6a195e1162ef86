"""Each planted bug is caught by the simulator: one seed per bug (the first that catches it,
found by ``bench/sim_bench.py`` or ``kafka-wire simulate --bug``), run with the workload and
checker of ``kafka-wire simulate`` (``--workload txn`` for the transaction bugs, ``share`` for the
share group ones), must report the anomaly that names the bug's class. Without the bug the same
seed passes (``tests/sim/test_seeds.py`` runs seeds 1 to 30 of the default workload,
``tests/sim/test_txn_seeds.py`` a few of the transactional one, ``tests/sim/test_share_seeds.py``
a few of the share one)."""

from __future__ import annotations

import pytest

from kafka_wire.cli.simulate import bug_options, workload
from kafka_wire.sim.bugs import BUG_WORKLOADS, BUGS
from kafka_wire.sim.run import SimOptions, simulate

#: bug -> (seed, the anomaly the checker reports)
CAUGHT = {
    "hw-without-isr": (1, "hw-above-isr"),
    "skip-truncation": (6, "committed-truncated"),
    "unclean-election": (210, "unclean-election"),
    "ack-before-isr": (17, "inconsistent-offsets"),
    "forget-producer-state": (1, "producer-state-lost"),
    "serve-above-hw": (3, "inconsistent-offsets"),
    "offsets-not-loaded": (3, "committed-offset-lost"),
    "no-epoch-bump": (1, "two-leaders"),
    "assign-before-revoke": (2, "double-ownership"),
    "lso-ignores-open-txn": (1, "precommitted-read"),
    "marker-before-prepare": (200, "poll-skip"),
    "zombie-produce-accepted": (4, "G1a"),
    "txn-offsets-before-commit": (10, "eos-lost"),
    "share-lock-ignored": (2, "share-double-acquire"),
    "share-past-delivery-limit": (5, "share-delivery-limit"),
    "share-accepted-redelivered": (1, "share-redelivered-accepted"),
}


def test_every_planted_bug_has_a_seed() -> None:
    assert sorted(CAUGHT) == sorted(BUGS)


@pytest.mark.parametrize("bug", sorted(CAUGHT))
def test_the_simulator_catches_the_planted_bug(bug: str) -> None:
    seed, anomaly = CAUGHT[bug]
    result = simulate(bug_options(seed, 5000, (bug,)))
    assert result.anomaly == anomaly, (
        f"kafka-wire simulate --seed {seed} --bug {bug} --trace: {result.violations}"
    )


def test_the_seeds_pass_without_the_bugs() -> None:
    clients, checker = workload()
    default = {s for b, (s, _) in CAUGHT.items() if b not in BUG_WORKLOADS}
    for seed in sorted(default - set(range(1, 31))):
        result = simulate(SimOptions(seed=seed, events=5000, clients=clients, checker=checker))
        assert result.ok, f"seed {seed}: {result.violations}"
