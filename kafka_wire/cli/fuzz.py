"""``kafka-wire fuzz``: the network fuzzer (see ``docs/guide/network-fuzzer.md``).

``kafka-wire fuzz HOST:PORT`` negotiates ApiVersions (and SASL), sends generated, mutated and
unadvertised requests, reports crashes, hangs, malformed responses, wrong correlation ids and
protocol violations, shrinks each to a small reproducer and writes them (``--report``).
``kafka-wire fuzz --replay PATH [HOST:PORT]`` resends a report's findings.
Exit status: 0 nothing found (or nothing reproduced), 1 findings, 2 the fuzzer could not run.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from kafka_wire.netfuzz.plan import mutate_frame
from kafka_wire.testing.generate import random_message


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "fuzz",
        help="fuzz a Kafka-speaking server over the network",
        description="Send generated and mutated requests to a Kafka server and report what breaks it. "
        "Exit status: 0 nothing found, 1 findings, 2 the fuzzer could not run.",
    )
    parser.add_argument(
        "target", nargs="?", metavar="HOST:PORT", help="the server (loopback unless --allow-remote)"
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=None,
        metavar="N",
        help="stop after N requests (default 1000 without --seconds)",
    )
    parser.add_argument("--seconds", type=float, default=None, metavar="S", help="stop after S seconds")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of the request plan (default 0)"
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait for an answer (default 5)"
    )
    parser.add_argument("--rate", type=float, default=None, metavar="R", help="at most R requests per second")
    parser.add_argument(
        "--report", type=Path, default=None, metavar="PATH", help="write the JSON report here"
    )
    parser.add_argument(
        "--replay", type=Path, default=None, metavar="PATH", help="resend the findings of a report"
    )
    parser.add_argument(
        "--wait-restart",
        type=float,
        default=0.0,
        metavar="S",
        help="when the server is gone, wait up to S seconds for it to come back (restarted by a supervisor) and go on",
    )
    parser.add_argument("--no-shrink", action="store_true", help="keep findings as found")
    parser.add_argument(
        "--shrink-trials",
        type=int,
        default=150,
        metavar="N",
        help="replays per finding while shrinking (default 150)",
    )
    parser.add_argument("--sasl-mechanism", choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    parser.add_argument("--sasl-username", metavar="USER")
    parser.add_argument("--sasl-password", metavar="PASSWORD")
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow a target that is not a loopback address"
    )
    parser.set_defaults(handler=run)


class Progress:
    """A one-line progress bar on stderr (a line every tenth of the run when not a terminal)."""

    WIDTH = 30

    def __init__(self, total: int | None, seconds: float | None, out: TextIO) -> None:
        self.total = total
        self.seconds = seconds
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self._last = 0.0
        self._tenth = 0

    def fraction(self, requests: int, now: float) -> float:
        parts = []
        if self.total:
            parts.append(requests / self.total)
        if self.seconds:
            parts.append((now - self.started) / self.seconds)
        return min(1.0, max(parts, default=1.0))

    def update(self, requests: int, findings: int) -> None:
        now = time.monotonic()
        fraction = self.fraction(requests, now)
        if self.tty:
            if now - self._last < 0.1 and fraction < 1:
                return
            self._last = now
            self.out.write("\r" + self._line(requests, findings, fraction, now))
        else:
            tenth = int(fraction * 10)
            if tenth <= self._tenth:
                return
            self._tenth = tenth
            self.out.write(self._line(requests, findings, fraction, now) + "\n")
        self.out.flush()

    def _line(self, requests: int, findings: int, fraction: float, now: float) -> str:
        filled = int(self.WIDTH * fraction)
        elapsed = now - self.started
        rate = requests / elapsed if elapsed > 0 else 0.0
        return (
            f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {requests} requests, {findings} finding(s), "
            f"{rate:,.0f}/s, {elapsed:.0f}s elapsed"
        )

    def done(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def run(args: argparse.Namespace) -> int:
    from kafka_wire.adapters.netfuzz_socket import FuzzerError

    try:
        if args.replay is not None:
            return _replay(args)
        return _fuzz(args)
    except FuzzerError as exc:
        print(f"kafka-wire fuzz: {exc}", file=sys.stderr)
        return 2


def _sasl(args: argparse.Namespace) -> object:
    from kafka_wire.adapters.netfuzz_socket import FuzzerError, SaslOptions

    if args.sasl_mechanism is None:
        if args.sasl_username or args.sasl_password:
            raise FuzzerError("--sasl-username and --sasl-password need --sasl-mechanism")
        return None
    if not args.sasl_username or args.sasl_password is None:
        raise FuzzerError("--sasl-mechanism needs --sasl-username and --sasl-password")
    return SaslOptions(
        mechanism=args.sasl_mechanism, username=args.sasl_username, password=args.sasl_password
    )


def _target(args: argparse.Namespace, text: str | None) -> object:
    from kafka_wire.adapters.netfuzz_socket import FuzzerError, check_loopback, parse_target

    if text is None:
        raise FuzzerError("a target HOST:PORT is needed")
    target = parse_target(text)
    if not args.allow_remote:
        check_loopback(target)
    return target


def _fuzz(args: argparse.Namespace) -> int:
    from kafka_wire.adapters.netfuzz_socket import FuzzerError, FuzzOptions, SaslOptions, Target, fuzz
    from kafka_wire.netfuzz.report import dumps, summary

    target = _target(args, args.target)
    assert isinstance(target, Target)
    sasl = _sasl(args)
    assert sasl is None or isinstance(sasl, SaslOptions)
    if args.requests is not None and args.requests < 1:
        raise FuzzerError("--requests must be at least 1")
    if (
        args.timeout <= 0
        or (args.rate is not None and args.rate <= 0)
        or (args.seconds is not None and args.seconds <= 0)
    ):
        raise FuzzerError("--timeout, --rate and --seconds must be positive")
    requests = args.requests if args.requests is not None or args.seconds is not None else 1000
    options = FuzzOptions(
        seed=args.seed,
        requests=requests,
        seconds=args.seconds,
        timeout_s=args.timeout,
        rate=args.rate,
        sasl=sasl,
        shrink=not args.no_shrink,
        max_trials=args.shrink_trials,
        wait_restart_s=args.wait_restart,
    )
    progress = Progress(requests, args.seconds, sys.stderr)
    # SIGTERM stops the run the way Ctrl-C does: the report of what ran is still written
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = fuzz(target, options, random_message, mutate_frame, progress.update)
    finally:
        signal.signal(signal.SIGTERM, previous)
        progress.done()
    if args.report is not None:
        try:
            args.report.write_text(dumps(report), encoding="utf-8")
        except OSError as exc:
            raise FuzzerError(f"cannot write --report {args.report}: {exc.strerror or exc}") from None
    sys.stdout.write(summary(report))
    sys.stdout.flush()
    return 1 if report.findings else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _replay(args: argparse.Namespace) -> int:
    from kafka_wire.adapters.netfuzz_socket import FuzzerError, SaslOptions, Target, replay
    from kafka_wire.netfuzz.classify import api_name
    from kafka_wire.netfuzz.report import ReportError, loads

    try:
        report = loads(args.replay.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FuzzerError(f"cannot read --replay {args.replay}: {exc.strerror or exc}") from None
    except ReportError as exc:
        raise FuzzerError(f"--replay {args.replay}: {exc}") from None
    target = _target(args, args.target or report.target)
    assert isinstance(target, Target)
    sasl = _sasl(args)
    assert sasl is None or isinstance(sasl, SaslOptions)
    results = replay(target, report, args.timeout, sasl)
    still = 0
    for number, result in enumerate(results, 1):
        f = result.finding
        status = "reproduces" if result.reproduced else "does not reproduce"
        still += result.reproduced
        print(
            f"finding {number}: {f.kind.value} on {api_name(f.api_key)} v{f.api_version}: {status} ({result.detail})"
        )
    print(f"{still} of {len(results)} finding(s) reproduce against {target}")
    return 1 if still else 0


__all__ = ["Progress", "add_parser", "run"]
