"""Stall benchmark: how long another connection waits while one connection sends a heavy request.

Not a test (``tests/e2e/test_stall.py`` holds the bounds). For each broker build, file system and
heavy request, ``kafka-wire serve`` is started on an empty data directory; one connection sends the
heavy request while a prober thread (another connection) sends Metadata requests in a loop, 2 ms
apart, and times each round trip on the client side. Printed per case: the probes seen while the
heavy request ran, their round trip at the median, the 99th percentile and worst, and how long the
heavy request took.

* builds: ``new`` is this checkout; ``old`` is the package of ``--old`` (a commit, default the
  merge base with ``main``), extracted with ``git archive`` and put first on ``PYTHONPATH``; both
  run with the same interpreter and flavour (``KAFKA_WIRE_PURE=1``, or with ``--compiled`` this
  checkout's compiled extensions, copied into the old package when their sources are the same).
* file systems: ``ext4`` is a temporary directory under ``--ext4-dir`` (default /tmp), ``tmpfs``
  one under /dev/shm; the file system type is checked and printed.
* heavy requests: ``create`` is a CreateTopics of ``--partitions`` partitions (default 9,999),
  timed until every partition is open (Metadata names a leader for each);
  ``produce`` is a Produce of 50 partitions, each one gzip batch of 9,000 small records.

Run: ``.venv/bin/python bench/bench_stall.py [--builds old,new] [--fs ext4,tmpfs]
[--cases produce,create] [--partitions N] [--old COMMIT] [--compiled]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e (the broker processes and the stall test's clients)

from kafka_wire.messages import ErrorCode  # noqa: E402
from tests.e2e.brokers import KafkaWireBroker  # noqa: E402
from tests.e2e.test_stall import (  # noqa: E402
    KafkaSocket,
    create_topic,
    probing,
    produce,
    small_gzip_batch,
    wait_until_open,
)
from tests.interop.harness import Address, free_port  # noqa: E402


class Build(KafkaWireBroker):
    """``kafka-wire serve`` from a given package directory (None: this checkout)."""

    package: Path | None = None
    pure = True

    def command(self) -> list[str]:
        host, port = self.address.host, str(self.address.port)
        return [sys.executable, "-m", "kafka_wire.cli", "serve", "--host", host, "--port", port,
                "--data-dir", str(self.data_dir)]  # fmt: skip

    def env(self) -> dict[str, str]:
        # Not the working directory first on sys.path: it would shadow the old package.
        env = dict(os.environ, PYTHONSAFEPATH="1")
        if self.package is not None:
            env["PYTHONPATH"] = str(self.package)
        if self.pure:
            env["KAFKA_WIRE_PURE"] = "1"
        else:
            env.pop("KAFKA_WIRE_PURE", None)
        return env


@dataclass
class Case:
    build: str
    fs: str
    case: str
    samples: list[float]
    took_s: float

    def row(self) -> str:
        ms = sorted(s * 1000 for s in self.samples)
        if not ms:  # no round trip finished while the request ran: it stalled them all
            return f"| {self.build} | {self.fs} | {self.case} | 0 | - | - | - | {self.took_s:.2f} |"
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        return (
            f"| {self.build} | {self.fs} | {self.case} | {len(ms)} | {statistics.median(ms):.1f} | "
            f"{p99:.1f} | {ms[-1]:.1f} | {self.took_s:.2f} |"
        )


def imported_from(env: dict[str, str]) -> Path:
    """Where ``kafka_wire`` comes from for a process with ``env``."""
    code = "import kafka_wire; print(kafka_wire.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()).parent.parent


def fs_type(path: Path) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def old_package(commit: str, into: Path, compiled: bool) -> Path:
    """``kafka_wire`` of ``commit`` in ``into``; with ``compiled``, this checkout's compiled
    extensions too (refused when their sources differ between the two)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "kafka_wire"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    if compiled:
        sources = ["kafka_wire/_compiled", "kafka_wire/codec", "setup.py"]
        same = (
            subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", commit, "--", *sources]).returncode
            == 0
        )
        if not same:
            raise SystemExit(f"the compiled sources differ from {commit}: compare the pure flavour")
        for so in (ROOT / "kafka_wire").rglob("*.so"):
            shutil.copy2(so, into / so.relative_to(ROOT))
    return into


def run_case(broker: Build, case: str, partitions: int) -> tuple[list[float], float]:
    conn = KafkaSocket(broker)
    conn.sock.settimeout(None)  # a slow disk may take minutes over 10,000 partitions
    try:
        if case == "produce":
            assert create_topic(conn, "heavy", 50).topics[0].error_code == ErrorCode.NONE
            batch = small_gzip_batch()
        with probing(broker) as prober:
            start = time.monotonic()
            if case == "produce":
                reply = produce(conn, "heavy", [batch] * 50)
                codes = {p.error_code for p in reply.responses[0].partition_responses}
            else:
                codes = {create_topic(conn, "heavy", partitions).topics[0].error_code}
                if codes == {ErrorCode.NONE}:  # until every partition is open, as the test waits
                    wait_until_open(conn, "heavy", partitions)
            took = time.monotonic() - start
            samples = [t for at, t in prober.samples if at + t >= start and at <= start + took]
        assert codes == {ErrorCode.NONE}, codes
        return samples, took
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--builds", default="old,new")
    parser.add_argument("--fs", default="ext4,tmpfs")
    parser.add_argument("--cases", default="produce,create")
    parser.add_argument("--partitions", type=int, default=9_999)
    parser.add_argument("--old", default="")
    parser.add_argument("--ext4-dir", default="/tmp")
    parser.add_argument("--compiled", action="store_true", help="the compiled flavour (if built) for both")
    args = parser.parse_args()
    old = (
        args.old
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip
    roots = {"ext4": Path(args.ext4_dir), "tmpfs": Path("/dev/shm")}
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, new = {head} (+ working tree), old = {old[:7]}, "
          f"{'compiled' if args.compiled else 'pure'} flavour, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| build | fs | heavy request | probes | p50 ms | p99 ms | worst ms | request s |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-stall-old-") as old_dir:
        packages = {"new": None, "old": old_package(old, Path(old_dir), args.compiled)}
        for build, package in packages.items():
            probe = Build(build, Address("127.0.0.1", 0), Path(old_dir), Path(old_dir), persistent=False)
            probe.package = package
            assert imported_from(probe.env()) == (package or ROOT), f"{build} would not run its own package"
        for fs in args.fs.split(","):
            for build in args.builds.split(","):
                for case in args.cases.split(","):
                    work = Path(tempfile.mkdtemp(prefix="bench-stall-", dir=roots[fs]))
                    try:
                        kind = fs_type(work)
                        broker = Build(build, Address("127.0.0.1", free_port("127.0.0.1")), work / "data",
                                       work / "serve.log", persistent=True)  # fmt: skip
                        broker.package, broker.pure = packages[build], not args.compiled
                        broker.start()
                        try:
                            samples, took = run_case(broker, case, args.partitions)
                        finally:
                            broker.kill()  # no need to flush 10,000 partitions at the end
                        label = case if case == "produce" else f"create {args.partitions}"
                        print(Case(build, f"{fs} ({kind})", label, samples, took).row(), flush=True)
                    finally:
                        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
