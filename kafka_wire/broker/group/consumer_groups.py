"""KIP-848 consumer groups: ConsumerGroupHeartbeat, member expiry, and the replay of their
records (Kafka's ``GroupMetadataManager`` for the consumer protocol).

Every change is a list of records (``consumer_records``) applied through the same replay that
loads ``__consumer_offsets`` at start, then persisted; the heartbeat is answered once the write is
stored. A refused write puts the group back as it was before it (if no later write of the group
was handed out meanwhile) and the heartbeat gets the mapped error.

A heartbeat, in Kafka's order: validate the request; leave (epoch -1, or -2 for a static member
leaving for a while); find or create the group (epoch 0; an empty classic group is taken over
when ``group.consumer.migration.policy`` allows the upgrade) and the member (a static member
rejoining replaces its old id); check the member epoch (FENCED_MEMBER_EPOCH unless it is the
previous epoch with a subset of the assignment: a lost answer); update the member; bump the group
epoch when a subscription or the subscribed topics changed; compute a new target assignment when
the group epoch is ahead of it; reconcile the member one step (``reconciliation``); arm its
session timeout, and its rebalance timeout while it must revoke partitions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.group import topic_regex
from kafka_wire.broker.group.assignors import ASSIGNORS, AssignorMember
from kafka_wire.broker.group.consumer_model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    as_partitions,
    is_subset,
    metadata_hash,
    tombstone_keys,
)
from kafka_wire.broker.group.consumer_records import (
    CURRENT_MEMBER_KEY,
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    ConsumerKey,
    ConsumerValue,
    GroupEpochValue,
    Partitions,
    TargetEpochValue,
    TargetMemberValue,
    consumer_record,
    decode_consumer_key,
    decode_consumer_value,
)
from kafka_wire.broker.group.consumer_replay import apply_record
from kafka_wire.broker.group.effects import KeyValue
from kafka_wire.broker.group.model import Group, Waiter
from kafka_wire.broker.group.persistence import ConsumerWrite
from kafka_wire.broker.group.reconciliation import reconcile
from kafka_wire.broker.group.records import group_metadata_record
from kafka_wire.broker.group.runtime import GroupRuntime, timer_key
from kafka_wire.broker.group.states import GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
    )

E = ErrorCode

#: Timer kinds: a member's session, and the time it has to revoke partitions.
CONSUMER_SESSION: Final = "consumer-session"
CONSUMER_REBALANCE: Final = "consumer-rebalance"

#: ``() -> [(name, topic id, partition count)]``: the cluster's topics, for subscriptions.
TopicsOf = Callable[[], Iterable[tuple[str, uuid.UUID, int]]]


class Refused(Exception):
    """A heartbeat refused with a Kafka error code (and Kafka's message)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Change = tuple[ConsumerKey, ConsumerValue | None]


def _encode(changes: list[Change]) -> list[KeyValue]:
    return [consumer_record(key, value) for key, value in changes]


class ConsumerGroups:
    """The consumer protocol's requests and timers over the coordinator's groups."""

    def __init__(
        self,
        rt: GroupRuntime,
        persist: Callable[[str, list[KeyValue], ConsumerWrite], object],
        topics: TopicsOf,
    ) -> None:
        self._rt = rt
        self._persist = persist
        self._topics = topics
        #: The latest write handed out per group: an earlier refused write must not undo it.
        self._latest: dict[str, ConsumerWrite] = {}
        #: Members replayed at load: their session timers start at the first time seen.
        self.unarmed: dict[tuple[str, str], None] = {}
        #: Records of another kind the heartbeat in progress writes first (a classic tombstone).
        self._raw: list[KeyValue] = []

    # -- heartbeat ---------------------------------------------------------------------------------

    def heartbeat(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.ConsumerGroupHeartbeatRequest)
        changes: list[Change] = []
        before: ConsumerGroup | None = None
        group = self._rt.groups.get(request.group_id)
        if group is not None and group.consumer is not None:
            before = group.consumer.copy()
        try:
            self._validate(request, waiter.api_version)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                answer = self._leave(request, changes)
            else:
                answer = self._heartbeat(request, client_id, client_host, changes, waiter.api_version)
        except Refused as refused:
            if changes or self._raw:
                self._restore(request.group_id, before)
            self._rt.respond(
                waiter,
                messages.ConsumerGroupHeartbeatResponse(
                    error_code=refused.code, error_message=refused.message, member_epoch=0
                ),
            )
            return
        raw, self._raw = self._raw, []
        self.write(request.group_id, changes, ConsumerWrite(request.group_id, before, waiter, answer), raw)

    def write(
        self, group_id: str, changes: list[Change], write: ConsumerWrite, raw: list[KeyValue] | None = None
    ) -> None:
        """Persist ``changes`` (already applied) after ``raw`` records of another kind (a classic
        group's tombstone); with none, an answer still waits for the writes before it."""
        if changes or raw:
            self._latest[group_id] = write
        elif write.waiter is None or write.answer is None:
            return  # nothing to write, nobody to answer
        self._persist(group_id, [*(raw or ()), *_encode(changes)], write)

    def written(self, write: ConsumerWrite, error: int, revert: bool = True) -> None:
        """The outcome of a write; a refused one whose records were not appended (``revert``)
        puts the group back as before, unless a later write of it was handed out since."""
        latest = self._latest.get(write.group_id)
        if latest is write:
            del self._latest[write.group_id]
            if error and revert:
                self._restore(write.group_id, write.before)
        if write.waiter is not None and write.answer is not None:
            answer = write.answer
            if error and isinstance(answer, messages.ConsumerGroupHeartbeatResponse):
                answer = messages.ConsumerGroupHeartbeatResponse(error_code=error)
            self._rt.respond(write.waiter, answer)

    def _restore(self, group_id: str, before: ConsumerGroup | None) -> None:
        """Put the group back as ``before``; timers follow the members that come and go."""
        self._raw = []
        group = self._rt.groups.get(group_id)
        if group is None:
            if before is None:
                return
            group = self._rt.groups[group_id] = Group(group_id, state_timestamp_ms=self._rt.clock)
        current = group.consumer
        now_members = set() if current is None else set(current.members)
        group.consumer = before
        for member_id in now_members - set(() if before is None else before.members):
            self._cancel_timers(group_id, member_id)
        for member_id in set(() if before is None else before.members) - now_members:
            self._arm_session(group_id, member_id)
        if before is None and not group.offsets and group.protocol_type is None and not group.members:
            del self._rt.groups[group_id]

    def _validate(self, request: ConsumerGroupHeartbeatRequest, version: int) -> None:
        def invalid(message: str) -> Refused:
            return Refused(E.INVALID_REQUEST, message)

        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if epoch > 0 or epoch == LEAVE_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == 0:
            if version >= 1 and not request.member_id:
                raise invalid("MemberId can't be empty.")
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.topic_partitions is None or request.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if not request.subscribed_topic_names and request.subscribed_topic_regex is None:
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
                )
        elif epoch == STATIC_LEAVE_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid("MemberEpoch is invalid.")
        assignors = self._rt.config.consumer_assignors
        if request.server_assignor is not None and request.server_assignor not in assignors:
            raise Refused(
                E.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(assignors)}.",
            )
        if request.subscribed_topic_regex is not None:
            try:
                topic_regex.check(request.subscribed_topic_regex)
            except topic_regex.BadRegex as exc:
                raise Refused(
                    E.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid regular "
                    f"expression: {exc}.",
                ) from None

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self._rt.groups.get(group_id)
        if group is not None and group.consumer is not None:
            return group.consumer
        if not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is not None and group.protocol_type is not None:
            upgrade = self._rt.config.consumer_migration_policy in ("bidirectional", "upgrade")
            if group.state is not GroupState.EMPTY or group.pending_join or not upgrade:
                raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")
            # An empty classic group is taken over: its metadata is deleted, its offsets stay.
            self._raw.append(group_metadata_record(group_id, None))
            self._rt.groups[group_id] = group = Group(
                group_id, state_timestamp_ms=self._rt.clock, offsets=group.offsets
            )
        if group is None:
            group = self._rt.groups[group_id] = Group(group_id, state_timestamp_ms=self._rt.clock)
        consumer = ConsumerGroup(group_id)
        group.consumer = consumer
        return consumer

    def _member(
        self,
        group: ConsumerGroup,
        request: ConsumerGroupHeartbeatRequest,
        owned: Partitions | None,
        changes: list[Change],
    ) -> ConsumerMember:
        member_id, epoch, instance_id = request.member_id, request.member_epoch, request.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise Refused(
                        E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
                    )
                return ConsumerMember(member_id)
            _check_epoch(member, epoch, owned)
            return member
        existing_id = group.static_members.get(instance_id)
        existing = None if existing_id is None else group.members.get(existing_id)
        if epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id, instance_id=instance_id)
            if existing.member_id == member_id:
                _check_epoch(existing, epoch, owned)
                return existing
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise Refused(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                    f"the instance id is owned by {existing.member_id} member.",
                )
            # The returning static member takes the old one's place, assignment and all.
            replacement = existing.copy()
            replacement.member_id = member_id
            replacement.member_epoch = replacement.previous_member_epoch = 0
            target = group.target.get(existing.member_id, {})
            changes += self._apply_all(
                [(k, None) for k in _member_keys(group.group_id, existing.member_id)]
                + [
                    (ConsumerKey(MEMBER_KEY, group.group_id, member_id), replacement.metadata_value()),
                    (ConsumerKey(TARGET_MEMBER_KEY, group.group_id, member_id), TargetMemberValue(target)),
                    (ConsumerKey(CURRENT_MEMBER_KEY, group.group_id, member_id), replacement.current_value()),
                ]
            )
            self._cancel_timers(group.group_id, existing.member_id)
            return group.members[member_id]
        if existing is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(
                E.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        _check_epoch(existing, epoch, owned)
        return existing

    def _heartbeat(
        self,
        request: ConsumerGroupHeartbeatRequest,
        client_id: str,
        client_host: str,
        changes: list[Change],
        version: int,
    ) -> ConsumerGroupHeartbeatResponse:
        config = self._rt.config
        joining = request.member_epoch == 0
        group = self._group(request.group_id, joining)
        # v0 lets the coordinator name a joining member (v1+: the client does).
        member_id = request.member_id
        while not member_id or (not request.member_id and member_id in group.members):
            member_id = self._rt.new_id("")
        if len(group.members) >= config.consumer_max_size and member_id not in group.members:
            raise Refused(
                E.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {config.consumer_max_size} members.",
            )
        if not request.member_id:
            request.member_id = member_id
        owned = as_partitions(
            None
            if request.topic_partitions is None
            else [(t.topic_id, list(t.partitions)) for t in request.topic_partitions]
        )
        member = self._member(group, request, owned, changes)
        if member.state is MemberState.UNKNOWN and (owned is None or owned):
            raise Refused(
                E.FENCED_MEMBER_EPOCH,
                "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.",
            )
        assigned_before = member.assigned  # replaced, never changed in place, by a record
        new = member.copy()
        if request.instance_id is not None:
            new.instance_id = request.instance_id
        if request.rack_id is not None:
            new.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            new.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.server_assignor is not None:
            new.server_assignor = request.server_assignor
        if request.subscribed_topic_names is not None:
            new.subscribed_topic_names = tuple(request.subscribed_topic_names)
        if request.subscribed_topic_regex is not None:
            new.subscribed_topic_regex = request.subscribed_topic_regex or None
        new.client_id, new.client_host = client_id, client_host
        gid = group.group_id
        is_new = member.member_id not in group.members
        bump = is_new or new.subscription() != member.subscription()
        if is_new or new.metadata_value() != member.metadata_value():
            changes += self._apply_all([(ConsumerKey(MEMBER_KEY, gid, new.member_id), new.metadata_value())])
        group.subscribed = self.subscribed_topics(group)
        digest = metadata_hash(group.subscribed)
        epoch = group.epoch
        if bump or digest != group.metadata_hash:
            epoch += 1
            changes += self._apply_all([(ConsumerKey(GROUP_KEY, gid), GroupEpochValue(epoch, digest))])
        if epoch > group.assignment_epoch:
            changes += self._apply_all(self.target_changes(group, epoch))
        current = group.members[new.member_id]
        reconciled = self._reconcile(group, current, owned, changes)
        self._arm_session(gid, reconciled.member_id)
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.topic_partitions is not None
        )
        answer = messages.ConsumerGroupHeartbeatResponse(
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=config.consumer_heartbeat_interval_ms,
        )
        if full or reconciled.assigned != assigned_before:
            answer.assignment = messages.ConsumerGroupHeartbeatResponseAssignment(
                topic_partitions=[
                    messages.ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=t, partitions=list(ps))
                    for t, ps in sorted(reconciled.assigned.items())
                ]
            )
        return answer

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Partitions | None, changes: list[Change]
    ) -> ConsumerMember:
        target = group.target.get(member.member_id, {})
        epochs = group.owner_epochs()
        for topic_id, partitions in member.assigned.items():
            for p in partitions:
                epochs.pop((topic_id, p), None)
        for topic_id, partitions in member.pending_revocation.items():
            for p in partitions:
                epochs.pop((topic_id, p), None)
        new = reconcile(member, group.assignment_epoch, target, epochs, owned, hooks=self._rt.hooks)
        if new is member:
            return member
        state, epoch = member.state, member.member_epoch  # the record below updates the member
        changes += self._apply_all(
            [(ConsumerKey(CURRENT_MEMBER_KEY, group.group_id, member.member_id), new.current_value())]
        )
        key = timer_key(CONSUMER_REBALANCE, group.group_id, member.member_id)
        if new.state is MemberState.UNREVOKED_PARTITIONS:
            if state is not MemberState.UNREVOKED_PARTITIONS or epoch != new.member_epoch:
                self._rt.schedule(key, max(new.rebalance_timeout_ms, 0), (new.member_epoch,))
        else:
            self._rt.cancel(key)
        return group.members[member.member_id]

    def subscribed_topics(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        """The existing topics the members subscribe to, by name or regex."""
        topics = {name: (topic_id, count) for name, topic_id, count in self._topics()}
        wanted: set[str] = set()
        for member in group.members.values():
            wanted.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex is not None:
                wanted.update(topic_regex.matching(member.subscribed_topic_regex, topics))
        return {name: topics[name] for name in sorted(wanted) if name in topics}

    def target_changes(self, group: ConsumerGroup, epoch: int) -> list[Change]:
        """The records of a new target assignment at ``epoch`` (only the members whose target
        changed), computed by the assignor most members prefer."""
        by_name = group.subscribed
        topics = {topic_id: count for topic_id, count in by_name.values()}
        members: dict[str, AssignorMember] = {}
        for member_id, member in group.members.items():
            names = set(member.subscribed_topic_names)
            if member.subscribed_topic_regex is not None:
                names.update(topic_regex.matching(member.subscribed_topic_regex, by_name))
            members[member_id] = AssignorMember(
                frozenset(by_name[n][0] for n in names if n in by_name), group.target.get(member_id, {})
            )
        assignor = group.preferred_assignor(self._rt.config.consumer_assignors[0])
        target = ASSIGNORS[assignor](members, topics)
        gid = group.group_id
        changes: list[Change] = [
            (ConsumerKey(TARGET_MEMBER_KEY, gid, member_id), TargetMemberValue(partitions))
            for member_id, partitions in target.items()
            if group.target.get(member_id) != partitions
        ]
        changes.append((ConsumerKey(TARGET_METADATA_KEY, gid), TargetEpochValue(epoch)))
        return changes

    # -- leaving and fencing -----------------------------------------------------------------------

    def _leave(
        self, request: ConsumerGroupHeartbeatRequest, changes: list[Change]
    ) -> ConsumerGroupHeartbeatResponse:
        group = self._group(request.group_id, False)
        answer = messages.ConsumerGroupHeartbeatResponse(
            member_id=request.member_id, member_epoch=request.member_epoch
        )
        if request.instance_id is None:
            if request.member_id not in group.members:
                raise Refused(
                    E.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {group.group_id}.",
                )
            changes += self.fence(group, request.member_id)
            return answer
        existing_id = group.static_members.get(request.instance_id)
        if existing_id is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if existing_id != request.member_id:
            raise Refused(
                E.FENCED_INSTANCE_ID,
                f"Static member {request.member_id} with instance id {request.instance_id} was fenced by member "
                f"{existing_id}.",
            )
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            member = group.members[existing_id].copy()
            member.member_epoch = STATIC_LEAVE_EPOCH
            member.pending_revocation = {}
            changes += self._apply_all(
                [(ConsumerKey(CURRENT_MEMBER_KEY, group.group_id, existing_id), member.current_value())]
            )
            self._rt.cancel(timer_key(CONSUMER_REBALANCE, group.group_id, existing_id))
            return messages.ConsumerGroupHeartbeatResponse(
                member_id=existing_id, member_epoch=STATIC_LEAVE_EPOCH
            )
        changes += self.fence(group, existing_id)
        return answer

    def delete_empty(self, group: Group) -> None:
        """Delete an empty consumer group's records (its offsets stay): a classic group takes
        its place (``group.consumer.migration.policy``: the downgrade)."""
        consumer = group.consumer
        if consumer is None or consumer.members:
            return
        before = consumer.copy()
        changes = self._apply_all([(key, None) for key in tombstone_keys(consumer)])
        self.write(group.group_id, changes, ConsumerWrite(group.group_id, before))

    def fence(self, group: ConsumerGroup, member_id: str) -> list[Change]:
        """Remove a member and bump the group epoch (the next heartbeat computes the new target)."""
        changes = self._apply_all([(k, None) for k in _member_keys(group.group_id, member_id)])
        group.subscribed = self.subscribed_topics(group)
        epoch = GroupEpochValue(group.epoch + 1, metadata_hash(group.subscribed))
        changes += self._apply_all([(ConsumerKey(GROUP_KEY, group.group_id), epoch)])
        self._cancel_timers(group.group_id, member_id)
        return changes

    def expire(self, kind: str, group_id: str, member_id: str, args: tuple[int, ...]) -> None:
        """A member's session or rebalance timeout ran out: it is fenced."""
        group = self._rt.groups.get(group_id)
        consumer = None if group is None else group.consumer
        member = None if consumer is None else consumer.members.get(member_id)
        if consumer is None or member is None:
            return
        if kind == CONSUMER_REBALANCE and (
            member.state is not MemberState.UNREVOKED_PARTITIONS or member.member_epoch != args[0]
        ):
            return
        before = consumer.copy()
        changes = self.fence(consumer, member_id)
        self.write(group_id, changes, ConsumerWrite(group_id, before))

    def _arm_session(self, group_id: str, member_id: str) -> None:
        self._rt.schedule(
            timer_key(CONSUMER_SESSION, group_id, member_id), self._rt.config.consumer_session_timeout_ms
        )

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self._rt.cancel(timer_key(CONSUMER_SESSION, group_id, member_id))
        self._rt.cancel(timer_key(CONSUMER_REBALANCE, group_id, member_id))

    def arm_loaded(self, group_id: str, member_id: str) -> None:
        self._arm_session(group_id, member_id)

    def drop(self, group_id: str, group: ConsumerGroup) -> None:
        """The group leaves memory (its partition moved): its timers stop."""
        for member_id in group.members:
            self._cancel_timers(group_id, member_id)
            self.unarmed.pop((group_id, member_id), None)
        self._latest.pop(group_id, None)

    # -- replay -----------------------------------------------------------------------------------

    def _apply(self, key: ConsumerKey, value: ConsumerValue | None) -> None:
        removed = apply_record(self._rt.groups, key, value, self._rt.now or 0)
        if removed:
            self.unarmed.pop((key.group, key.member), None)

    def _apply_all(self, changes: list[Change]) -> list[Change]:
        for key, value in changes:
            self._apply(key, value)
        return changes

    def replay(self, key: bytes, value: bytes | None) -> None:
        """One stored consumer group record (key versions 3-8)."""
        decoded = decode_consumer_key(key)
        parsed = None if value is None else decode_consumer_value(decoded.version, value)
        if value is not None and parsed is None:
            return  # subscription metadata: recomputed, not stored here
        self._apply(decoded, parsed)
        group = self._rt.groups.get(decoded.group)
        if group is not None and group.consumer is not None:
            if decoded.member and decoded.member in group.consumer.members:
                self.unarmed[decoded.group, decoded.member] = None


def _check_epoch(member: ConsumerMember, received: int, owned: Partitions | None) -> None:
    if received > member.member_epoch:
        raise Refused(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not is_subset(owned, member.assigned)
    ):
        raise Refused(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _member_keys(group_id: str, member_id: str) -> list[ConsumerKey]:
    """A member's records, in the order Kafka deletes them."""
    return [
        ConsumerKey(CURRENT_MEMBER_KEY, group_id, member_id),
        ConsumerKey(TARGET_MEMBER_KEY, group_id, member_id),
        ConsumerKey(MEMBER_KEY, group_id, member_id),
    ]
