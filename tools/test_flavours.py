"""Run the test suite once on the compiled flavour, and what differs between flavours on pure Python.

``make test`` calls this with ``--checks``: the static checks (:data:`CHECKS_COMMAND`) run beside
the tests, as a third process whose failure fails the run; and with ``--build-compiled``: the
compiled run starts by building what only it needs (:data:`BUILD_COMPILED`: the mypyc flavour when
a C compiler is present, the Node.js peer) while the other two go on. When the compiled extensions
are built (or, with ``--build-compiled``, will be), two pytest processes run side by side: the
whole suite with the extensions (less the codec's oracle checks, :data:`PURE_ONLY`, and the
flavour-independent tests of :data:`MOVED_TO_PURE`), and with ``KAFKA_WIRE_PURE=1`` the tests of
what the flavours do differently (:data:`PURE_TESTS`: the codec, the records, the flavour checks;
everything above them calls the same public API) and :data:`MOVED_TO_PURE`. Their lines are
printed as they come, each prefixed with its flavour, and the exit status is non-zero if either
fails. ``KAFKA_WIRE_EXPECT_FLAVOUR`` tells ``tests/test_flavour.py`` which flavour each run must
find, so a build that silently fell back to pure Python fails the compiled run. Without the
extensions (or the C compiler to build them) the whole suite runs once on pure Python, and the
script says so.

The modules whose tests mostly wait on timers and throttled clients (:data:`WAITING`) run in a third
pytest process, on the compiled flavour from when it is built, a few modules at a time: beside the
other two they fill the CPU those leave idle instead of lengthening either.

The deterministic, CPU-bound tests that neither start processes nor look at a clock
(:data:`BACKGROUND`: the simulator's seeds, the compiled codec against the pure one, the kio
differential, round trips, the mutator, the engine's unit tests, the layering check) run in a fourth
process at the lowest CPU priority (``nice`` 19), started once the compiled flavour is built and
running on beside the others until it is done, alone phase included: it takes the CPU the other
runs leave idle while they wait on brokers and clients, and next to none of what they use.

Tests marked ``timing`` assert wall-clock bounds (another client's latency while a heavy request
runs, how fast SIGTERM stops the broker), and tests marked ``cluster`` start clusters of broker
processes (tests/cluster): they are left out of those runs and run afterwards on their own, once,
against the compiled flavour when it is built (else the pure one), so that the other run's Spark
jobs and brokers do not share the two cores with them. The cluster tests mostly wait (on elections,
session timeouts, restarts), so they run :data:`ALONE_WORKERS` at a time (pytest-xdist, a module
per worker); then the timing tests run one at a time, with nothing beside them. Extra arguments are
passed to every pytest run (the pure run adds them to :data:`PURE_TESTS`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-bb", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
#: What the pure flavour runs besides the compiled run: where the two flavours' code differs.
PURE_TESTS = ["tests/codec", "tests/records", "tests/test_flavour.py"]
#: The codec's oracle checks and its fuzzing run on the pure flavour only: the compiled one is held
#: to the pure one on every message and version (``tests/codec/test_native.py``: the same bytes,
#: objects and errors, on every truncation and byte corruption of each message), so checking both
#: against kio, round trips and mutated bytes would check the same codec twice.
PURE_ONLY = [
    "tests/codec/test_kio_differential.py",
    "tests/codec/test_roundtrip.py",
    "tests/codec/test_fuzz.py",
]
#: Flavour-independent tests run in the pure process rather than the compiled one, so that the two
#: processes take about as long (the compiled one also builds its flavour first): the engine's unit
#: tests (they drive the engine through its public API), the Spark data source (its Python workers
#: decode with the flavour they inherit), the fuzz harnesses (atheris instruments Python code only,
#: so they are pure-flavour work anyway), the network fuzzer, ``kafka_wire.testing``'s generators,
#: the differential suite (raw requests to Kafka and kafka-wire), the proxy's tests, the KIP-848
#: groups on a 3-node cluster (a minute of waiting on rebalances, at the end of the longer run),
#: and the e2e suites of TLS, OAUTHBEARER and the ACL differential (real clients and Kafka 4.4
#: nodes: with them the compiled run took twice the pure one's time).
MOVED_TO_PURE = [
    "tests/broker",
    "tests/txn",
    "tests/spark",
    "tests/fuzz",
    "tests/netfuzz",
    "tests/testing",
    "tests/differential",
    "tests/proxy",
    "tests/cluster/test_consumer_groups.py",
    "tests/e2e/test_share_errors.py",
    "tests/e2e/test_tls.py",
    "tests/e2e/test_tls_cluster.py",
    "tests/e2e/test_acl_answers.py",
    "tests/e2e/test_oauth.py",
]
#: The modules whose tests mostly wait: on timers (transaction, session, share-lock and quota
#: windows), on clients a quota holds back, on brokers restarting. Run one at a time with the machine
#: otherwise idle, each kept 6-18% of the two cores busy (``txn/test_clients.py`` 153 s of wall for
#: 25 s of CPU, 2026-12-07), so in either flavour's run they held it back while the CPU idled. They
#: run in a third run of their own (:data:`WAITING_WORKERS` pytest-xdist workers, a module per
#: worker at a time), on the compiled flavour, from when it is built.
WAITING = [
    "tests/txn/test_clients.py",
    "tests/e2e/test_share_groups.py",
    "tests/e2e/test_client_quotas.py",
    "tests/e2e/test_group_rebalance.py",
    "tests/e2e/test_restart.py",
    "tests/e2e/test_client_quota_limits.py",
    "tests/e2e/test_storage_faults.py",
]
WAITING_WORKERS = 2
#: What the background run (``nice`` 19) takes out of the others, per flavour: in-process,
#: deterministic and CPU-bound, no broker or client processes, no wall-clock bound.
BACKGROUND = {
    "compiled": [
        "tests/sim",
        "tests/codec/test_native.py",
        "tests/records/test_roundtrip.py",
        "tests/test_layering.py",
    ],
    "pure": [
        "tests/codec/test_kio_differential.py",
        "tests/codec/test_roundtrip.py",
        "tests/records/test_roundtrip.py",
        "tests/testing/test_mutator.py",
        "tests/fuzz/test_harnesses.py",
        # The engine's unit tests, in-process on virtual time (the node/ driver tests and the
        # top-level modules, some on real sockets or threads, stay in the pure run).
        *(
            f"tests/broker/{part}"
            for part in (
                "admin",
                "controller",
                "coordination",
                "group",
                "log",
                "partition",
                "quotas",
                "raft",
                "replication",
                "security",
                "share",
                "txn",
            )
        ),
    ],
}
NICE = ["nice", "-n", "19"]
#: The tests that run alone after the flavours' runs: wall-clock bounds, and the real-process
#: clusters of tests/cluster (three brokers and their clients would share the two cores otherwise).
ALONE = "timing or cluster"
ALONE_NOT = f"not ({ALONE})"
#: How many cluster tests share the machine in the alone phase: one at a time they kept about a
#: sixth of the two cores busy (100 s of CPU in 293 s, 2026-12-07). Each worker takes a whole module
#: (its fixtures' clusters) at a time.
ALONE_WORKERS = 3


def workers(count: int) -> list[str]:
    """pytest-xdist's arguments for ``count`` workers (with ``-bb``, as every run here), each
    taking a whole module at a time."""
    return ["--tx", f"{count}*popen//python={sys.executable} -bb", "--dist", "loadfile"]


#: The alone phase's steps, in order: (name, marker expression, extra pytest arguments): the cluster
#: tests in :data:`ALONE_WORKERS` workers, then the timing tests one at a time.
ALONE_STEPS: tuple[tuple[str, str, list[str]], ...] = (
    (f"cluster tests, {ALONE_WORKERS} at a time", "cluster and not timing", workers(ALONE_WORKERS)),
    ("timing tests alone", "timing", []),
)
#: How a test module (or a conftest.py, for its directory) marks tests ``timing`` or ``cluster``.
ALONE_MARK = re.compile(r"\bmark\.(timing|cluster)\b")
#: ``--checks``: the static checks (``make checks``: generated code current, ruff, mypy) run beside
#: the flavours' pytest runs, as a third process at ``nice`` 19 (they need one core for about a
#: minute and a half, which the test runs leave idle while they wait on brokers and clients; at
#: full priority they slowed the compiled flavour's build, the start of the longest run).
CHECKS_COMMAND = [*NICE, "make", "--no-print-directory", "-s", "checks"]
#: ``--build-compiled``: the compiled run first builds what only it needs (the mypyc flavour, the
#: Node.js peer), while the pure run and the static checks go on beside it.
BUILD_COMPILED = ["make", "--no-print-directory", "-j2", "test-compiled-prerequisites"]
#: pytest's exit status when no test was selected.
NOTHING_SELECTED = 5
#: The lines of a run kept for the recap printed after the last run: pytest's short summary of a
#: failed or erroring test, and the ``E`` lines of its tracebacks (CI shows only the end of the
#: output, where a failure printed minutes earlier is out of sight).
RECAP = re.compile(r"(FAILED|ERROR) |E   ")
#: How many of each kind a run keeps (its last ones), and how many characters of each line.
RECAP_LINES = 12
RECAP_WIDTH = 400


class Output:
    """The runs' lines, printed as they come with their run's name, and what each printed about its
    failures, printed again at the end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[str, tuple[list[str], list[str]]] = {}

    def write(self, name: str, line: str) -> None:
        with self._lock:
            sys.stdout.write(f"[{name}] {line}")
            sys.stdout.flush()
            self._keep(name, line)

    def _keep(self, name: str, line: str) -> None:
        if RECAP.match(line):
            errors, summaries = self._lines.setdefault(name, ([], []))
            kept = errors if line.startswith("E") else summaries
            kept.append(line.rstrip()[:RECAP_WIDTH])
            del kept[:-RECAP_LINES]

    def recap(self) -> None:
        for name, (errors, summaries) in self._lines.items():
            for line in errors + summaries:
                print(f"test_flavours: recap [{name}] {line}")


