"""``kafka-wire simulate``: deterministic simulation runs of a whole cluster with faults.

``kafka-wire simulate --seeds 1..10000 --events 5000 --nodes 3`` runs every seed across all
cores (``--jobs``), draws a progress bar on stderr and prints a summary table: seeds, events,
events per second (in all and per core), faults injected per kind, violations per anomaly, and
each failing seed with the command that replays it. ``--seed N --trace`` replays one seed and
prints its trace; ``--faults 1,4,9`` replays it with only those faults (a shrunk schedule);
each failing seed's faults are shrunk to a minimal list that still fails, printed as a replay
command (``--no-shrink`` skips that). ``--bug NAME`` plants a bug
(``--list-bugs`` lists them). Exit status 1 when any seed fails.

Traces are compared across processes, so the command runs with ``PYTHONHASHSEED=0`` (it starts
itself again with it when it is not set so).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the simulator is imported only when the command runs
    from kafka_wire.sim.checker.shares import ShareChecker
    from kafka_wire.sim.run import CheckerFactory, ClientFactory, SimOptions, SimResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "simulate",
        help="run deterministic cluster simulations with faults",
        description=(
            "Run seeded simulations of a kafka_wire cluster (the real engine on a virtual network, "
            "clock and disk) with faults, checking Kafka's invariants. A seed replays exactly."
        ),
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--seeds", default="1..100", help="seeds to run, A..B or A,B,C (default 1..100)")
    which.add_argument("--seed", type=int, help="run one seed (with --trace: print its trace)")
    parser.add_argument(
        "--events", type=int, default=5000, help="events of the faulty phase per seed (default 5000)"
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=3,
        help="nodes (broker and controller each; default 3; 1 runs what `kafka-wire serve` runs by default)",
    )
    parser.add_argument("--topics", type=int, default=3, help="the workload's topics (default 3)")
    parser.add_argument("--partitions", type=int, default=3, help="partitions per topic (default 3)")
    parser.add_argument("--rf", type=int, help="replication factor (default 3, or the nodes when fewer)")
    parser.add_argument(
        "--workload",
        choices=("default", "txn", "share", "share-strict"),
        help=(
            "the clients: default (producers, consumers, groups), txn (transactional producers, "
            "a read_committed consumer), share (a KIP-932 share group) or share-strict (the same, with "
            "no relaxation after a failover); by default the one a planted "
            "--bug needs, else default"
        ),
    )
    parser.add_argument("--bug", action="append", default=[], metavar="NAME", help="plant a bug (repeatable)")
    parser.add_argument("--list-bugs", action="store_true", help="list the planted bugs and exit")
    parser.add_argument(
        "--faults", metavar="I,J,...", help="apply only these fault indices (a shrunk schedule)"
    )
    parser.add_argument("--no-faults", action="store_true", help="inject no faults")
    parser.add_argument("--trace", action="store_true", help="print the trace of --seed on stdout")
    parser.add_argument(
        "--no-shrink",
        dest="shrink",
        action="store_false",
        help="do not shrink the faults of a failing seed (by default each is shrunk to the fewest faults that still fail)",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all cores)"
    )
    parser.set_defaults(handler=run)


class SimulateArgumentError(Exception):
    pass


def parse_seeds(text: str) -> list[int]:
    """``A..B`` (inclusive) or ``A,B,C``."""
    try:
        if ".." in text:
            low, high = text.split("..", 1)
            seeds = list(range(int(low), int(high) + 1))
        else:
            seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise SimulateArgumentError(f"--seeds {text}: expected A..B or A,B,C") from None
    if not seeds:
        raise SimulateArgumentError(f"--seeds {text}: no seeds")
    return seeds


def parse_faults(text: str) -> frozenset[int]:
    try:
        return frozenset(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise SimulateArgumentError(f"--faults {text}: expected fault indices I,J,...") from None


def planted_bugs() -> dict[str, str]:
    """The planted bugs (name -> description) of this build."""
    try:
        module = importlib.import_module("kafka_wire.sim.bugs")
    except ImportError:
        return {}
    bugs: dict[str, str] = dict(getattr(module, "BUGS", {}))
    return bugs


def options_of(args: argparse.Namespace, seed: int) -> SimOptions:
    """The options of one seed: the command's, and the workload :func:`workload` wires."""
    from kafka_wire.sim.run import SimOptions

    name = workload_name(args.workload, args.bug)
    clients, checker = workload(name)
    return SimOptions(
        seed=seed,
        events=args.events,
        nodes=args.nodes,
        topics=args.topics,
        partitions=args.partitions,
        rf=args.rf,
        bugs=tuple(args.bug),
        script=parse_faults(args.faults) if args.faults else None,
        fault_kinds=frozenset() if args.no_faults else None,
        trace=args.trace and args.seed is not None,
        clients=clients,
        checker=checker,
        settings=workload_settings(name),
    )


