"""The server-side assignors of KIP-848 consumer groups (``group.consumer.assignors``): pure
functions from the members' subscriptions and the topics to a target assignment.

* ``uniform`` (the default): every partition of the subscribed topics goes to one of the members
  subscribed to its topic, the counts differ by at most one among members of the same
  subscription, and a member keeps what it had as far as balance allows (sticky), so that a
  member that leaves moves only its own partitions.
* ``range``: topic by topic, the members subscribed to it get ``n // m`` partitions each, the
  first ``n % m`` (by member id) one more; a member keeps the partitions of the topic it had up
  to its quota, and the rest go out in partition order to the members short of theirs.

The results are deterministic: members are taken in member id order, partitions in topic id and
partition order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from kafka_wire.broker.group.consumer_records import Partitions

UNIFORM: Final = "uniform"
RANGE: Final = "range"


@dataclass(frozen=True, slots=True)
class AssignorMember:
    #: The topics (by id) the member subscribes to that exist.
    topics: frozenset[uuid.UUID]
    #: Its current target assignment.
    current: Partitions


#: ``(members by id, partition count of every subscribed topic by id) -> target by member id``.
Assignor = Callable[[Mapping[str, AssignorMember], Mapping[uuid.UUID, int]], dict[str, Partitions]]

_Slot = tuple[uuid.UUID, int]


def _as_partitions(slots: list[_Slot]) -> Partitions:
    out: dict[uuid.UUID, list[int]] = {}
    for topic_id, p in sorted(slots):
        out.setdefault(topic_id, []).append(p)
    return {topic_id: tuple(ps) for topic_id, ps in out.items()}


def uniform(members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    order = sorted(members)
    owned: dict[str, list[_Slot]] = {m: [] for m in order}
    taken: set[_Slot] = set()
    # Sticky: keep what is still valid, then fill up the least loaded eligible member.
    for m in order:
        member = members[m]
        for topic_id, partitions in sorted(member.current.items()):
            if topic_id not in member.topics:
                continue
            for p in partitions:
                if p < topics.get(topic_id, 0) and (topic_id, p) not in taken:
                    taken.add((topic_id, p))
                    owned[m].append((topic_id, p))
    for topic_id in sorted(topics):
        eligible = [m for m in order if topic_id in members[m].topics]
        for p in range(topics[topic_id]):
            if (topic_id, p) in taken or not eligible:
                continue
            best = min(eligible, key=lambda m: len(owned[m]))
            owned[best].append((topic_id, p))
            taken.add((topic_id, p))
    _balance(members, owned, order)
    return {m: _as_partitions(owned[m]) for m in order}


def _balance(members: Mapping[str, AssignorMember], owned: dict[str, list[_Slot]], order: list[str]) -> None:
    """Move partitions from the most loaded members to eligible members two or more behind, the
    last taken first (those a member had kept stay longest)."""
    moved = True
    while moved:
        moved = False
        for giver in sorted(order, key=lambda m: (-len(owned[m]), m)):
            for taker in sorted(order, key=lambda m: (len(owned[m]), m)):
                if len(owned[giver]) <= len(owned[taker]) + 1:
                    break
                movable = [s for s in owned[giver] if s[0] in members[taker].topics]
                if movable:
                    slot = movable[-1]
                    owned[giver].remove(slot)
                    owned[taker].append(slot)
                    moved = True
                    break
            if moved:
                break


def range_(members: Mapping[str, AssignorMember], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    order = sorted(members)
    owned: dict[str, list[_Slot]] = {m: [] for m in order}
    for topic_id in sorted(topics):
        count = topics[topic_id]
        subscribed = [m for m in order if topic_id in members[m].topics]
        if not subscribed:
            continue
        base, extra = divmod(count, len(subscribed))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(subscribed)}
        taken: set[int] = set()
        got: dict[str, list[int]] = {m: [] for m in subscribed}
        for m in subscribed:
            for p in members[m].current.get(topic_id, ()):
                if p < count and p not in taken and len(got[m]) < quota[m]:
                    taken.add(p)
                    got[m].append(p)
        free = [p for p in range(count) if p not in taken]
        for m in subscribed:
            while len(got[m]) < quota[m] and free:
                got[m].append(free.pop(0))
        for m in subscribed:
            owned[m] += [(topic_id, p) for p in got[m]]
    return {m: _as_partitions(owned[m]) for m in order}


#: The assignors by the names clients ask for (``group.remote.assignor``).
ASSIGNORS: Final[dict[str, Assignor]] = {UNIFORM: uniform, RANGE: range_}
