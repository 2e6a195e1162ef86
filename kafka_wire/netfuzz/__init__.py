"""The pure core of ``kafka-wire fuzz``, the network fuzzer for Kafka-speaking servers.

- :mod:`~kafka_wire.netfuzz.plan`: what to send next (generated, mutated, unadvertised requests).
- :mod:`~kafka_wire.netfuzz.classify`: the outcome of a burst, and which outcomes are findings.
- :mod:`~kafka_wire.netfuzz.shrink`: shrinking a finding to a small reproducer (a state machine
  proposing candidates and told whether each reproduced).
- :mod:`~kafka_wire.netfuzz.report`: the report (JSON with hex bytes) and the summary text.

No sockets, clocks or ambient randomness here: the socket adapter
(:mod:`kafka_wire.adapters.netfuzz_socket`) drives it. See ``docs/guide/network-fuzzer.md``.
"""

from kafka_wire.netfuzz.classify import BurstCheck, FindingKind, Outcome, Verdict
from kafka_wire.netfuzz.plan import Plan, PlanConfig, RequestKind, Sent
from kafka_wire.netfuzz.report import Finding, Report, ReportError
from kafka_wire.netfuzz.shrink import Scenario, Shrinker

__all__ = [
    "BurstCheck",
    "Finding",
    "FindingKind",
    "Outcome",
    "Plan",
    "PlanConfig",
    "Report",
    "ReportError",
    "RequestKind",
    "Scenario",
    "Sent",
    "Shrinker",
    "Verdict",
]