def workload(name: str = "default") -> tuple[ClientFactory | None, CheckerFactory | None]:
    """The clients and checker factories a run uses: the default workload or the transactional
    one (``kafka_wire.sim.clients.workload``) and the invariant checker."""
    from kafka_wire.sim.checker import Checker
    from kafka_wire.sim.clients.workload import clients_for

    transactional = name == "txn"
    return (
        lambda world: clients_for(
            world,
            replication_factor=world.replication_factor,
            transactional=transactional,
            name="share" if name == "share-strict" else name,
        )
    ), (lambda world: Checker(shares=share_checker(name) if name.startswith("share") else None))


def share_checker(name: str = "share") -> ShareChecker:
    """The share group checker of the share workload (its group's lock and delivery limit), strict
    for ``share-strict``."""
    from kafka_wire.sim.checker.shares import ShareChecker
    from kafka_wire.sim.clients.workload import SHARE_DELIVERY_LIMIT, SHARE_LOCK_MS

    return ShareChecker(SHARE_LOCK_MS, SHARE_DELIVERY_LIMIT, strict=name == "share-strict")


def bug_options(seed: int, events: int, bugs: tuple[str, ...] = ()) -> SimOptions:
    """The options of ``kafka-wire simulate --seed SEED --bug ...``, with the workload that
    exercises the planted ``bugs`` (``sim.bugs.BUG_WORKLOADS``; the default one otherwise)."""
    from kafka_wire.sim.run import SimOptions

    name = workload_name(None, bugs)
    clients, checker = workload(name)
    return SimOptions(
        seed=seed,
        events=events,
        bugs=bugs,
        clients=clients,
        checker=checker,
        settings=workload_settings(name),
    )


def workload_name(asked: str | None, bugs: Sequence[str]) -> str:
    """The workload asked for, else the one the planted ``bugs`` need, else the default one."""
    if asked is not None:
        return asked
    from kafka_wire.sim.bugs import BUG_WORKLOADS

    return next((BUG_WORKLOADS[b] for b in bugs if b in BUG_WORKLOADS), "default")


def workload_settings(name: str) -> tuple[tuple[str, str], ...]:
    """The broker properties the workload ``name`` needs."""
    from kafka_wire.sim.clients.workload import SHARE_SETTINGS, TXN_SETTINGS

    settings = {"txn": TXN_SETTINGS, "share": SHARE_SETTINGS, "share-strict": SHARE_SETTINGS}.get(name, {})
    return tuple(sorted(settings.items()))


def replay_command(args: argparse.Namespace, seed: int, faults: Sequence[int] | None = None) -> str:
    parts = ["kafka-wire simulate", f"--seed {seed}", f"--events {args.events}", f"--nodes {args.nodes}"]
    if (args.topics, args.partitions, args.rf) != (3, 3, min(3, args.nodes)):
        parts.append(f"--topics {args.topics} --partitions {args.partitions} --rf {args.rf}")
    if args.workload is not None:
        parts.append(f"--workload {args.workload}")
    parts += [f"--bug {b}" for b in args.bug]
    if args.no_faults:
        parts.append("--no-faults")
    if faults is not None:
        parts.append(f"--faults {','.join(map(str, sorted(faults))) or ','}")
    elif args.faults:
        parts.append(f"--faults {args.faults}")
    parts.append("--trace")
    return " ".join(parts)


@dataclass(slots=True)
class Outcome:
    """What a worker sends back for one seed."""

    seed: int
    events: int
    virtual_ms: int
    wall_s: float
    fault_counts: dict[str, int]
    violation: str | None = None
    anomaly: str | None = None
    faults: list[int] = field(default_factory=list)
    shrunk: list[int] | None = None


