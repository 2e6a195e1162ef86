"""A consumer group rebalancing while it works: three members, one leaves, two carry on.

Three ``group`` driver processes (see clients/driver_common.py) join one group on a 6-partition
topic. Each polls batches, prints what it processed, commits the batch's offsets synchronously and
prints the commit. First one member alone consumes and commits a record on every partition (phase
0; see ``start_members`` for why), then the other two join. The test waits for the group to settle
(three disjoint assignments covering all six partitions), produces phase 1 (numbered records spread over the partitions) and waits until
every record has been processed. Then one member closes cleanly (SIGTERM: ``close()`` leaves the
group), the other two must settle on all six partitions between them, phase 2 is produced, and
the test waits for it to be processed and committed (a member stopped between processing a batch
and its commit would leave the batch uncommitted), then stops the two.

What must hold at the end:

* Every produced record was processed by some member, with the value it was produced with, and
  nothing else was processed.
* No committed record is processed again. Precisely: order every member's events on the machine's
  monotonic clock (``t`` in the events; CLOCK_MONOTONIC is one clock for all processes). For each
  partition, the processed offsets form one sequence across the group, cut by the commits. After a
  commit of next-offset ``c`` on partition ``p`` (at the time the commit call returned), no member
  processes an offset of ``p`` below ``c``. Reprocessing uncommitted records after a rebalance
  is allowed (at-least-once); reprocessing committed ones is not.
* Per partition, successful commits never go backwards, and the last one is the partition's end
  offset (everything processed was committed).
* Each member processed something in phase 1 (the work really was shared), and the one that left
  exited cleanly after closing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Protocol

import pytest

from tests.e2e.brokers import BrokerProcess
from tests.interop.harness import Client, DriverOptions, DriverRun, LiveDriver, run_driver

PARTITIONS = 6
PHASE_RECORDS = 300
BATCH = 20
MEMBER_TIMEOUT_S = 90.0
SETTLE_TIMEOUT_S = 30.0
#: The first settling also waits for three clients to start and for the coordinator to exist (a
#: Kafka node creates and loads the 50 partitions of ``__consumer_offsets`` first).
FIRST_SETTLE_TIMEOUT_S = 90.0
PROCESS_TIMEOUT_S = 30.0

Event = dict[str, Any]


class Bootstrapped(Protocol):
    """What the scenario needs of a broker or cluster: its bootstrap address."""

    @property
    def bootstrap(self) -> str: ...


def latest_assignment(events: list[Event], after: float) -> list[int] | None:
    assigned = [e for e in events if e.get("event") == "assigned" and e["t"] > after]
    return assigned[-1]["partitions"] if assigned else None


def settled(members: list[LiveDriver], after: float) -> bool:
    """Each member has an assignment since ``after``; together they are disjoint and cover every
    partition, each member with at least one."""
    assignments = [latest_assignment(m.events, after) for m in members]
    if any(not a for a in assignments):
        return False
    every = [p for a in assignments if a for p in a]
    return sorted(every) == list(range(PARTITIONS))


def processed(events: list[Event]) -> set[tuple[int, int]]:
    return {(r[0], r[1]) for e in events if e.get("event") == "processed" for r in e["records"]}


def wait_processed(
    members: list[LiveDriver], wanted: set[tuple[int, int]], timeout_s: float = PROCESS_TIMEOUT_S
) -> bool:
    def done(_: list[Event]) -> bool:
        seen: set[tuple[int, int]] = set()
        for m in members:
            seen |= processed(m.events)
        return wanted <= seen

    return members[0].wait_for(done, timeout_s)


def committed(events: list[Event]) -> dict[int, int]:
    """The highest committed next-offset per partition in ``events``."""
    highest: dict[int, int] = {}
    for e in events:
        if e.get("event") == "committed":
            for p, c in e["offsets"]:
                highest[p] = max(highest.get(p, 0), c)
    return highest


def wait_committed(members: list[LiveDriver], ends: dict[int, int]) -> bool:
    """Wait until the (running) members' commits together reach ``ends`` on every partition."""

    def done(_: list[Event]) -> bool:
        highest = committed([e for m in members for e in m.events])
        return all(highest.get(p, 0) >= end for p, end in ends.items())

    return members[0].wait_for(done, PROCESS_TIMEOUT_S)


def produce(
    target: Bootstrapped, topic: str, client: Client, count: int = PHASE_RECORDS
) -> dict[tuple[int, int], str]:
    """Phase records, spread evenly over the partitions: (partition, offset) -> value."""
    run = run_driver(
        client,
        target.bootstrap,
        "produce",
        topic=topic,
        count=count,
        timeout_s=60.0,
        options=DriverOptions(partitions=PARTITIONS),
    ).check()
    records = run.event("produced")["records"]
    assert len(records) == count, run.describe()
    name = {"confluent": "confluent", "java": "java", "java4": "java4"}[client]
    return {(p, o): f"{name}-{i}" for i, (p, o) in enumerate(records)}


