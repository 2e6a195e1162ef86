"""The classic group APIs and committed offsets: FindCoordinator, JoinGroup (the member id required
from v4, unknown members, a protocol type that does not match), SyncGroup, Heartbeat and
LeaveGroup with stale generations and unknown members, OffsetCommit and OffsetFetch (unknown
groups, generations, topic ids at the new versions).

Member ids are chosen by each broker: each broker's own is sent back to it, and compared as "a
member id" (:data:`GROUP_RULES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from tests.differential.compare import Rule, Side
from tests.differential.pair import Pair, Peer, poll

PROTOCOL: Final = JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta")


def _member(value: Any, side: Side) -> Any:
    return "<member id>" if value else value


#: Member ids are each broker's own (a client id and a UUID).
GROUP_RULES: Final = (
    Rule("member_id", _member, "each broker makes its own member ids"),
    Rule("leader", _member, "a member id"),
    Rule("members[].member_id", _member, "a member id"),
)


def coordinate(pair: Pair, group: str) -> None:
    """Wait until both brokers coordinate ``group``: they name themselves, and their coordinator
    answers for it (Kafka's answers NOT_COORDINATOR until it has loaded its offsets partition)."""
    for peer in (pair.kafka, pair.kafka_wire):

        def ready(peer: Peer = peer) -> bool:
            found = peer.request(FindCoordinatorRequest(key=group, key_type=0), 3)
            if found.error_code != ErrorCode.NONE:
                return False
            answer = peer.request(
                OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)]), 8
            )
            return answer.groups[0].error_code == ErrorCode.NONE

        poll(f"{peer.side.name} to coordinate {group}", ready, timeout_s=60)


@pytest.fixture(scope="module")
def coordinators(pair_module: Pair) -> None:
    """Both brokers coordinate groups (their offsets topic exists)."""
    coordinate(pair_module, "gr-probe")


@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_find_coordinator(pair: Pair, coordinators: None, version: int) -> None:
    request = FindCoordinatorRequest(key="gr-find", key_type=0)
    if version >= 4:
        request = FindCoordinatorRequest(key_type=0, coordinator_keys=["gr-find", "gr-other"])
    pair.check(request, version)


@dataclass
class Member:
    """One group member per broker: its member id and generation there."""

    group: str
    ids: dict[str, str] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)

    def each(self, make: Callable[[str, int], Any]) -> Callable[[Peer], Any]:
        return lambda peer: make(self.ids.get(peer.side.name, ""), self.generations.get(peer.side.name, -1))

    def learn(self, pair: Pair, answers: tuple[Any, Any]) -> None:
        for peer, answer in zip((pair.kafka, pair.kafka_wire), answers, strict=True):
            if answer.member_id:
                self.ids[peer.side.name] = answer.member_id
            if getattr(answer, "generation_id", -1) >= 0:
                self.generations[peer.side.name] = answer.generation_id


def join(
    member: Member, protocol_type: str = "consumer", member_id: str | None = None
) -> Callable[[Peer], Any]:
    def make(known: str, generation: int) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=member.group,
            session_timeout_ms=30_000,
            rebalance_timeout_ms=30_000,
            member_id=known if member_id is None else member_id,
            protocol_type=protocol_type,
            protocols=[PROTOCOL],
        )

    return member.each(make)


def sync(
    member: Member, *, generation_offset: int = 0, member_id: str | None = None, version: int = 5
) -> Callable[[Peer], Any]:
    def make(known: str, generation: int) -> SyncGroupRequest:
        who = known if member_id is None else member_id
        return SyncGroupRequest(
            group_id=member.group,
            generation_id=generation + generation_offset,
            member_id=who,
            protocol_type="consumer" if version >= 5 else None,
            protocol_name="range" if version >= 5 else None,
            assignments=[SyncGroupRequestAssignment(member_id=who, assignment=b"\x00\x01assigned")],
        )

    return member.each(make)


def heartbeat(
    member: Member, *, generation_offset: int = 0, member_id: str | None = None
) -> Callable[[Peer], Any]:
    return member.each(
        lambda known, generation: HeartbeatRequest(
            group_id=member.group,
            generation_id=generation + generation_offset,
            member_id=known if member_id is None else member_id,
        )
    )


def joined(pair: Pair, member: Member, version: int) -> None:
    """Join ``member`` (twice from v4: the first answer hands out the member id) and sync."""
    coordinate(pair, member.group)
    answers = pair.check_each(join(member), version, GROUP_RULES)
    member.learn(pair, answers)
    if version >= 4:
        assert answers[0].error_code == ErrorCode.MEMBER_ID_REQUIRED
        answers = pair.check_each(join(member), version, GROUP_RULES)
        member.learn(pair, answers)
    assert answers[0].error_code == ErrorCode.NONE
    pair.check_each(sync(member, version=min(version, 5)), min(version, 5), GROUP_RULES)