_ARGS: argparse.Namespace | None = None


def _init_worker(args: argparse.Namespace) -> None:
    global _ARGS
    _ARGS = args


def _run_seed(seed: int) -> Outcome:
    args = _ARGS
    assert args is not None
    from kafka_wire.sim.run import simulate

    options = options_of(args, seed)
    result = simulate(options, clock=time.perf_counter)
    outcome = _outcome(result)
    if result.violations and args.shrink:
        from kafka_wire.sim.shrink import shrink

        outcome.shrunk = sorted(shrink(options, result).script)
    return outcome


def _outcome(result: SimResult) -> Outcome:
    first = result.violations[0] if result.violations else None
    return Outcome(
        seed=result.seed,
        events=result.events,
        virtual_ms=result.virtual_ms,
        wall_s=result.wall_s,
        fault_counts=dict(result.fault_counts),
        violation=first.line() if first else None,
        anomaly=first.anomaly if first else None,
        faults=[f.index for f in result.faults],
    )


def _reexec_with_hash_seed() -> None:
    """Start this command again with ``PYTHONHASHSEED=0`` (only when run as ``kafka-wire``)."""
    if os.environ.get("PYTHONHASHSEED") == "0" or "simulate" not in sys.argv[1:]:
        return
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "kafka_wire.cli", *sys.argv[1:]], env)


def run(args: argparse.Namespace) -> int:
    if args.list_bugs:
        bugs = planted_bugs()
        if not bugs:
            print("no planted bugs in this build")
        for name, description in sorted(bugs.items()):
            print(f"{name}: {description}")
        return 0
    try:
        seeds = [args.seed] if args.seed is not None else parse_seeds(args.seeds)
        if args.faults:
            parse_faults(args.faults)
        unknown = sorted(set(args.bug) - planted_bugs().keys())
        if unknown:
            raise SimulateArgumentError(f"--bug {', '.join(unknown)}: unknown (see --list-bugs)")
        if args.nodes < 1 or args.events < 0 or args.jobs < 1:
            raise SimulateArgumentError("--nodes and --jobs must be at least 1, --events at least 0")
        if args.rf is None:
            args.rf = min(3, args.nodes)
    except SimulateArgumentError as exc:
        print(f"kafka-wire simulate: {exc}", file=sys.stderr)
        return 2
    _reexec_with_hash_seed()
    quiet_engine_logs()
    tune_gc()
    if args.seed is not None:
        return _run_one(args)
    return _run_many(args, seeds)


def quiet_engine_logs() -> None:
    """The engine's warnings (a retried topic creation, a lost peer) are what faults cause; a
    run reports violations, not log lines."""
    engine = logging.getLogger("kafka_wire")
    engine.addHandler(logging.NullHandler())
    engine.propagate = False


def tune_gc() -> None:
    """A run makes many short-lived objects and few cycles: what is loaded so far is frozen out of
    the collector's generations, and the youngest is collected ten times less often than
    Python's default. (The engine holds no weak reference nor finaliser: when the collector runs
    changes nothing a run does.)"""
    gc.collect()
    gc.freeze()
    gc.set_threshold(7000, 10, 10)


def _run_one(args: argparse.Namespace) -> int:
    from kafka_wire.sim.run import simulate

    options = options_of(args, args.seed)
    result = simulate(options, clock=time.perf_counter)
    if result.trace is not None:
        try:
            sys.stdout.write("".join(line + "\n" for line in result.trace))
            sys.stdout.flush()
        except BrokenPipeError:  # the reader (head, less) has seen enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1 if result.violations else 0
    outcome = _outcome(result)
    shrunk = None
    if result.violations and args.shrink:
        from kafka_wire.sim.shrink import shrink

        shrunk = sorted(shrink(options, result).script)
    outcome.shrunk = shrunk
    _summary([outcome], args, result.wall_s, 1, sys.stderr if args.trace else sys.stdout)
    return 1 if result.violations else 0


