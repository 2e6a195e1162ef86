"""The I/O of ``kafka-wire fuzz``: blocking sockets driving the pure core in :mod:`kafka_wire.netfuzz`.

Each connection starts with a handshake run by :class:`~kafka_wire.protocol.ClientConnection`
(ApiVersions, then SASL when configured); after it the fuzzer writes raw frames (generated,
mutated, unadvertised) and reads raw response frames, so that bytes a connection object would
refuse to send still go out. Every close is followed by a new connection (and a new handshake);
a refused one means the server is gone.
"""

from __future__ import annotations

import ipaddress
import random
import secrets
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from kafka_wire.errors import DecodeError, KafkaWireError
from kafka_wire.netfuzz.classify import BurstCheck, FindingKind, Outcome, Verdict
from kafka_wire.netfuzz.plan import (
    Generate,
    Mutate,
    Plan,
    PlanConfig,
    RequestKind,
    Sent,
    classify_frame,
    frame_api,
    sent_from_frame,
    sentinel,
)
from kafka_wire.netfuzz.report import Finding, Report
from kafka_wire.netfuzz.shrink import Scenario, Shrinker
from kafka_wire.protocol.client import ClientConfig, ClientConnection
from kafka_wire.protocol.events import NEED_DATA, Authenticated, ConnectionClosed, VersionsNegotiated
from kafka_wire.protocol.frames import FrameReader
from kafka_wire.protocol.sasl import PlainClient, SaslClientMechanism, ScramClient

#: Responses larger than this are malformed for the fuzzer (no request it sends asks for more).
MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024
#: Earlier requests of a connection kept for shrinking (the prefix of a finding's scenario).
MAX_HISTORY: Final = 64
#: Connection attempts before the server counts as gone (a listen backlog can refuse briefly).
CONNECT_ATTEMPTS: Final = 3
#: Shrink trials of a hang (each that reproduces waits the whole timeout).
MAX_HANG_TRIALS: Final = 20
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class FuzzerError(Exception):
    """The fuzzer cannot run (exit status 2): the target is unreachable at the start, the
    handshake fails, a remote target without ``--allow-remote``."""


class ServerGone(Exception):
    """A new connection was refused (or its handshake failed) after the server had been up."""


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_target(text: str) -> Target:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise FuzzerError(f"expected HOST:PORT, got {text!r}")
    return Target(host.strip("[]"), int(port))


def non_loopback(addresses: Sequence[str]) -> list[str]:
    """The addresses that are not loopback (all of them when an address does not parse)."""
    out = []
    for address in addresses:
        try:
            if not ipaddress.ip_address(address.split("%")[0]).is_loopback:
                out.append(address)
        except ValueError:
            out.append(address)
    return out