@pytest.mark.parametrize("version", [0, 3, 4, 5, 9])
def test_join_sync_heartbeat_leave(pair: Pair, coordinators: None, version: int) -> None:
    member = Member(f"gr-life-{version}")
    joined(pair, member, version)
    heartbeat_version = min(version, 4)
    pair.check_each(heartbeat(member), heartbeat_version)
    pair.check_each(heartbeat(member, generation_offset=-1), heartbeat_version)  # stale
    pair.check_each(heartbeat(member, generation_offset=1), heartbeat_version)  # from the future
    pair.check_each(heartbeat(member, member_id="kw-unknown-member"), heartbeat_version)
    leave_version = min(version, 5)
    if leave_version >= 3:
        leave = member.each(
            lambda known, _: LeaveGroupRequest(
                group_id=member.group,
                members=[
                    LeaveGroupRequestMemberIdentity(member_id="kw-unknown-member"),
                    LeaveGroupRequestMemberIdentity(member_id=known),
                ],
            )
        )
    else:
        leave = member.each(lambda known, _: LeaveGroupRequest(group_id=member.group, member_id=known))
    pair.check_each(leave, leave_version, GROUP_RULES)
    pair.check_each(heartbeat(member), heartbeat_version)  # gone


@pytest.mark.parametrize("version", [4, 9])
def test_join_refusals(pair: Pair, coordinators: None, version: int) -> None:
    """A member id the group does not know, then a protocol type the group does not use."""
    member = Member(f"gr-refused-{version}")
    coordinate(pair, member.group)
    pair.check_each(join(member, member_id="kw-not-a-member"), version, GROUP_RULES)
    joined(pair, member, version)
    other = Member(member.group)
    pair.check_each(join(other, protocol_type="connect"), version, GROUP_RULES)


@pytest.mark.parametrize("version", [3, 5])
def test_sync_refusals(pair: Pair, coordinators: None, version: int) -> None:
    member = Member(f"gr-sync-{version}")
    joined(pair, member, 5)
    pair.check_each(sync(member, generation_offset=-1, version=version), version, GROUP_RULES)
    pair.check_each(sync(member, member_id="kw-unknown-member", version=version), version, GROUP_RULES)
    if version >= 5:

        def other_protocol(peer: Peer) -> SyncGroupRequest:
            request: SyncGroupRequest = sync(member, version=version)(peer)
            request.protocol_type = "connect"
            return request

        pair.check_each(other_protocol, version, GROUP_RULES)


def test_heartbeat_unknown_group(pair: Pair, coordinators: None) -> None:
    coordinate(pair, "gr-nobody")
    pair.check(HeartbeatRequest(group_id="gr-nobody", generation_id=1, member_id="kw-unknown-member"), 4)


# -- offsets --------------------------------------------------------------------------------------

TOPIC: Final = "gr-offsets"


@pytest.fixture(scope="module")
def offsets_topic(pair_module: Pair) -> None:
    pair_module.create_topic(TOPIC, 2)


def commit(
    group: str, *, generation: int = -1, member_id: str = "", topic_id: Any = None, offset: int = 5
) -> OffsetCommitRequest:
    data = OffsetCommitRequestTopic(
        name=TOPIC if topic_id is None else "",
        partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=offset, committed_metadata="m"),
            OffsetCommitRequestPartition(
                partition_index=1, committed_offset=offset + 1, committed_leader_epoch=0
            ),
            OffsetCommitRequestPartition(partition_index=9, committed_offset=1),
        ],
    )
    if topic_id is not None:
        data.topic_id = topic_id
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, topics=[data]
    )


def fetch_offsets(group: str, version: int, topic_id: Any = None) -> OffsetFetchRequest:
    if version < 8:
        return OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0, 1, 9])]
        )
    topics = OffsetFetchRequestTopics(name=TOPIC if topic_id is None else "", partition_indexes=[0, 1, 9])
    if topic_id is not None:
        topics.topic_id = topic_id
    return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[topics])])


@pytest.mark.parametrize("version", [2, 7, 9, 10])
def test_offsets_of_a_simple_group(pair: Pair, coordinators: None, offsets_topic: None, version: int) -> None:
    """Commits of a group without members (generation -1), then what OffsetFetch says (v1, v7, v8,
    v10); an unknown group's offsets; an unknown topic id."""
    group = f"gr-simple-{version}"
    coordinate(pair, group)
    ids = pair.topic_ids(TOPIC)
    fetch_version = {2: 1, 7: 7, 9: 8, 10: 10}[version]

    def by_id(make: Callable[[Any], Any]) -> Callable[[Peer], Any]:
        return lambda peer: make(ids[peer.side.name] if version >= 10 else None)

    pair.check_each(by_id(lambda topic_id: fetch_offsets(group, fetch_version, topic_id)), fetch_version)
    pair.check_each(by_id(lambda topic_id: commit(group, topic_id=topic_id)), version)
    pair.check_each(by_id(lambda topic_id: fetch_offsets(group, fetch_version, topic_id)), fetch_version)
    pair.check_each(
        by_id(lambda topic_id: commit(group, topic_id=topic_id, generation=3, member_id="kw-unknown-member")),
        version,
    )


@pytest.mark.parametrize("version", [2, 9])
def test_offsets_of_a_member(pair: Pair, coordinators: None, offsets_topic: None, version: int) -> None:
    """A member commits in its generation, in a stale one, and as a member the group lacks."""
    member = Member(f"gr-member-{version}")
    joined(pair, member, 5)
    for generation_offset, who in ((0, None), (-1, None), (0, "kw-unknown-member")):

        def make(
            known: str, generation: int, g: int = generation_offset, w: str | None = who
        ) -> OffsetCommitRequest:
            return commit(member.group, generation=generation + g, member_id=known if w is None else w)

        pair.check_each(member.each(make), version, GROUP_RULES)
    pair.check(fetch_offsets(member.group, 8), 8)