def alone_paths() -> list[str]:
    """The modules (and, for a conftest.py, the directories) that mark tests ``timing`` or
    ``cluster``: the alone run collects only these (collecting the whole suite takes half a minute
    of one core for the 23 tests it selects)."""
    paths = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if ALONE_MARK.search(path.read_text(encoding="utf-8")):
            chosen = path.parent if path.name == "conftest.py" else path
            paths.add(str(chosen.relative_to(ROOT)))
    return sorted(p for p in paths if not any(p.startswith(f"{q}/") for q in paths))


def alone_run_args(argv: list[str]) -> list[str]:
    """``argv``, after :func:`alone_paths` unless ``argv`` names tests itself."""
    return argv if any(map(_names_tests, argv)) else [*alone_paths(), *argv]


def _names_tests(arg: str) -> bool:
    return not arg.startswith("-") and (ROOT / arg.split("::")[0]).exists()


def waiting_run_args(argv: list[str]) -> list[str]:
    """:data:`WAITING` and ``argv``; when ``argv`` names tests, the waiting run takes those of them
    in :data:`WAITING` modules (the other runs leave them out) and nothing else."""
    named = [arg for arg in argv if _names_tests(arg)]
    if not named:
        return [*WAITING, *argv]
    options = [arg for arg in argv if arg not in named]
    inside = [arg for arg in named if any(_within(arg.split("::")[0], path) for path in WAITING)]
    around = [path for path in WAITING if any(_within(path, arg) for arg in named if "::" not in arg)]
    chosen = list(dict.fromkeys(inside + around))
    return [*chosen, *options] if chosen else []