def _run_many(args: argparse.Namespace, seeds: list[int]) -> int:
    started = time.perf_counter()
    jobs = min(args.jobs, len(seeds))
    outcomes: list[Outcome] = []
    bar = _Progress(len(seeds), sys.stderr)
    for outcome in _outcomes(args, seeds, jobs):
        outcomes.append(outcome)
        bar.update(outcome)
    bar.done()
    elapsed = time.perf_counter() - started
    outcomes.sort(key=lambda o: o.seed)
    _summary(outcomes, args, elapsed, jobs, sys.stdout)
    return 1 if any(o.violation for o in outcomes) else 0


def _outcomes(args: argparse.Namespace, seeds: list[int], jobs: int) -> Iterator[Outcome]:
    if jobs == 1:
        _init_worker(args)
        for seed in seeds:
            yield _run_seed(seed)
        return
    context = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with context.Pool(jobs, initializer=_init_worker, initargs=(args,)) as pool:
        yield from pool.imap_unordered(_run_seed, seeds, chunksize=1)


class _Progress:
    """A one-line progress bar on a terminal; otherwise (a log file) a line every tenth of the
    seeds, at most every 100 seeds, and one for each failing seed as soon as it is known."""

    WIDTH = 30

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.out = out
        self.done_count = 0
        self.failed = 0
        self.started = time.perf_counter()
        self.tty = out.isatty()
        self._last = 0.0
        self._step = max(1, min(total // 10, 100))

    def update(self, outcome: Outcome) -> None:
        self.done_count += 1
        self.failed += outcome.violation is not None
        now = time.perf_counter()
        if self.tty:
            if now - self._last < 0.1 and self.done_count < self.total:
                return
            self._last = now
            self.out.write("\r" + self._line(now))
        else:
            if outcome.violation is not None:
                shrunk = outcome.shrunk
                faults = "" if shrunk is None else f" (shrunk: --faults {','.join(map(str, shrunk)) or ','})"
                self.out.write(f"seed {outcome.seed}: {outcome.violation}{faults}\n")
            if self.done_count % self._step == 0 or self.done_count == self.total:
                self.out.write(self._line(now) + "\n")
        self.out.flush()

    def _line(self, now: float) -> str:
        filled = self.WIDTH * self.done_count // self.total
        elapsed = now - self.started
        left = elapsed / self.done_count * (self.total - self.done_count) if self.done_count else 0.0
        return (
            f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done_count}/{self.total} seeds, "
            f"{self.failed} failing, {elapsed:.0f}s elapsed, ~{left:.0f}s left"
        )

    def done(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def _summary(
    outcomes: list[Outcome], args: argparse.Namespace, elapsed_s: float, jobs: int, out: TextIO
) -> None:
    from kafka_wire.sim.faults import FAULT_KINDS

    events = sum(o.events for o in outcomes)
    cpu_s = sum(o.wall_s for o in outcomes)
    faults: Counter[str] = Counter()
    for o in outcomes:
        faults.update(o.fault_counts)
    anomalies = Counter(o.anomaly for o in outcomes if o.anomaly)
    rows = [
        ("seeds", f"{len(outcomes)}"),
        ("events", f"{events}"),
        ("wall time", f"{elapsed_s:.1f} s on {jobs} process{'es' if jobs > 1 else ''}"),
        ("events/s", f"{events / elapsed_s:,.0f} in all" if elapsed_s > 0 else "-"),
        ("events/s per core", f"{events / cpu_s:,.0f}" if cpu_s > 0 else "-"),
        ("seconds per seed", f"{cpu_s / len(outcomes):.3f}" if outcomes else "-"),
        ("virtual time", f"{sum(o.virtual_ms for o in outcomes) / 1000:,.0f} s"),
    ]
    rows += [(f"faults: {kind}", f"{faults[kind]}") for kind in FAULT_KINDS]
    rows.append(("violations", f"{sum(anomalies.values())}"))
    rows += [(f"  {name}", f"{count}") for name, count in sorted(anomalies.items())]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        out.write(f"{name:<{width}}  {value}\n")
    failing = [o for o in outcomes if o.violation]
    if failing:
        out.write("failing seeds:\n")
        for o in failing:
            out.write(f"  seed {o.seed}: {o.violation}\n")
            out.write(f"    replay: {replay_command(args, o.seed)}\n")
            if o.shrunk is not None:
                out.write(f"    shrunk: {replay_command(args, o.seed, o.shrunk)}\n")
    out.flush()


__all__ = ["add_parser", "parse_seeds", "replay_command", "run"]