def tail(events: list[Event], n: int = 6) -> list[Event]:
    """The last ``n`` events, with processed records shortened to a count."""
    return [{**e, "records": len(e["records"])} if "records" in e else e for e in events[-n:]]


def describe(runs: list[DriverRun]) -> str:
    return "\n\n".join(f"member {i}: " + r.describe()[:4000] for i, r in enumerate(runs))


def assignment_history(runs: list[DriverRun]) -> list[str]:
    """Each member's assignments and failed commits over time, one line each (the end of a failure
    message: what a violation's reader needs first)."""
    lines = []
    for member, run in enumerate(runs):
        for e in run.events:
            if e.get("event") in ("assigned", "commit_failed", "error"):
                detail = e.get("partitions", e.get("message", ""))
                lines.append(f"member {member} {e['event']} at {e.get('t', 0.0):.3f}: {detail}")
    return lines


def commit_violations(runs: list[DriverRun]) -> list[str]:
    """Records processed (by anyone) after a commit that covered them; see the module docstring."""
    commits: list[tuple[float, int, int, int]] = []  # (t, member, partition, next_offset)
    processing: list[tuple[float, int, int, int]] = []  # (t, member, partition, offset)
    for member, run in enumerate(runs):
        for e in run.events:
            if e.get("event") == "committed":
                commits += [(e["t"], member, p, c) for p, c in e["offsets"]]
            elif e.get("event") == "processed":
                processing += [(e["t"], member, r[0], r[1]) for r in e["records"]]
    violations = []
    for t_commit, committer, partition, next_offset in commits:
        for t, member, p, offset in processing:
            if p == partition and offset < next_offset and t > t_commit:
                violations.append(
                    f"partition {p} offset {offset} processed by member {member} at {t:.3f}, "
                    f"after member {committer} committed {next_offset} at {t_commit:.3f}"
                )
    return violations


@pytest.mark.parametrize("client", ["confluent", "java", "java4"])
def test_members_leave_and_rebalance(target: BrokerProcess, client: Client) -> None:
    members_leave_and_rebalance(target, client)


def start_members(
    target: Bootstrapped, client: Client, topic: str, options: DriverOptions, members: list[LiveDriver]
) -> dict[tuple[int, int], str]:
    """Start the three members into ``members``: the first alone until it has processed and
    committed phase 0 (a record on every partition, returned), then the other two.

    Why: librdkafka (2.16) fetches partitions it no longer owns when a partition is revoked while
    its auto.offset.reset lookup is answered (``rd_kafka_toppar_handle_Offset`` treats the now
    outdated ListOffsets answer as an error and arms the offset query timer, whose next lookup
    starts fetching the unassigned partition); when the partition comes back, the records fetched
    meanwhile are handed to the application from the old position, committed ones included. Seen
    with three members joining at once, the first's initial lookups still under way when the
    others' arrival revoked its partitions. With committed offsets on every partition before the
    others join, no member ever looks an offset up (they fetch from the committed ones)."""
    phase0 = produce(target, topic, client, count=PARTITIONS)

    def member(i: int) -> LiveDriver:
        return LiveDriver(
            client,
            target.bootstrap,
            "group",
            topic=topic,
            timeout_s=MEMBER_TIMEOUT_S,
            options=options,
            name=f"member-{i}",
        )

    members.append(member(0))
    # The first member also waits for the coordinator to exist (see FIRST_SETTLE_TIMEOUT_S).
    assert wait_processed(members, set(phase0), FIRST_SETTLE_TIMEOUT_S), (
        f"member-0 alone did not process phase 0: {tail(members[0].events)}"
    )
    assert wait_committed(members, {p: o + 1 for p, o in phase0}), (
        f"member-0 alone did not commit phase 0: {tail(members[0].events)}"
    )
    members.extend(member(i) for i in (1, 2))
    return phase0


