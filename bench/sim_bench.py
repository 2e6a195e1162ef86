"""Simulator figures: speed per core, and how soon each planted bug is caught.

Not a test. In one run, on this machine:

* **speed**: ``--speed-seeds`` seeds of ``--events`` events on three nodes (the workload and
  checker of ``kafka-wire simulate``, the default one or each ``--workload``; every fault kind),
  one after another in this process (one core): CPU seconds per seed (mean, median, max) and
  events per second;
* **bugs**: for each planted bug of ``kafka_wire.sim.bugs.BUGS``, seeds 1, 2, ... with only that
  bug planted, until a run reports a violation (at most ``--max-seeds``; the hunt runs on
  ``--jobs`` processes, in order of seed): the first catching seed, its anomaly, and the command
  that replays its trace.

Run: ``.venv/bin/python bench/sim_bench.py [--events N] [--speed-seeds S] [--max-seeds M]
[--jobs J] [--bug NAME ...]``; ``docs/benchmarks/simulation.md`` records the figures. The long
run of 10,000 seeds is the ``kafka-wire simulate`` command given there, not this script.
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass

from kafka_wire.cli import simulate as cli
from kafka_wire.sim.bugs import BUGS
from kafka_wire.sim.run import SimOptions, simulate


@dataclass(frozen=True, slots=True)
class Caught:
    bug: str
    seed: int | None
    anomaly: str
    detail: str
    seeds_run: int


def options(seed: int, events: int, bugs: tuple[str, ...] = ()) -> SimOptions:
    return cli.bug_options(seed, events, bugs)


def workload_options(seed: int, events: int, name: str) -> SimOptions:
    """The options of ``kafka-wire simulate --seed SEED --workload NAME``."""
    clients, checker = cli.workload(name)
    return SimOptions(
        seed=seed, events=events, clients=clients, checker=checker, settings=cli.workload_settings(name)
    )


def speed(seeds: int, events: int, workload: str = "default") -> None:
    times: list[float] = []
    total_events = 0
    for seed in range(1, seeds + 1):
        result = simulate(workload_options(seed, events, workload), clock=time.process_time)
        times.append(result.wall_s)
        total_events += result.events
        state = "ok" if result.ok else f"VIOLATION {result.anomaly}"
        print(
            f"  {workload} seed {seed}: {result.events} events, {result.wall_s:.3f} s CPU, {state}",
            flush=True,
        )
    print(
        f"speed ({workload}): {seeds} seeds of {events} events, 3 nodes, one core: "
        f"mean {statistics.mean(times):.3f} s per seed, median {statistics.median(times):.3f} s, "
        f"max {max(times):.3f} s, {total_events / sum(times):,.0f} events/s per core (all events of "
        "the run, forming and liveness included)",
        flush=True,
    )


_EVENTS = 5000


def _first_violation(job: tuple[str, int]) -> tuple[int, str, str] | None:
    bug, seed = job
    result = simulate(options(seed, _EVENTS, (bug,)))
    if result.ok:
        return None
    first = result.violations[0]
    return seed, first.anomaly, first.detail


def hunt(bug: str, max_seeds: int, jobs: int) -> Caught:
    batch = max(jobs, 1) * 2
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs) as pool:
        for start in range(1, max_seeds + 1, batch):
            seeds = range(start, min(start + batch, max_seeds + 1))
            for found in pool.map(_first_violation, [(bug, s) for s in seeds]):
                if found is not None:
                    seed, anomaly, detail = found
                    return Caught(bug, seed, anomaly, detail, seed)
    return Caught(bug, None, "", "", max_seeds)


def main() -> int:
    global _EVENTS
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--speed-seeds", type=int, default=20)
    parser.add_argument("--max-seeds", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--bug", action="append", default=[], help="hunt only these bugs")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--workload",
        action="append",
        choices=("default", "txn", "share", "share-strict"),
        help="the workloads whose speed is measured (repeatable; default: the default one)",
    )
    parser.add_argument("--skip-bugs", action="store_true", help="measure the speed only")
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":  # the seeds replay as kafka-wire simulate runs them
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    _EVENTS = args.events
    cli.quiet_engine_logs()
    cli.tune_gc()  # as kafka-wire simulate runs
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, flavour {'pure' if os.environ.get('KAFKA_WIRE_PURE') else 'compiled if built'}",
        flush=True,
    )
    if not args.skip_speed:
        for name in args.workload or ["default"]:
            speed(args.speed_seeds, args.events, name)
    if args.skip_bugs:
        return 0
    missed = 0
    print("| bug | first seed that catches it | anomaly | replay |")
    print("|---|---|---|---|")
    for bug in args.bug or sorted(BUGS):
        caught = hunt(bug, args.max_seeds, args.jobs)
        if caught.seed is None:
            missed += 1
            print(f"| `{bug}` | not caught in {caught.seeds_run} seeds | | |", flush=True)
            continue
        replay = f"kafka-wire simulate --seed {caught.seed} --bug {bug} --trace"
        print(f"| `{bug}` | {caught.seed} | `{caught.anomaly}` | `{replay}` |", flush=True)
        print(f"  {caught.detail}", file=sys.stderr, flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