def _within(path: str, folder: str) -> bool:
    return path == folder.rstrip("/") or path.startswith(folder.rstrip("/") + "/")


def compiled_extensions() -> list[Path]:
    return sorted(p for p in (ROOT / "kafka_wire").rglob("*.so"))


def _pump(name: str, stream: subprocess.Popen[str], output: Output) -> None:
    assert stream.stdout is not None
    for line in stream.stdout:
        output.write(name, line)


#: A lane's steps: (flavour, command), run in order until one fails.
Step = tuple[str, list[str]]


def _env(flavour: str) -> dict[str, str]:
    env = dict(os.environ, KAFKA_WIRE_EXPECT_FLAVOUR=flavour)
    env.pop("KAFKA_WIRE_PURE", None)
    if flavour == "pure":
        env["KAFKA_WIRE_PURE"] = "1"
    return env


def _lane(
    name: str,
    steps: list[Step],
    output: Output,
    codes: dict[str, int],
    after: threading.Event | None = None,
    done: threading.Event | None = None,
) -> None:
    """Run ``steps`` one after the other until one fails; the exit code of the last one that ran
    tests (else of the last one) goes into ``codes``. With ``after``, wait for it first; ``done``
    is set after the first step."""
    if after is not None:
        after.wait()
    try:
        for index, (flavour, command) in enumerate(steps):
            run = subprocess.Popen(
                command,
                cwd=ROOT,
                env=_env(flavour),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            _pump(name, run, output)
            code = run.wait()
            if code != NOTHING_SELECTED or codes.get(name, NOTHING_SELECTED) == NOTHING_SELECTED:
                codes[name] = code
            if index == 0 and done is not None:
                done.set()
            if code not in (0, NOTHING_SELECTED):
                return
    finally:
        if done is not None:
            done.set()


def _start(
    name: str,
    steps: list[Step],
    output: Output,
    codes: dict[str, int],
    *,
    after: threading.Event | None = None,
    done: threading.Event | None = None,
) -> threading.Thread:
    """Run :func:`_lane` in a thread of its own."""
    thread = threading.Thread(target=_lane, args=(name, steps, output, codes, after, done))
    thread.start()
    return thread


def c_compiler() -> bool:
    return shutil.which(os.environ.get("CC") or "cc") is not None


def main(argv: list[str]) -> int:
    output = Output()
    started = time.monotonic()
    checks = "--checks" in argv
    build = "--build-compiled" in argv
    argv = [arg for arg in argv if arg not in ("--checks", "--build-compiled")]
    codes: dict[str, int] = {}
    background: threading.Thread | None = None
    if c_compiler() if build else compiled_extensions():
        first = "compiled"
        background_paths = [path for paths in BACKGROUND.values() for path in paths]
        ignored = [f"--ignore={path}" for path in PURE_ONLY + MOVED_TO_PURE + WAITING + background_paths]
        pure_ignored = [f"--ignore={path}" for path in background_paths + WAITING]
        built = threading.Event()
        compiled_steps: list[Step] = [("compiled", BUILD_COMPILED)] if build else []
        if not build:
            built.set()
        background = _start(
            "background",
            [(flavour, [*NICE, *PYTEST, *paths, *argv]) for flavour, paths in BACKGROUND.items()],
            output,
            codes,
            after=built,
        )
        lanes: dict[str, list[Step]] = {
            "pure": [("pure", [*PYTEST, "-m", ALONE_NOT, *PURE_TESTS, *MOVED_TO_PURE, *pure_ignored, *argv])],
        }
        waiting = waiting_run_args(argv)
        threads = [
            _start(
                "compiled",
                [*compiled_steps, ("compiled", [*PYTEST, "-m", ALONE_NOT, *ignored, *argv])],
                output,
                codes,
                done=built,  # already set without a build
            ),
        ]
        if waiting:
            waiting_step = ("compiled", [*PYTEST, "-m", ALONE_NOT, *workers(WAITING_WORKERS), *waiting])
            threads.append(_start("waiting", [waiting_step], output, codes, after=built))
    else:
        print("test_flavours: no compiled extensions under kafka_wire/ (no C compiler?): pure flavour only")
        first = "pure"
        pure_build: list[Step] = [("pure", BUILD_COMPILED)] if build else []
        lanes = {"pure": [*pure_build, ("pure", [*PYTEST, "-m", ALONE_NOT, *argv])]}
        threads = []
    if checks:
        lanes["checks"] = [("checks", CHECKS_COMMAND)]
    threads += [_start(name, steps, output, codes) for name, steps in lanes.items()]
    for thread in threads:
        thread.join()
    for step, marks, extra in ALONE_STEPS:
        alone: dict[str, int] = {}
        _lane(first, [(first, [*PYTEST, "-m", marks, *extra, *alone_run_args(argv)])], output, alone)
        codes[f"{first}, {step}"] = alone[first]
    if background is not None:
        background.join()
    if any(code != NOTHING_SELECTED for code in codes.values()):  # argv may choose tests of one kind only
        codes = {run: 0 if code == NOTHING_SELECTED else code for run, code in codes.items()}
    elapsed = time.monotonic() - started
    summary = ", ".join(
        f"{flavour}: {'passed' if code == 0 else f'FAILED (exit {code})'}" for flavour, code in codes.items()
    )
    output.recap()
    print(f"test_flavours: {summary} in {elapsed:.0f} s")
    return 0 if all(code == 0 for code in codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