def members_leave_and_rebalance(
    target: Bootstrapped, client: Client, group_protocol: str = "classic", name: str = ""
) -> dict[tuple[int, int], str]:
    """The test of the module docstring with ``group.protocol`` = ``group_protocol``; returns what
    was produced. With the KIP-848 protocol the members that stay also keep every partition they
    had when the other left (only the leaver's partitions move: no stop-the-world rebalance)."""
    topic = group = name or f"rebalance-{client}"
    run_driver(
        client,
        target.bootstrap,
        "create",
        topic=topic,
        timeout_s=30.0,
        options=DriverOptions(partitions=PARTITIONS),
    ).check()

    options = DriverOptions(
        group=group, batch=BATCH, group_protocol=None if group_protocol == "classic" else group_protocol
    )
    members: list[LiveDriver] = []
    runs: list[DriverRun] = []
    try:
        phase0 = start_members(target, client, topic, options, members)
        assert members[0].wait_for(lambda _: settled(members, 0.0), FIRST_SETTLE_TIMEOUT_S), (
            f"three members did not settle: {[latest_assignment(m.events, 0.0) for m in members]}"
        )

        phase1 = produce(target, topic, client)
        assert wait_processed(members, set(phase1)), "phase 1 was not all processed"

        leaver = members[0]
        # The others may rebalance before the leaver's close() returns: count from the signal.
        t_left = time.monotonic()
        leaver.terminate()
        left = leaver.finish(20.0)
        assert left.returncode == 0 and [e["event"] for e in left.events][-2:] == ["closed", "done"], (
            left.describe()
        )
        remaining = members[1:]
        before = [latest_assignment(m.events, 0.0) or [] for m in remaining]
        assert remaining[0].wait_for(lambda _: settled(remaining, t_left), SETTLE_TIMEOUT_S), (
            f"two members did not settle after the leave (signalled at {t_left}): "
            f"{[latest_assignment(m.events, t_left) for m in remaining]}; their events since phase 1:\n"
            + "\n".join(f"{m.name}: {tail(m.events)}" for m in remaining)
        )

        phase2 = produce(target, topic, client)
        assert wait_processed(remaining, set(phase2)), "phase 2 was not all processed"
        ends = {p: max(o for q, o in phase2 if q == p) + 1 for p, _ in phase2}
        assert wait_committed(remaining, ends), f"the commits did not reach {ends}"

        t_end = time.monotonic()  # the members' own close() revokes everything after this
        for member in remaining:
            member.terminate()
        runs = [left, *(m.finish(20.0) for m in remaining)]
    finally:
        for member in members:
            member.kill()
    why = describe(runs)
    for run in runs:
        assert run.returncode == 0 and [e["event"] for e in run.events][-2:] == ["closed", "done"], why
        assert not [e for e in run.events if e.get("event") == "error"], why

    produced = {**phase0, **phase1, **phase2}
    assert len(produced) == len(phase0) + 2 * PHASE_RECORDS, "the phases share offsets"
    values: dict[tuple[int, int], set[str]] = defaultdict(set)
    for run in runs:
        for e in run.events:
            if e.get("event") == "processed":
                for p, o, v in e["records"]:
                    values[(p, o)].add(v)
    assert set(values) == set(produced), (
        f"missing {sorted(set(produced) - set(values))[:20]}, unexpected {sorted(set(values) - set(produced))[:20]}"
    )
    wrong = {k: v for k, v in values.items() if v != {produced[k]}}
    assert not wrong, f"values differ from those produced: {dict(list(wrong.items())[:10])}"

    violations = commit_violations(runs)
    assert not violations, "\n".join(violations[:5] + assignment_history(runs))

    # Per partition: commits only move forward and end at the partition's end offset.
    by_partition: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for run in runs:
        for e in run.events:
            if e.get("event") == "committed":
                for p, c in e["offsets"]:
                    by_partition[p].append((e["t"], c))
    for p in range(PARTITIONS):
        offsets = [c for _, c in sorted(by_partition[p])]
        assert offsets == sorted(offsets), f"partition {p}: commits went backwards: {offsets}"
        end = max(o for q, o in produced if q == p) + 1
        failed = [e for r in runs for e in r.events if e.get("event") == "commit_failed"]
        assert offsets and offsets[-1] == end, (
            f"partition {p}: last commit {offsets[-1:]} is not the end {end}; failed commits: {failed[-5:]}"
        )

    if group_protocol == "consumer":
        for member, had in zip(remaining, before, strict=True):
            for e in member.events:
                if e.get("event") == "assigned" and t_left < e["t"] < t_end:
                    assert set(had) <= set(e["partitions"]), (
                        f"{member.name} had {had} and lost some after the leave: {e}"
                    )

    # The work was shared in phase 1, and the leaver processed nothing after it left.
    for i, run in enumerate(runs):
        assert processed(run.events) & set(phase1), f"member {i} processed nothing in phase 1. {why}"
    assert not processed(runs[0].events) & set(phase2), why
    return produced


def test_commit_check_catches_reprocessing() -> None:
    """The checker itself: a record processed again after a commit covering it is reported, one
    processed again before any such commit is not."""

    def run(*events: Event) -> DriverRun:
        return DriverRun("confluent", 0, list(events))

    a = run(
        {"event": "processed", "records": [[0, 0, "v0"], [0, 1, "v1"]], "t": 1.0},
        {"event": "committed", "offsets": [[0, 2]], "t": 2.0},
    )
    again_after = run({"event": "processed", "records": [[0, 1, "v1"]], "t": 3.0})
    again_before = run({"event": "processed", "records": [[0, 1, "v1"]], "t": 1.5})
    assert len(commit_violations([a, again_after])) == 1
    assert commit_violations([a, again_before]) == []
