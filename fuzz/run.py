"""Run the fuzz harnesses under atheris, each in its own process, and summarise what libFuzzer says.

    python fuzz/run.py [--seconds S | --runs N] [--jobs J] [--only NAME ...] [--json PATH]

Each harness runs as ``python fuzz/fuzz_NAME.py CORPUS -max_total_time=S`` (or ``-runs=N``)
with ``-timeout`` (an input running longer is a hang), ``-rss_limit_mb`` and ``-artifact_prefix``
pointing into the findings directory, where libFuzzer writes each crashing input
(``crash-<sha1>``, ``timeout-<sha1>``, ``oom-<sha1>``). Its corpus directory starts with the seeds
of ``fuzz/corpus.py`` and keeps what libFuzzer adds, so later runs start from there. The summary
gives per harness the executions, executions per second, coverage (``cov``: edges, ``ft``:
features), corpus size and findings; ``--json`` writes it as JSON too. The exit status is 1 when
any harness found something (or failed to run), else 0. Replay a finding with
``python fuzz/fuzz_NAME.py FINDING-FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make ``fuzz`` and ``kafka_wire`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.common import INSTRUMENT_ENV

ROOT: Final = Path(__file__).resolve().parent.parent
HARNESSES: Final = (
    "requests",
    "responses",
    "records",
    "client_connection",
    "server_connection",
    "broker",
    "log_recovery",
)
DEFAULT_WORK: Final = ROOT / "build" / "fuzz"
_STATUS: Final = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)(?: corp: (\d+)/)?.*?(?:exec/s: (\d+))?")
_STAT: Final = re.compile(r"^stat::(\w+):\s+(\d+)")
_ARTIFACT: Final = re.compile(r"Test unit written to (\S+)")


@dataclass
class Result:
    """What one harness's run did."""

    name: str
    exit_code: int = 0
    execs: int = 0
    exec_per_s: int = 0
    cov: int = 0
    ft: int = 0
    corpus: int = 0
    #: Seconds from start to exit, instrumentation included.
    wall_s: float = 0.0
    findings: list[str] = field(default_factory=list)
    #: The last lines libFuzzer printed, kept when the run failed.
    tail: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.exit_code != 0 or bool(self.findings)


def parse(name: str, output: str, exit_code: int, wall_s: float) -> Result:
    """A :class:`Result` from libFuzzer's output (its status lines, final stats, artifacts)."""
    result = Result(name, exit_code=exit_code, wall_s=round(wall_s, 1))
    for line in output.splitlines():
        if m := _STATUS.match(line):
            result.execs = max(result.execs, int(m[1]))
            result.cov, result.ft = int(m[3]), int(m[4])
            if m[5]:
                result.corpus = int(m[5])
            if m[6]:
                result.exec_per_s = int(m[6])
        elif m := _STAT.match(line):
            if m[1] == "number_of_executed_units":
                result.execs = int(m[2])
            elif m[1] == "average_exec_per_sec":
                result.exec_per_s = int(m[2])
        elif m := _ARTIFACT.search(line):
            result.findings.append(m[1])
    if result.failed:
        lines = output.splitlines()
        marker = next((i for i, line in enumerate(lines) if "Uncaught Python exception" in line), None)
        result.tail = lines[marker : marker + 40] if marker is not None else lines[-40:]
    return result


def command(name: str, corpus: Path, findings: Path, args: argparse.Namespace) -> list[str]:
    limit = f"-runs={args.runs}" if args.runs is not None else f"-max_total_time={args.seconds}"
    return [
        sys.executable,
        str(ROOT / "fuzz" / f"fuzz_{name}.py"),
        str(corpus),
        limit,
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-max_len={args.max_len}",
        f"-artifact_prefix={findings}/",
        "-print_final_stats=1",
    ]


def run_one(name: str, args: argparse.Namespace) -> Result:
    from fuzz import corpus as seeds

    work = Path(args.work)
    corpus = work / "corpus" / name
    findings = work / "findings" / name
    findings.mkdir(parents=True, exist_ok=True)
    seeds.write(work / "corpus", [name])
    env = dict(os.environ, **{INSTRUMENT_ENV: args.instrument})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    start = time.monotonic()
    done = subprocess.run(
        command(name, corpus, findings, args),
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    result = parse(name, done.stdout + done.stderr, done.returncode, time.monotonic() - start)
    (work / f"{name}.log").write_text(done.stdout + done.stderr)
    return result


def table(results: list[Result]) -> str:
    lines = [
        f"{'harness':18} {'execs':>10} {'exec/s':>7} {'cov':>6} {'ft':>7} {'corpus':>7} {'wall s':>7}  findings"
    ]
    for r in results:
        found = (
            ", ".join(r.findings) if r.findings else (f"FAILED (exit {r.exit_code})" if r.failed else "none")
        )
        lines.append(
            f"{r.name:18} {r.execs:>10} {r.exec_per_s:>7} {r.cov:>6} {r.ft:>7} {r.corpus:>7} {r.wall_s:>7}  {found}"
        )
    lines.append(f"{'total':18} {sum(r.execs for r in results):>10}")
    return "\n".join(lines)


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--seconds", type=int, default=60, help="fuzzing time per harness (default 60)")
    limit.add_argument("--runs", type=int, help="executions per harness instead of a time")
    parser.add_argument("--jobs", type=int, default=1, help="harnesses run at once (default 1)")
    parser.add_argument("--only", nargs="+", choices=HARNESSES, metavar="NAME", help="these harnesses only")
    parser.add_argument("--json", help="write the summary as JSON to this path")
    parser.add_argument("--work", default=str(DEFAULT_WORK), help="corpora, findings and logs (build/fuzz)")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take (default 10)")
    parser.add_argument(
        "--rss-limit-mb", type=int, default=2048, help="libFuzzer's memory limit (default 2048)"
    )
    parser.add_argument(
        "--max-len", type=int, default=8192, help="largest input libFuzzer makes (default 8192)"
    )
    parser.add_argument(
        "--instrument",
        choices=("all", "core", "none"),
        default="all",
        help="what atheris instruments: all kafka_wire, core (not the generated codecs), none",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    names = args.only or list(HARNESSES)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda name: run_one(name, args), names))
    print(table(results))
    for r in results:
        if r.failed:
            print(f"\n--- {r.name}: last lines of {Path(args.work) / (r.name + '.log')}", file=sys.stderr)
            print("\n".join(r.tail), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
