"""One simulation run: :func:`simulate` turns :class:`SimOptions` into a :class:`SimResult`,
as a pure function of the options (the seed and everything else).

Phases: start the nodes and wait for the cluster to form; add the workload's clients and run
``events`` events with faults; then the **liveness phase**: every fault stops (partitions heal,
spikes end, down nodes restart), clients quiesce (producers stop, consumers keep polling), and
the run goes on until the cluster has converged (every node up and unfenced, every partition's
ISR full and its HW at its LEO everywhere, every client idle, every acknowledged write polled
when the workload polls) or a virtual deadline passes. The checker reads the world after every
event and at the end; the first violation stops the run. A convergence that never comes is a
``liveness`` violation, reported only when the end checks found nothing more precise.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.sim.bugs import SimHooks
from kafka_wire.sim.contracts import Checker, SimClient, Violation
from kafka_wire.sim.faults import DEFAULT_FAULT_INTERVAL_MS, Fault, FaultPlan, isr_full
from kafka_wire.sim.history import History, OpKind, OpType
from kafka_wire.sim.world import World, WorldConfig, derived_rng

#: Virtual time the cluster may take to form before the run is a liveness failure.
FORM_DEADLINE_MS: Final = 30_000
#: Virtual time the liveness phase may take to converge.
LIVENESS_DEADLINE_MS: Final = 60_000
#: How often (virtual ms) the liveness phase checks convergence.
CONVERGENCE_CHECK_MS: Final = 200

ClientFactory = Callable[[World], Sequence[SimClient]]
CheckerFactory = Callable[[World], Checker]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimOptions:
    seed: int
    #: Events of the faulty phase (after the cluster formed, before the liveness phase).
    events: int = 5000
    nodes: int = 3
    topics: int = 3
    partitions: int = 3
    rf: int = 3
    #: Planted bugs switched on (names of ``kafka_wire.sim.bugs.BUGS``).
    bugs: tuple[str, ...] = ()
    #: Apply only the faults with these draw indices (None: every fault drawn).
    script: frozenset[int] | None = None
    #: Draw only these kinds of fault (None: all; empty: no faults).
    fault_kinds: frozenset[str] | None = None
    fault_interval_ms: int = DEFAULT_FAULT_INTERVAL_MS
    #: Keep the trace (one line per event, fault and history op).
    trace: bool = False
    unclean: bool = False
    #: Per BUGGIFY point: the chance it is enabled in a run, then the chance it fires when asked.
    buggify_enable: float = 0.25
    buggify_fire: float = 0.05
    liveness_deadline_ms: int = LIVENESS_DEADLINE_MS
    #: Broker properties every node gets beyond the simulator's own (a workload's needs).
    settings: tuple[tuple[str, str], ...] = ()
    #: The workload (None: none, just the nodes) and the checker (None: none).
    clients: ClientFactory | None = None
    checker: CheckerFactory | None = None


@dataclass(slots=True)
class SimResult:
    seed: int
    violations: list[Violation]
    #: Events executed in all (forming, faulty phase, liveness).
    events: int
    #: Virtual time the run covered, ms.
    virtual_ms: int
    faults: list[Fault]
    fault_counts: Counter[str]
    converged: bool
    trace: list[str] | None = None
    #: Wall time of the run, when the caller gave a clock.
    wall_s: float = 0.0
    history_ops: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def anomaly(self) -> str | None:
        return self.violations[0].anomaly if self.violations else None


def topic_names(options: SimOptions) -> list[tuple[str, int]]:
    return [(f"topic-{i}", options.partitions) for i in range(1, options.topics + 1)]


def simulate(options: SimOptions, *, clock: Callable[[], float] | None = None) -> SimResult:
    """Run one simulation (``clock``, when given, only measures its wall time)."""
    started = clock() if clock is not None else 0.0
    hooks = SimHooks(
        derived_rng(options.seed, "buggify"),
        options.bugs,
        enable_probability=options.buggify_enable,
        fire_probability=options.buggify_fire,
    )
    result = _Run(options, hooks).run()
    result.extra.update({f"buggify:{k}": v for k, v in sorted(hooks.fired.items())})
    if clock is not None:
        result.wall_s = clock() - started
    return result


class _Run:
    def __init__(self, options: SimOptions, hooks: SimHooks) -> None:
        self.options = options
        self.world = World(
            WorldConfig(
                seed=options.seed,
                nodes=options.nodes,
                topics=topic_names(options),
                rf=options.rf,
                unclean=options.unclean,
                trace=options.trace,
                settings=dict(options.settings),
            ),
            hooks,
        )
        self.checker = options.checker(self.world) if options.checker is not None else None
        self.violations: list[Violation] = []
        self.clients: list[SimClient] = []
        self.faults = FaultPlan(
            self.world.scheduler,
            self.world.network,
            self.world.hosts,
            lambda: [c.name for c in self.clients],
            derived_rng(options.seed, "faults"),
            interval_ms=options.fault_interval_ms,
            script=options.script,
            kinds=options.fault_kinds,
        )
        self.world.faults = self.faults.recorded
        self._logged_ops = 0

    def run(self) -> SimResult:
        world = self.world
        converged = False
        try:
            world.start()
            if not self._run(world.cluster_ready, world.now_ms + FORM_DEADLINE_MS):
                if not self.violations:
                    self.violations.append(Violation("liveness", world.now_ms, "the cluster did not form"))
            else:
                if self.options.clients is not None:
                    self.clients = list(self.options.clients(world))
                    for client in self.clients:
                        world.add_client(client)
                if self.options.fault_kinds is None or self.options.fault_kinds:
                    self.faults.start()
                target = world.scheduler.executed + self.options.events
                self._run(lambda: world.scheduler.executed >= target, None)
                if not self.violations:
                    converged = self._liveness()
        except Exception as exc:
            self.violations.append(Violation("crash", world.now_ms, _describe(exc)))
        if not self.violations and self.checker is not None:
            try:
                self.violations += self.checker.at_end(world)
            except Exception as exc:
                self.violations.append(Violation("crash", world.now_ms, "checker: " + _describe(exc)))
        if not self.violations and not converged and self.options.events > 0 and _formed(world):
            self.violations.append(Violation("liveness", world.now_ms, self._unconverged()))
        trace = world.scheduler.trace
        if trace is not None:
            self._log_ops()
            trace.extend(v.line() for v in self.violations)
        return SimResult(
            seed=self.options.seed,
            violations=self.violations,
            events=world.scheduler.executed,
            virtual_ms=world.now_ms - world.scheduler_start_ms,
            faults=list(self.faults.recorded),
            fault_counts=Counter(self.faults.counts),
            converged=converged,
            trace=trace,
            history_ops=len(world.history.ops),
        )

    def _run(self, done: Callable[[], bool], deadline_ms: int | None) -> bool:
        """Execute events until ``done()``, a violation, or virtual ``deadline_ms``."""
        scheduler = self.world.scheduler
        checker = self.checker
        world = self.world
        tracing = scheduler.trace is not None
        while not done():
            due = scheduler.next_time_ms()
            if due is None or (deadline_ms is not None and due > deadline_ms):
                if deadline_ms is not None:
                    scheduler.now_ms = max(scheduler.now_ms, deadline_ms)
                return done()
            scheduler.run_one()
            if tracing:
                self._log_ops()
            if checker is not None:
                found = checker.after_event(world)
                if found:
                    self.violations += found
                    return False
        return True

    def _log_ops(self) -> None:
        ops = self.world.history.ops
        trace = self.world.scheduler.trace
        if trace is not None and len(ops) > self._logged_ops:
            trace.extend(op.line() for op in ops[self._logged_ops :])
            self._logged_ops = len(ops)

    def _liveness(self) -> bool:
        world = self.world
        self.faults.stop()
        now = world.now_ms
        for client in self.clients:
            client.quiesce(now)
        for adapter in world.clients:
            adapter.reschedule()
        deadline = now + self.options.liveness_deadline_ms
        next_check = [now]

        def converged() -> bool:
            if world.now_ms < next_check[0]:
                return False
            next_check[0] = world.now_ms + CONVERGENCE_CHECK_MS
            return _converged(world, self.clients)

        return self._run(converged, deadline) and not self.violations

    def _unconverged(self) -> str:
        world = self.world
        return (
            "did not converge after the heal: " + "; ".join(_waiting_for(world, self.clients))
            if _waiting_for(world, self.clients)
            else "did not converge after the heal"
        )


def _formed(world: World) -> bool:
    return any(h.node is not None for h in world.hosts)


def _waiting_for(world: World, clients: Sequence[SimClient]) -> list[str]:
    """What keeps the world from having converged (empty: it has)."""
    reasons: list[str] = []
    down = [h.location for h in world.hosts if not h.up]
    if down:
        reasons.append(f"down: {','.join(down)}")
        return reasons
    if not world.cluster_ready():
        reasons.append("cluster not ready (fenced or no controller)")
    if not isr_full(world.hosts):
        reasons.append("an ISR is not full")
    lagging = _lagging(world)
    if lagging:
        reasons.append(f"HW below LEO: {lagging}")
    busy = [c.name for c in clients if not c.idle()]
    if busy:
        reasons.append(f"clients busy: {','.join(busy)}")
    unseen = unseen_acks(world.history)
    if unseen:
        reasons.append(f"acked writes not polled: {unseen}")
    return reasons


def _lagging(world: World) -> int:
    count = 0
    for host in world.hosts:
        if host.broker is not None:
            for replica in host.broker.state.partitions.values():
                if replica.high_watermark != replica.log_end_offset:
                    count += 1
    return count


def unseen_acks(history: History) -> int:
    """acks=all sends acknowledged and never polled, once the workload polls at all (acks=1
    writes may be lost with their leader, as in Kafka). Every partition counts, polled yet or
    not: the end check (``unseen``) holds every acknowledged write to that, and a partition whose
    first records were acknowledged just before a check has not been read yet (seed 8030)."""
    polled: set[str] = set()
    polls = False
    acked: list[str] = []
    for op in history.ops:
        if op.kind is OpKind.POLL:
            polls = True  # an ok poll, or an info one (a reset), as the end check counts them
            polled.update(value for _, value in op.records)
        elif op.kind is OpKind.SEND and op.type is OpType.OK and op.acks == -1:
            acked.append(op.value)
    return sum(1 for v in acked if v not in polled) if polls else 0


def _converged(world: World, clients: Sequence[SimClient]) -> bool:
    if any(not h.up for h in world.hosts) or not world.cluster_ready() or not isr_full(world.hosts):
        return False
    if _lagging(world) or any(not c.idle() for c in clients):
        return False
    return unseen_acks(world.history) == 0


def _describe(exc: BaseException) -> str:
    # lookup_lines=False: where it was raised, without reading source files
    frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    where = ""
    if frames:
        last = frames[-1]
        where = f" at {last.filename.rsplit('kafka_wire/', 1)[-1]}:{last.lineno} in {last.name}"
    return f"{type(exc).__name__}: {exc}{where}"
