"""The network fuzzer's report: its findings with the exact bytes that reproduce them (JSON, hex),
the run's counters, and the readable summary printed at the end.

The JSON has ``"format": "kafka-wire-fuzz/1"``; :func:`report_from_json` reads back what
:func:`report_to_json` wrote (the replay reads it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from kafka_wire.netfuzz.classify import FindingKind, api_name
from kafka_wire.netfuzz.plan import RequestKind
from kafka_wire.netfuzz.shrink import Scenario

FORMAT: Final = "kafka-wire-fuzz/1"


class ReportError(Exception):
    """A report file that cannot be read (one line: why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    kind: FindingKind
    detail: str
    api_key: int
    api_version: int
    request_kind: RequestKind
    #: The scenario as it happened (prefix: the earlier requests on its connection).
    original: Scenario
    #: The smallest scenario that reproduced; None when none did (not shrunk, or flaky).
    shrunk: Scenario | None = None
    server_gone: bool = False
    #: How many times the same kind of finding came from the same API (any version).
    occurrences: int = 1
    #: The request number (1-based, across the run) that revealed it.
    request_number: int = 0
    #: Every version of the API it was seen on (``api_version``: the request that revealed it).
    versions: tuple[int, ...] = ()

    def __post_init__(self) -> None:  # sorted, without repeats, and always holding api_version
        object.__setattr__(self, "versions", tuple(sorted({*self.versions, self.api_version})))

    @property
    def signature(self) -> tuple[str, int, bool]:
        """Findings with the same signature count as one: same kind, same API, same server fate."""
        return (self.kind.value, self.api_key, self.server_gone)

    def seen_again(self, api_key: int, api_version: int) -> Finding:
        """This finding with one more occurrence, by a request of ``api_key`` v``api_version``."""
        versions = (*self.versions, api_version) if api_key == self.api_key else self.versions
        return replace(self, occurrences=self.occurrences + 1, versions=versions)

    @property
    def reproducer(self) -> Scenario:
        return self.shrunk if self.shrunk is not None else self.original


@dataclass(slots=True, kw_only=True)
class Report:
    target: str
    seed: int
    requests: int = 0
    elapsed_s: float = 0.0
    connections: int = 0
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    advertised: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Requests sent per kind (generated, mutated, unadvertised).
    sent: dict[str, int] = field(default_factory=dict)
    #: How bursts ended (see classify.Outcome).
    outcomes: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: Why the run stopped early (the server is gone), or None.
    stopped: str | None = None
    #: Times the server was gone and came back within ``--wait-restart``.
    restarts: int = 0

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _scenario_json(s: Scenario) -> dict[str, Any]:
    return {"prefix": [f.hex() for f in s.prefix], "burst": [f.hex() for f in s.burst], "culprit": s.culprit}


def _scenario_of(data: Any) -> Scenario:
    if not isinstance(data, dict):
        raise ReportError("a scenario must be an object")
    try:
        prefix = tuple(bytes.fromhex(h) for h in data.get("prefix", []))
        burst = tuple(bytes.fromhex(h) for h in data["burst"])
        culprit = int(data.get("culprit", 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"bad scenario: {exc}") from None
    if not burst or not 0 <= culprit < len(burst):
        raise ReportError("a scenario needs a burst and a culprit inside it")
    return Scenario(prefix, burst, culprit)


def finding_to_json(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind.value,
        "detail": f.detail,
        "api_key": f.api_key,
        "api": api_name(f.api_key),
        "api_version": f.api_version,
        "versions": list(f.versions),
        "request_kind": f.request_kind.value,
        "server_gone": f.server_gone,
        "occurrences": f.occurrences,
        "request_number": f.request_number,
        "original": _scenario_json(f.original),
        "shrunk": None if f.shrunk is None else _scenario_json(f.shrunk),
    }


def finding_of(data: Any) -> Finding:
    if not isinstance(data, dict):
        raise ReportError("a finding must be an object")
    try:
        return Finding(
            kind=FindingKind(data["kind"]),
            detail=str(data.get("detail", "")),
            api_key=int(data["api_key"]),
            api_version=int(data["api_version"]),
            request_kind=RequestKind(data.get("request_kind", "generated")),
            original=_scenario_of(data["original"]),
            shrunk=None if data.get("shrunk") is None else _scenario_of(data["shrunk"]),
            server_gone=bool(data.get("server_gone", False)),
            occurrences=int(data.get("occurrences", 1)),
            request_number=int(data.get("request_number", 0)),
            versions=tuple(int(v) for v in data.get("versions", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"bad finding: {exc!r}") from None


def report_to_json(report: Report) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "target": report.target,
        "seed": report.seed,
        "requests": report.requests,
        "elapsed_s": round(report.elapsed_s, 3),
        "requests_per_s": round(report.requests_per_s, 1),
        "connections": report.connections,
        "sasl_mechanism": report.sasl_mechanism,
        "sasl_username": report.sasl_username,
        "advertised": {str(k): list(v) for k, v in sorted(report.advertised.items())},
        "sent": dict(sorted(report.sent.items())),
        "outcomes": dict(sorted(report.outcomes.items())),
        "stopped": report.stopped,
        "restarts": report.restarts,
        "findings": [finding_to_json(f) for f in report.findings],
    }


def report_from_json(data: Any) -> Report:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f'not a kafka-wire fuzz report (expected "format": "{FORMAT}")')
    try:
        advertised_json: Mapping[str, Any] = data.get("advertised", {})
        return Report(
            target=str(data["target"]),
            seed=int(data["seed"]),
            requests=int(data.get("requests", 0)),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
            connections=int(data.get("connections", 0)),
            sasl_mechanism=data.get("sasl_mechanism"),
            sasl_username=data.get("sasl_username"),
            advertised={int(k): (int(v[0]), int(v[1])) for k, v in advertised_json.items()},
            sent={str(k): int(v) for k, v in data.get("sent", {}).items()},
            outcomes={str(k): int(v) for k, v in data.get("outcomes", {}).items()},
            stopped=data.get("stopped"),
            restarts=int(data.get("restarts", 0)),
            findings=[finding_of(f) for f in data.get("findings", [])],
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ReportError(f"bad report: {exc!r}") from None


def dumps(report: Report) -> str:
    return json.dumps(report_to_json(report), indent=2) + "\n"


def loads(text: str) -> Report:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"not JSON: {exc}") from None
    return report_from_json(data)


def summary(report: Report) -> str:
    """The readable summary: counters, then one paragraph per finding."""
    rows = [
        ("target", report.target),
        ("seed", str(report.seed)),
        ("requests", f"{report.requests:,}"),
        ("elapsed", f"{report.elapsed_s:.1f} s ({report.requests_per_s:,.0f} requests/s)"),
        ("connections", f"{report.connections:,}"),
        ("APIs advertised", str(len(report.advertised))),
    ]
    rows += [(f"sent {kind}", f"{count:,}") for kind, count in sorted(report.sent.items())]
    rows += [(f"bursts {name}", f"{count:,}") for name, count in sorted(report.outcomes.items())]
    if report.restarts:
        rows.append(("server restarts", f"{report.restarts:,} (gone, then back within --wait-restart)"))
    rows.append(("findings", str(len(report.findings))))
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    for number, f in enumerate(report.findings, 1):
        repro = f.reproducer
        others = [v for v in f.versions if v != f.api_version]
        also = f", also v{', v'.join(map(str, others))}" if others else ""
        lines.append(
            f"finding {number}: {f.kind.value} on {api_name(f.api_key)} v{f.api_version} "
            f"({f.request_kind.value}; seen {f.occurrences}x{also}; first at request {f.request_number})"
        )
        lines.append(f"  {f.detail}")
        shrunk = "shrunk" if f.shrunk is not None else "not shrunk"
        lines.append(
            f"  reproducer ({shrunk}): {len(repro.prefix)} earlier request(s), burst of {len(repro.burst)}, "
            f"culprit {len(repro.burst[repro.culprit])} bytes: {repro.burst[repro.culprit][:48].hex()}"
            + ("..." if len(repro.burst[repro.culprit]) > 48 else "")
        )
    return "\n".join(lines) + "\n"
