"""The server-side assignors, over random groups: every subscribed partition goes to exactly one
member subscribed to its topic, ``uniform`` balances members of one subscription to within one
partition and keeps what members had, ``range`` gives each member its quota of every topic."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.broker.group.assignors import ASSIGNORS, AssignorMember, range_, uniform
from kafka_wire.broker.group.consumer_records import Partitions

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]

groups = st.fixed_dictionaries(
    {
        "counts": st.lists(st.integers(0, 12), min_size=4, max_size=4),
        "members": st.dictionaries(
            st.text("abcdef", min_size=1, max_size=3),
            st.sets(st.sampled_from(TOPICS), min_size=1),
            max_size=6,
        ),
    }
)


def _members(
    subscriptions: dict[str, set[uuid.UUID]], current: dict[str, Partitions] | None = None
) -> dict[str, AssignorMember]:
    return {m: AssignorMember(frozenset(ts), (current or {}).get(m, {})) for m, ts in subscriptions.items()}


def _owners(target: dict[str, Partitions]) -> dict[tuple[uuid.UUID, int], list[str]]:
    owners: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member, partitions in target.items():
        for topic_id, numbers in partitions.items():
            for p in numbers:
                owners.setdefault((topic_id, p), []).append(member)
    return owners


@given(groups)
def test_every_partition_has_one_subscribed_owner(group: dict[str, object]) -> None:
    counts: list[int] = group["counts"]  # type: ignore[assignment]  # the strategy's shape
    subscriptions: dict[str, set[uuid.UUID]] = group["members"]  # type: ignore[assignment]  # idem
    topics = dict(zip(TOPICS, counts, strict=True))
    for assign in ASSIGNORS.values():
        target = assign(_members(subscriptions), topics)
        owners = _owners(target)
        wanted = {
            (t, p) for t in TOPICS for p in range(topics[t]) if any(t in s for s in subscriptions.values())
        }
        assert set(owners) == wanted
        for (topic_id, _), members in owners.items():
            assert len(members) == 1 and topic_id in subscriptions[members[0]]


@given(groups)
def test_uniform_balances_one_subscription_and_stays_sticky(group: dict[str, object]) -> None:
    counts: list[int] = group["counts"]  # type: ignore[assignment]  # the strategy's shape
    names: list[str] = sorted(group["members"])  # type: ignore[call-overload]  # idem
    topics = dict(zip(TOPICS, counts, strict=True))
    same = {m: set(TOPICS[:2]) for m in names}
    first = uniform(_members(same), topics)
    sizes = [sum(len(ps) for ps in first[m].values()) for m in names]
    assert not sizes or max(sizes) - min(sizes) <= 1
    if len(names) < 2:
        return
    # One member leaves: the others keep everything they had.
    rest = names[1:]
    second = uniform(_members({m: same[m] for m in rest}, first), topics)
    for m in rest:
        for topic_id, numbers in first[m].items():
            assert set(numbers) <= set(second[m].get(topic_id, ()))


def test_range_gives_contiguous_quotas_in_member_order() -> None:
    t = TOPICS[0]
    target = range_(_members({"b": {t}, "a": {t}, "c": {t}}), {t: 7})
    assert target == {"a": {t: (0, 1, 2)}, "b": {t: (3, 4)}, "c": {t: (5, 6)}}
