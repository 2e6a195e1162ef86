"""The classic group protocol's requests: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and
what the coordinator does once the writes they caused are stored or refused.

Each handler answers through the runtime (``Respond`` effects) or holds the request in the member
(``Member.join`` / ``Member.sync``) until the rebalance (``rebalance``) answers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.group.model import (
    Group,
    Member,
    Waiter,
    dedupe_protocols,
    inconsistent,
    join_error,
    join_response,
    metadata_value,
)
from kafka_wire.broker.group.persistence import (
    AssignmentStored,
    GroupCreated,
    GroupPersistence,
    StaticMemberReplaced,
)
from kafka_wire.broker.group.rebalance import Rebalance
from kafka_wire.broker.group.records import group_metadata_record
from kafka_wire.broker.group.runtime import HEARTBEAT, JOIN, SYNC, GroupRuntime, timer_key
from kafka_wire.broker.group.states import GroupInput, GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        JoinGroupRequest,
        LeaveGroupResponseMemberResponse,
    )

E = ErrorCode


class Membership:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the outcomes of their writes."""

    def __init__(self, rt: GroupRuntime, persistence: GroupPersistence, rebalance: Rebalance) -> None:
        self._rt = rt
        self._persistence = persistence
        self._rebalance = rebalance

    def creation_failed(self, write: GroupCreated, error: int, *, revert: bool = True) -> None:
        """A new group's first record failed: the join that created it fails (unless it was
        answered already). Refused (``revert``), the group is forgotten, member ids handed out
        with MEMBER_ID_REQUIRED included (Kafka reverts to before the group existed), unless a
        member or an offset holds it by now; appended but not stored in time, the group stays
        (its record may yet be stored), and so does the member, as a member that did not rejoin."""
        group = self._rt.groups.get(write.group_id)
        if group is None:
            return
        member = next((m for m in group.members.values() if m.join is write.waiter), None)
        if member is not None:
            member.join = None
            self._rt.respond(write.waiter, join_error(write.waiter.api_version, error, ""))
            if revert:
                self._rebalance.remove_member(group, member.member_id)
        if revert and not group.members and not group.offsets:
            for member_id in list(group.pending_join):
                self._rebalance.remove_member(group, member_id)
            self._rt.cancel(timer_key(JOIN, group.group_id))
            self._rt.cancel(timer_key(SYNC, group.group_id))
            del self._rt.groups[group.group_id]

    def assignment_written(self, write: AssignmentStored, error: int) -> None:
        group = self._rt.groups.get(write.group_id)
        if (
            group is None
            or group.state is not GroupState.COMPLETING_REBALANCE
            or group.generation != write.generation
        ):
            return  # the group moved on meanwhile (Kafka's callback makes the same check)
        if not error:
            for member_id, member in group.members.items():
                member.assignment = write.assignments.get(member_id, b"")
            self._rt.transition(group, GroupInput.STORE_ASSIGNMENT)
            self._rebalance.propagate_assignment(group, E.NONE)
            return
        for member in group.members.values():
            member.assignment = b""
        self._rebalance.propagate_assignment(group, error)
        self._rebalance.maybe_prepare_rebalance_or_complete_join(group)

    def static_member_written(self, write: StaticMemberReplaced, error: int) -> None:
        group = self._rt.groups.get(write.group_id)
        member = None if group is None else group.members.get(write.new_id)
        if group is None or member is None or member.join is not write.waiter:
            return  # superseded meanwhile
        if not error:
            if write.waiter.api_version >= 9:
                is_leader = group.leader_id == write.new_id
                self._rebalance.join_answer(group, member, with_members=is_leader, skip=is_leader)
            else:
                # Older clients must not think they lead: name the old leader id.
                self._rebalance.join_answer(
                    group, member, with_members=False, leader=write.previous_leader or ""
                )
            return
        # Put the old member id back (Kafka: "Reverting to old member id").
        old = write.old
        old.join = old.sync = None
        member.join = None
        del group.members[write.new_id]
        group.members[old.member_id] = old
        if old.group_instance_id is not None:
            group.static_members[old.group_instance_id] = old.member_id
        if group.leader_id == write.new_id:
            group.leader_id = old.member_id
        if write.new_id in group.pending_sync:
            del group.pending_sync[write.new_id]
            group.pending_sync[old.member_id] = None
        self._rt.cancel(timer_key(HEARTBEAT, group.group_id, write.new_id))
        self._rt.arm_heartbeat(group, old, old.session_timeout_ms)
        self._rt.respond(
            write.waiter,
            join_response(
                write.waiter.api_version,
                error=error,
                generation=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=write.previous_leader,
            ),
        )

    def join(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.JoinGroupRequest)
        v = waiter.api_version
        member_id = request.member_id
        config = self._rt.config
        if not request.group_id:
            self._rt.respond(waiter, join_error(v, E.INVALID_GROUP_ID, member_id))
            return
        if not config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms:
            self._rt.respond(waiter, join_error(v, E.INVALID_SESSION_TIMEOUT, member_id))
            return
        group = self._rt.groups.get(request.group_id)
        if group is not None:
            self.join_group(waiter, request, group, client_id, client_host)
            return
        if member_id:
            self._rt.respond(waiter, join_error(v, E.UNKNOWN_MEMBER_ID, member_id))
            return
        group = self._rt.create_group(request.group_id)
        # The new group's first record is written after the join's own work, as Kafka does.
        record = group_metadata_record(group.group_id, metadata_value(group))
        self.join_group(waiter, request, group, client_id, client_host)
        self._persistence.persist(group.group_id, [record], GroupCreated(group.group_id, waiter))

    def join_group(
        self, waiter: Waiter, request: JoinGroupRequest, group: Group, client_id: str, client_host: str
    ) -> None:
        v = waiter.api_version
        member_id = request.member_id
        instance_id = request.group_instance_id if v >= 5 else None
        rebalance_timeout = request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms
        protocols = dedupe_protocols(request)
        if not self._rebalance.accept_joining(group, member_id):
            self._rebalance.remove_member(group, member_id)
            self._rt.respond(waiter, join_error(v, E.GROUP_MAX_SIZE_REACHED, ""))
            return
        names = [name for name, _ in protocols]
        if not self._rebalance.supports_protocols(group, request.protocol_type, names):
            self._rt.respond(waiter, join_error(v, E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return

        def new_member(new_id: str) -> Member:
            return Member(
                new_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                request.session_timeout_ms,
                request.protocol_type,
                protocols,
                join=waiter,
                is_new=True,
            )

        if not member_id:
            new_id = self._rt.new_member_id(group, instance_id if instance_id is not None else client_id)
            if instance_id is not None:
                existing = group.static_members.get(instance_id)
                if existing is not None:
                    self.replace_static_member(
                        group, existing, new_id, protocols, rebalance_timeout, request, waiter
                    )
                else:
                    self.add_member_and_rebalance(group, new_member(new_id))
            elif v >= 4:
                group.pending_join[new_id] = None
                self._rt.schedule(timer_key(HEARTBEAT, group.group_id, new_id), request.session_timeout_ms)
                self._rt.respond(waiter, join_error(v, E.MEMBER_ID_REQUIRED, new_id))
            else:
                self.add_member_and_rebalance(group, new_member(new_id))
            return

        if member_id in group.pending_join and instance_id is None:
            self.add_member_and_rebalance(group, new_member(member_id))
            return
        error = self._rebalance.validate_member(group, member_id, instance_id)
        if error is not None:
            self._rt.respond(waiter, join_error(v, error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._rebalance.update_member(
                member, protocols, rebalance_timeout, request.session_timeout_ms, waiter
            )
            self._rebalance.maybe_prepare_rebalance_or_complete_join(group)
        elif state is GroupState.COMPLETING_REBALANCE or state is GroupState.STABLE:
            unchanged = member.protocols == protocols
            is_leader = member_id == group.leader_id
            if unchanged and (state is GroupState.COMPLETING_REBALANCE or not is_leader):
                if member.join is not None:
                    self._rt.respond(
                        member.join, join_error(member.join.api_version, E.REBALANCE_IN_PROGRESS, member_id)
                    )
                member.join = waiter
                self._rebalance.join_answer(
                    group, member, with_members=is_leader and state is GroupState.COMPLETING_REBALANCE
                )
            else:
                self._rebalance.update_member(
                    member, protocols, rebalance_timeout, request.session_timeout_ms, waiter
                )
                self._rebalance.maybe_prepare_rebalance_or_complete_join(group)
        else:
            self._rt.respond(waiter, join_error(v, E.UNKNOWN_MEMBER_ID, member_id))

    def add_member_and_rebalance(self, group: Group, member: Member) -> None:
        if group.state is GroupState.PREPARING_REBALANCE and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True
        self._rebalance.add_member(group, member)
        self._rt.arm_heartbeat(group, member, self._rt.config.new_member_join_timeout_ms)
        self._rebalance.maybe_prepare_rebalance_or_complete_join(group)

    def replace_static_member(
        self,
        group: Group,
        old_id: str,
        new_id: str,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout: int,
        request: JoinGroupRequest,
        waiter: Waiter,
    ) -> None:
        """A static member came back with no member id: it takes over its old entry, fencing it."""
        previous_leader = group.leader_id
        old = group.members.pop(old_id)
        if old.join is not None:
            self._rt.respond(old.join, join_error(old.join.api_version, E.FENCED_INSTANCE_ID, old_id))
        if old.sync is not None:
            self._rt.respond(old.sync, messages.SyncGroupResponse(error_code=E.FENCED_INSTANCE_ID))
        self._rt.cancel(timer_key(HEARTBEAT, group.group_id, old_id))
        member = Member(
            new_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        group.members[new_id] = member
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old.group_instance_id is not None:
            group.static_members[old.group_instance_id] = new_id
        if old_id in group.pending_sync:
            del group.pending_sync[old_id]
            group.pending_sync[new_id] = None
        self._rt.arm_heartbeat(group, member, member.session_timeout_ms)
        self._rebalance.update_member(
            member, protocols, rebalance_timeout, request.session_timeout_ms, waiter
        )
        if group.state is GroupState.STABLE:
            if group.protocol_name == self._rebalance.select_protocol(group):
                # Same protocol: no rebalance. Store the new member id, then answer.
                self._persistence.persist_group(
                    group, StaticMemberReplaced(group.group_id, old, new_id, previous_leader, waiter)
                )
            else:
                self._rebalance.maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._rebalance.prepare_rebalance(group)
        else:
            self._rebalance.maybe_complete_join_phase(group)

    def sync(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.SyncGroupRequest)
        v = waiter.api_version
        group = self._rt.groups.get(request.group_id)
        if group is None or group.state is GroupState.EMPTY:
            self._rt.respond(waiter, messages.SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
            return
        member_id = request.member_id
        error = self._rebalance.validate_member(
            group, member_id, request.group_instance_id if v >= 3 else None
        )
        if error is None and request.generation_id != group.generation:
            error = E.ILLEGAL_GENERATION
        if (
            error is None
            and v >= 5
            and (
                inconsistent(request.protocol_type, group.protocol_type)
                or inconsistent(request.protocol_name, group.protocol_name)
            )
        ):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is None and group.state is GroupState.PREPARING_REBALANCE:
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            self._rt.respond(waiter, messages.SyncGroupResponse(error_code=error))
            return
        member = group.members[member_id]
        if group.state is GroupState.STABLE:
            self._rebalance.remove_pending_sync(group, member_id)
            self._rt.respond(
                waiter,
                messages.SyncGroupResponse(
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
            )
            return
        # COMPLETING_REBALANCE
        if member.sync is not None:
            self._rt.respond(member.sync, messages.SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
        member.sync = waiter
        self._rebalance.remove_pending_sync(group, member_id)
        if member_id != group.leader_id:
            return
        given = {a.member_id: a.assignment for a in request.assignments}
        # Members the leader left out get an empty assignment (Kafka does the same).
        assignments = {m: given.get(m, b"") for m in group.members}
        value = metadata_value(group, assignments, state_timestamp_ms=self._rt.clock)
        self._persistence.persist(
            group.group_id,
            [group_metadata_record(group.group_id, value)],
            AssignmentStored(group.group_id, group.generation, assignments),
        )

    def heartbeat(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.HeartbeatRequest)
        group = self._rt.groups.get(request.group_id)
        if group is None:
            self._rt.respond(waiter, messages.HeartbeatResponse(error_code=E.UNKNOWN_MEMBER_ID))
            return
        instance_id = request.group_instance_id if waiter.api_version >= 3 else None
        error = self._rebalance.validate_member(group, request.member_id, instance_id)
        if error is None and request.generation_id != group.generation:
            error = E.ILLEGAL_GENERATION
        if error is None:
            if group.state is GroupState.EMPTY:
                error = E.UNKNOWN_MEMBER_ID
            else:
                self._rt.arm_heartbeat(
                    group,
                    group.members[request.member_id],
                    group.members[request.member_id].session_timeout_ms,
                )
                if group.state is GroupState.PREPARING_REBALANCE:
                    error = E.REBALANCE_IN_PROGRESS
        self._rt.respond(waiter, messages.HeartbeatResponse(error_code=error or E.NONE))

    def leave(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.LeaveGroupRequest)
        v = waiter.api_version
        identities = (
            request.members
            if v >= 3
            else [messages.LeaveGroupRequestMemberIdentity(member_id=request.member_id)]
        )
        top = E.NONE
        answers: list[LeaveGroupResponseMemberResponse] = []
        group = self._rt.groups.get(request.group_id)
        if not request.group_id:
            top = E.INVALID_GROUP_ID
        elif group is None:
            top = E.UNKNOWN_MEMBER_ID
        else:
            left = False
            for identity in identities:
                member_id, instance_id = identity.member_id, identity.group_instance_id
                error: ErrorCode | None = None
                if not member_id:
                    static_id = None if instance_id is None else group.static_members.get(instance_id)
                    if static_id is None:
                        error = E.UNKNOWN_MEMBER_ID
                    else:
                        self._rebalance.remove_member(group, static_id)
                elif member_id in group.pending_join:
                    self._rebalance.remove_member(group, member_id)
                else:
                    error = self._rebalance.validate_member(group, member_id, instance_id)
                    if error is None:
                        self._rebalance.remove_member(group, member_id)
                left = left or error is None
                answers.append(
                    messages.LeaveGroupResponseMemberResponse(
                        member_id=member_id, group_instance_id=instance_id, error_code=error or E.NONE
                    )
                )
            if left:
                if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                    self._rebalance.maybe_prepare_rebalance_or_complete_join(group)
                elif group.state is GroupState.PREPARING_REBALANCE:
                    self._rebalance.maybe_complete_join_phase(group)
        if v >= 3:
            self._rt.respond(waiter, messages.LeaveGroupResponse(error_code=top, members=answers))
        else:
            first = next((a.error_code for a in answers if a.error_code != E.NONE), E.NONE)
            self._rt.respond(waiter, messages.LeaveGroupResponse(error_code=top or first))