def check_loopback(target: Target) -> None:
    """Refuse a target that resolves to anything but loopback addresses."""
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FuzzerError(f"cannot resolve {target.host}: {exc}") from None
    remote = non_loopback(sorted({str(info[4][0]) for info in infos}))
    if remote:
        raise FuzzerError(
            f"{target} resolves to non-loopback address(es) {', '.join(remote)}: pass --allow-remote "
            "to fuzz a server you are entitled to attack"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslOptions:
    mechanism: str
    username: str
    password: str

    def __post_init__(self) -> None:
        if self.mechanism not in SASL_MECHANISMS:
            raise FuzzerError(f"SASL mechanism must be one of {', '.join(SASL_MECHANISMS)}")

    def client(self) -> SaslClientMechanism:
        if self.mechanism == "PLAIN":
            return PlainClient(self.username, self.password)
        return ScramClient(self.mechanism, self.username, self.password, secrets.token_urlsafe(18))


class Connection:
    """One TCP connection to the target after its handshake; raw frames in and out."""

    def __init__(self, target: Target, timeout_s: float, sasl: SaslOptions | None) -> None:
        self.timeout_s = timeout_s
        self.sock = socket.create_connection((target.host, target.port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = FrameReader(MAX_RESPONSE_BYTES)
        self.eof = False
        self.advertised: dict[int, tuple[int, int]] = {}
        try:
            self._handshake(sasl)
        except BaseException:
            self.close()
            raise

    def _handshake(self, sasl: SaslOptions | None) -> None:
        client = ClientConnection(
            ClientConfig(client_id="kafka-wire-fuzz", request_timeout_ms=None),
            sasl=None if sasl is None else sasl.client(),
        )
        done = False
        deadline = time.monotonic() + self.timeout_s
        while not done:
            out = client.data_to_send()
            if out:
                self.sock.sendall(out)
            event = client.next_event()
            if event is NEED_DATA:
                out = client.data_to_send()  # handling a frame may queue the next SASL token
                if out:
                    self.sock.sendall(out)
                    continue
                if time.monotonic() > deadline:
                    raise FuzzerError(f"handshake: no answer within {self.timeout_s} s")
                data = self.sock.recv(65536)
                if data:
                    client.receive_data(data)
                else:
                    client.receive_eof()
            elif isinstance(event, VersionsNegotiated):
                self.advertised = {k.api_key: (k.min_version, k.max_version) for k in event.response.api_keys}
                done = sasl is None
            elif isinstance(event, Authenticated):
                done = True
            elif isinstance(event, ConnectionClosed):
                raise FuzzerError("handshake: the server closed the connection")

    def send(self, data: bytes) -> bool:
        """Write ``data``; False when the connection is already closed or reset."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def read_frame(self, timeout_s: float) -> bytes | None:
        """The next response frame; None when the server closed. Raises ``TimeoutError`` when
        nothing whole came within ``timeout_s`` and ``DecodeError`` for a bad size prefix."""
        deadline = time.monotonic() + timeout_s
        while True:
            frame = self.reader.next_frame()
            if frame is not None:
                return frame
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise
            except OSError:  # reset
                self.eof = True
                return None
            if not data:
                self.eof = True
            else:
                self.reader.feed(data)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def run_burst(conn: Connection, burst: Sequence[Sent], timeout_s: float) -> BurstCheck:
    """Send a burst and read its answers until the check is decided."""
    check = BurstCheck(burst)
    sent_ok = conn.send(b"".join(s.frame for s in burst))
    while not check.done:
        if not sent_ok:
            check.on_close()
            break
        try:
            frame = conn.read_frame(timeout_s)
        except TimeoutError:
            check.on_timeout(int(timeout_s * 1000))
            break
        except DecodeError as exc:
            check.on_unreadable(str(exc))
            break
        if frame is None:
            check.on_close()
        else:
            check.on_frame(frame)
    return check


def admissible_for(kind: FindingKind, advertised: Mapping[int, tuple[int, int]]) -> Callable[[bytes], bool]:
    """Which shrink candidates of a culprit frame are worth a trial: for a crash, a hang or a
    malformed response, only requests that are still valid (a close after garbage is no finding);
    otherwise frames whose correlation id a server can read."""
    if kind in (FindingKind.CRASH, FindingKind.HANG, FindingKind.MALFORMED_RESPONSE):
        return lambda frame: classify_frame(frame, advertised) is RequestKind.GENERATED
    return lambda frame: len(frame) >= 12


@dataclass(slots=True)
class Session:
    """Connections to one target with the same options; counts the connections made."""

    target: Target
    timeout_s: float
    sasl: SaslOptions | None = None
    connections: int = 0

    def connect(self) -> Connection:
        """A new connection after its handshake. Raises ``ServerGone`` when refused."""
        last: BaseException | None = None
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                conn = Connection(self.target, self.timeout_s, self.sasl)
                self.connections += 1
                return conn
            except ConnectionRefusedError as exc:
                last = exc
                time.sleep(0.05 * (attempt + 1))
            except (OSError, FuzzerError, KafkaWireError) as exc:
                last = exc
                break
        raise ServerGone(f"{type(last).__name__}: {last}")

    def run_scenario(self, scenario: Scenario) -> Verdict | None:
        """Run a scenario on a fresh connection; the verdict of its burst (None: no finding)."""
        conn = self.connect()
        try:
            for number, frame in enumerate(scenario.prefix):
                sent = sent_from_frame(frame, conn.advertised)
                # after an acks=0 produce, an answered ApiVersions shows it did not close
                extra = [sentinel(conn.advertised, 0x7FFF0000 + number)] if sent.acks_zero else []
                check = run_burst(conn, [sent, *extra], self.timeout_s)
                if not check.connection_usable:
                    return None
            burst = [sent_from_frame(frame, conn.advertised) for frame in scenario.burst]
            check = run_burst(conn, burst, self.timeout_s)
        finally:
            conn.close()
        if check.verdict is None and not check.connection_usable:
            try:
                self.connect().close()
            except ServerGone:
                check.server_gone()
        return check.verdict


ProgressCallback = Callable[[int, int], None]


@dataclass(slots=True, kw_only=True)
class FuzzOptions:
    seed: int = 0
    requests: int | None = 1000
    seconds: float | None = None
    timeout_s: float = 5.0
    rate: float | None = None
    sasl: SaslOptions | None = None
    plan: PlanConfig = field(default_factory=PlanConfig)
    #: Shrink trials per finding.
    max_trials: int = 150
    shrink: bool = True
    #: Seconds to wait for a server that is gone to accept connections again (restarted by a
    #: supervisor) before the run stops; 0 stops at once.
    wait_restart_s: float = 0.0


def _await_restart(session: Session, seconds: float) -> Connection | None:
    """A new connection once the server accepts again within ``seconds``, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return session.connect()
        except ServerGone:
            time.sleep(0.1)
    return None


def fuzz(
    target: Target,
    options: FuzzOptions,
    generate: Generate,
    mutate: Mutate,
    progress: ProgressCallback | None = None,
) -> Report:
    """Fuzz ``target`` until ``options.requests`` requests or ``options.seconds`` have passed."""
    session = Session(target, options.timeout_s, options.sasl)
    report = Report(
        target=str(target),
        seed=options.seed,
        sasl_mechanism=None if options.sasl is None else options.sasl.mechanism,
        sasl_username=None if options.sasl is None else options.sasl.username,
    )
    try:
        conn = session.connect()
    except ServerGone as exc:
        raise FuzzerError(f"cannot connect to {target}: {exc}") from None
    report.advertised = dict(conn.advertised)
    plan = Plan(random.Random(options.seed), conn.advertised, generate, mutate, options.plan)
    started = time.monotonic()
    seen: dict[tuple[str, int, bool], int] = {}
    history: list[bytes] = []
    findings: list[Finding] = []
    try:
        while True:
            elapsed = time.monotonic() - started
            if options.requests is not None and report.requests >= options.requests:
                break
            if options.seconds is not None and elapsed >= options.seconds:
                break
            if options.rate:
                ahead = report.requests / options.rate - elapsed
                if ahead > 0:
                    time.sleep(ahead)
            burst = plan.next_burst()
            for s in burst:
                report.sent[s.kind.value] = report.sent.get(s.kind.value, 0) + 1
            report.requests += len(burst)
            check = run_burst(conn, burst, options.timeout_s)
            scenario = Scenario(tuple(history), tuple(s.frame for s in burst), 0)
            history.extend(s.frame for s in burst)
            del history[:-MAX_HISTORY]
            gone: str | None = None
            if not check.connection_usable:
                conn.close()
                try:
                    conn = session.connect()
                except ServerGone as exc:
                    gone = str(exc)
                    if check.verdict is None:
                        check.server_gone()
                history.clear()
            outcome = check.outcome or Outcome.ANSWERED
            report.outcomes[outcome.value] = report.outcomes.get(outcome.value, 0) + 1
            verdict = check.verdict
            if verdict is not None:
                if gone is not None and not verdict.server_gone:
                    check.server_gone()
                    verdict = check.verdict
                assert verdict is not None
                culprit = burst[verdict.index]
                finding = Finding(
                    kind=verdict.kind,
                    detail=verdict.detail,
                    api_key=culprit.api_key,
                    api_version=culprit.api_version,
                    request_kind=culprit.kind,
                    original=Scenario(scenario.prefix, scenario.burst, verdict.index),
                    server_gone=verdict.server_gone,
                    request_number=report.requests - len(burst) + verdict.index + 1,
                )
                index = seen.get(finding.signature)
                if index is None and options.shrink and not finding.server_gone:
                    # shrinking can move the blame to another request of the burst, and its API
                    first_seen = finding.signature
                    finding = shrink_finding(session, finding, report.advertised, options.max_trials)
                    index = seen.get(finding.signature)
                    seen[first_seen] = len(findings) if index is None else index
                if index is not None:
                    findings[index] = findings[index].seen_again(finding.api_key, finding.api_version)
                else:
                    seen[finding.signature] = len(findings)
                    findings.append(finding)
            if gone is not None:
                restarted = _await_restart(session, options.wait_restart_s)
                if restarted is None:
                    report.stopped = f"the server is gone ({gone})"
                    break
                conn = restarted
                report.restarts += 1
            if progress is not None:
                progress(report.requests, len(findings))
    except KeyboardInterrupt:
        report.stopped = "interrupted (Ctrl-C or SIGTERM)"  # the report of what ran so far is still written
    finally:
        conn.close()
        report.elapsed_s = time.monotonic() - started
        report.connections = session.connections
        report.findings = findings
    return report


def reproduces(session: Session, finding: Finding, scenario: Scenario) -> Verdict | None:
    """The verdict of a trial when it is the same kind of finding, else None."""
    try:
        verdict = session.run_scenario(scenario)
    except ServerGone:
        return None
    return verdict if verdict is not None and verdict.kind is finding.kind else None


def shrink_finding(
    session: Session, finding: Finding, advertised: Mapping[int, tuple[int, int]], max_trials: int
) -> Finding:
    """The finding with ``shrunk`` set to the smallest scenario that reproduced (None if none did)."""
    if finding.kind is FindingKind.HANG:  # each trial that reproduces costs the whole timeout
        max_trials = min(max_trials, MAX_HANG_TRIALS)
    shrinker = Shrinker(finding.original, admissible_for(finding.kind, advertised), max_trials=max_trials)
    details: dict[Scenario, str] = {}  # what each reproducing candidate gave, for a moved blame
    while (candidate := shrinker.next_candidate()) is not None:
        verdict = reproduces(session, finding, candidate)
        if verdict is not None:
            details[candidate] = verdict.detail
        shrinker.tell(verdict is not None)
    if not shrinker.reproduced:
        return finding
    api_key, api_version, request_kind = finding.api_key, finding.api_version, finding.request_kind
    detail = finding.detail
    if shrinker.origin != finding.original.culprit:
        # another request of the burst reproduced alone: it is the culprit, as it was sent
        original = finding.original.burst[shrinker.origin]
        api = frame_api(original)
        if api is not None:
            api_key, api_version = api
            request_kind = classify_frame(original, advertised)
        detail = details.get(Scenario((), (original,), 0), detail)
    return replace(
        finding,
        detail=detail,
        api_key=api_key,
        api_version=api_version,
        request_kind=request_kind,
        shrunk=shrinker.result(),
        versions=(),
    )


@dataclass(frozen=True, slots=True)
class ReplayResult:
    finding: Finding
    reproduced: bool
    detail: str


def replay(target: Target, report: Report, timeout_s: float, sasl: SaslOptions | None) -> list[ReplayResult]:
    """Resend each finding's reproducer (shrunk when there is one); whether it still reproduces."""
    session = Session(target, timeout_s, sasl)
    try:
        session.connect().close()
    except ServerGone as exc:
        raise FuzzerError(f"cannot connect to {target}: {exc}") from None
    results = []
    for finding in report.findings:
        try:
            verdict = session.run_scenario(finding.reproducer)
        except ServerGone as exc:
            results.append(
                ReplayResult(finding, finding.kind is FindingKind.CRASH, f"the server is gone ({exc})")
            )
            continue
        if verdict is not None and verdict.kind is finding.kind:
            results.append(ReplayResult(finding, True, verdict.detail))
        else:
            results.append(ReplayResult(finding, False, "no finding" if verdict is None else verdict.detail))
    return results


__all__ = [
    "Connection",
    "FuzzOptions",
    "FuzzerError",
    "ReplayResult",
    "SaslOptions",
    "ServerGone",
    "Session",
    "Target",
    "check_loopback",
    "fuzz",
    "non_loopback",
    "parse_target",
    "replay",
    "run_burst",
]
