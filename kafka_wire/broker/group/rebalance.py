"""The classic rebalance protocol's machinery: members in and out, join and sync phases.

What Kafka's ``GroupMetadataManager`` does for a ``ClassicGroup`` between requests: adding and
removing members (answering what they wait for), preparing a rebalance, completing the join
phase (electing a leader, choosing the protocol, answering every JoinGroup), handing out the
leader's assignment and expiring members whose session or sync deadline passed. The request
handlers that drive it are in ``membership``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.group.model import (
    Group,
    Member,
    Waiter,
    candidates,
    join_error,
    join_response,
    subscribed_topics,
)
from kafka_wire.broker.group.persistence import GroupEmptied, GroupPersistence
from kafka_wire.broker.group.runtime import HEARTBEAT, JOIN, SYNC, GroupRuntime, timer_key
from kafka_wire.broker.group.states import GroupInput, GroupState, can_rebalance
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        JoinGroupResponseMember,
    )

E = ErrorCode


class Rebalance:
    """Membership changes and the rebalance phases of every group."""

    def __init__(self, rt: GroupRuntime, persistence: GroupPersistence) -> None:
        self._rt = rt
        self._persistence = persistence

    def validate_member(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        return None

    def supports_protocols(self, group: Group, protocol_type: str, names: Sequence[str]) -> bool:
        if group.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if group.protocol_type != protocol_type:
            return False
        common = candidates(group)
        return any(name in common for name in names)

    def add_member(self, group: Group, member: Member) -> None:
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if not group.members:
            group.protocol_type = member.protocol_type
        if group.leader_id is None:
            group.leader_id = member.member_id
        group.members[member.member_id] = member
        group.pending_join.pop(member.member_id, None)

    def remove_member(self, group: Group, member_id: str) -> None:
        """Drop a member (or pending member) and everything keyed by it; answer what it awaits."""
        member = group.members.pop(member_id, None)
        if member is not None:
            instance_id = member.group_instance_id
            if instance_id is not None and group.static_members.get(instance_id) == member_id:
                del group.static_members[instance_id]
            if member.join is not None:
                self._rt.respond(member.join, join_error(member.join.api_version, E.UNKNOWN_MEMBER_ID, ""))
                member.join = None
            if member.sync is not None:
                self._rt.respond(member.sync, messages.SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
                member.sync = None
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)
        group.pending_join.pop(member_id, None)
        group.pending_sync.pop(member_id, None)
        self._rt.cancel(timer_key(HEARTBEAT, group.group_id, member_id))

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: Waiter,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if member.join is not None:
            # A second JoinGroup replaces the first; Kafka leaves the first unanswered.
            self._rt.respond(
                member.join, join_error(member.join.api_version, E.REBALANCE_IN_PROGRESS, member.member_id)
            )
        member.join = waiter

    def select_protocol(self, group: Group) -> str:
        common = candidates(group)
        votes: dict[str, int] = {}
        for member in group.members.values():
            vote = next((name for name in member.names() if name in common), None)
            if vote is None:
                raise LocalProtocolError(
                    f"member {member.member_id} supports no protocol of group {group.group_id}"
                )
            votes[vote] = votes.get(vote, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def current_members(self, group: Group) -> list[JoinGroupResponseMember]:
        return [
            messages.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(group.protocol_name),
            )
            for m in group.members.values()
        ]

    def join_answer(
        self,
        group: Group,
        member: Member,
        *,
        with_members: bool,
        leader: str | None = None,
        skip: bool = False,
    ) -> None:
        waiter = member.join
        if waiter is None:
            return
        member.join = None
        self._rt.respond(
            waiter,
            join_response(
                waiter.api_version,
                generation=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id if leader is None else leader,
                member_id=member.member_id,
                members=self.current_members(group) if with_members else [],
                skip=skip,
            ),
        )

    def maybe_prepare_rebalance_or_complete_join(self, group: Group) -> None:
        if can_rebalance(group.state):
            self.prepare_rebalance(group)
        else:
            self.maybe_complete_join_phase(group)

    def maybe_complete_join_phase(self, group: Group) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.previous_state is not GroupState.EMPTY
            and group.all_joined()
        ):
            self.complete_join(group)

    def prepare_rebalance(self, group: Group) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self.propagate_assignment(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        self._rt.cancel(timer_key(SYNC, group.group_id))
        initial = group.state is GroupState.EMPTY
        if initial:
            delay = self._rt.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._rt.schedule(timer_key(JOIN, group.group_id), delay, (delay, remaining))
        self._rt.transition(group, GroupInput.PREPARE_REBALANCE)
        if not initial:
            if group.all_joined():
                self.complete_join(group)
            else:
                self._rt.schedule(timer_key(JOIN, group.group_id), group.rebalance_timeout_ms())

    def try_complete_initial_rebalance(self, group: Group, delay_ms: int, remaining_ms: int) -> None:
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self._rt.config.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._rt.schedule(timer_key(JOIN, group.group_id), new_delay, (new_delay, new_remaining))
        else:
            self.complete_join(group)

    def complete_join(self, group: Group) -> None:
        self._rt.cancel(timer_key(JOIN, group.group_id))
        for member in list(group.members.values()):
            if member.join is None and member.group_instance_id is None:
                self.remove_member(group, member.member_id)
        if not self.maybe_elect_joined_leader(group) and group.members:
            # Only static members that have not rejoined are left: wait for them.
            self._rt.schedule(timer_key(JOIN, group.group_id), max(group.rebalance_timeout_ms(), 1))
            return
        group.generation += 1
        if group.members:
            group.protocol_name = self.select_protocol(group)
            group.subscribed_topics = subscribed_topics(group)
            self._rt.transition(group, GroupInput.COMPLETE_JOIN)
        else:
            group.protocol_name = None
            group.subscribed_topics = subscribed_topics(group)
            self._rt.transition(group, GroupInput.COMPLETE_JOIN_EMPTY)
        group.pending_sync.clear()
        if group.state is GroupState.EMPTY:
            self._persistence.persist_group(group, GroupEmptied(group.group_id))
            return
        for member in group.members.values():
            self.join_answer(group, member, with_members=member.member_id == group.leader_id)
            self._rt.arm_heartbeat(group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        self._rt.schedule(timer_key(SYNC, group.group_id), group.rebalance_timeout_ms(), (group.generation,))

    def maybe_elect_joined_leader(self, group: Group) -> bool:
        if group.leader_id is None:
            return False
        if group.members[group.leader_id].join is not None:
            return True
        for member in group.members.values():
            if member.join is not None:
                group.leader_id = member.member_id
                return True
        return False

    def propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == E.NONE
        for member in group.members.values():
            waiter = member.sync
            if waiter is None:
                continue
            member.sync = None
            self._rt.respond(
                waiter,
                messages.SyncGroupResponse(
                    error_code=error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=member.assignment,
                ),
            )
            self._rt.arm_heartbeat(group, member, member.session_timeout_ms)

    def remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync or group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            self._rt.cancel(timer_key(SYNC, group.group_id))

    def expire_heartbeat(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_join:
            del group.pending_join[member_id]
            if group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
                self.complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.join is not None or member.sync is not None):
            return  # a member awaiting a rebalance answer satisfies its heartbeat
        self.remove_member(group, member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
            self.complete_join(group)

    def expire_pending_sync(self, group: Group, generation: int) -> None:
        if generation != group.generation or not group.pending_sync:
            return
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            for member_id in list(group.pending_sync):
                self.remove_member(group, member_id)
            self.prepare_rebalance(group)

    def accept_joining(self, group: Group, member_id: str) -> bool:
        limit = self._rt.config.max_group_size
        if group.state is GroupState.EMPTY:
            return True
        if group.state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.join is not None) or group.awaiting_join() < limit
        return member_id in group.members or len(group.members) < limit
