"""KIP-932 share groups on the group coordinator: ShareGroupHeartbeat, ShareGroupDescribe, member
expiry and the ``simple`` share assignor (Kafka's ``GroupMetadataManager`` share paths,
``ShareGroup`` and ``SimpleAssignor``; facts only).

A share group has no revocation: a partition may go to several members at once (the records of a
share-partition are handed out one acquisition at a time by its leader, ``kafka_wire.broker.share``),
so a member moves to the target assignment at its next heartbeat. A heartbeat, in Kafka's order:

1. validation (INVALID_REQUEST, Kafka's messages): an empty (blank) member, group or rack id;
   joining (epoch 0) without subscribed topic names; an epoch below -1;
2. epoch -1 leaves: the member is removed and the group epoch bumped;
3. the group: created by a joining member; a group id held by a classic or consumer group is
   GROUP_ID_NOT_FOUND, as is a heartbeat for a group not here; members beyond
   ``group.share.max.size``: GROUP_MAX_SIZE_REACHED;
4. the member: unknown with a non-zero epoch: UNKNOWN_MEMBER_ID; an epoch above its own, or below
   it and not its previous one (a heartbeat whose answer was lost): FENCED_MEMBER_EPOCH;
5. the group epoch is bumped by a new member, a changed subscription or a change of the subscribed
   topics (a hash of their names, ids and partition counts, recomputed every heartbeat);
6. a group epoch ahead of the assignment epoch computes the whole target with ``simple``;
7. the member takes its target and the assignment epoch; its session timer is re-armed.

After the assignment, the subscribed topics' partitions whose share-group state is neither
initialized nor being initialized (for less than :data:`INITIALIZE_RETRY_INTERVAL_MS`) are marked
initializing in the same write (key 15, Kafka's ``ShareGroupStatePartitionMetadata``); once it is
stored they are handed to the share coordinators (:meth:`ShareGroups.take_initializations`, run
by ``kafka_wire.broker.share.admin``), which report back (:meth:`ShareGroups.initialized`,
:meth:`ShareGroups.uninitialized`). The same metadata says which share-partitions
AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups and DescribeShareGroupOffsets work
on (:meth:`ShareGroups.begin_alter`, :meth:`ShareGroups.begin_offsets_delete`,
:meth:`ShareGroups.offsets_deleted`, :meth:`ShareGroups.state_partitions`).

The group's state (``EMPTY`` / ``STABLE``) moves only through :data:`SHARE_GROUP_TRANSITIONS`.
The groups are written to ``__consumer_offsets`` in Kafka's layouts (``share_records.py``): see
"Share groups" in ``docs/internals/group-coordinator.md``.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.group.consumer_groups import Refused, TopicsOf
from kafka_wire.broker.group.consumer_model import metadata_hash
from kafka_wire.broker.group.effects import KeyValue
from kafka_wire.broker.group.model import NO_OPERATIONS, Waiter
from kafka_wire.broker.group.persistence import DeleteGroupsAnswer, GroupPersistence, ShareWrite
from kafka_wire.broker.group.runtime import GroupRuntime, timer_key
from kafka_wire.broker.group.share_model import (
    SHARE_GROUP_TRANSITIONS,
    ShareGroup,
    ShareGroupInput,
    ShareGroupState,
    ShareMember,
    SharePartitions,
    StateTopics,
    add_initializing,
    merge_topics,
    remove_topics,
    to_initialize,
)
from kafka_wire.broker.group.share_records import (
    STATE_PARTITIONS_KEY,
    changes,
    group_keys,
    replay,
    state_partitions_record,
)
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.machine import step

_I = ShareGroupInput

E = ErrorCode

#: ListGroups' type of share groups.
SHARE_GROUP_TYPE: Final = "share"
#: The one share assignor Kafka 4 ships (``group.share.assignors``).
SIMPLE_ASSIGNOR: Final = "simple"
#: The timer kind of a share member's session.
SHARE_SESSION: Final = "share-session"
LEAVE_EPOCH: Final = -1
#: Kafka's ``group.share.initialize.retry.interval.ms`` default: share-partitions being initialized
#: for longer are asked for again at the next heartbeat.
INITIALIZE_RETRY_INTERVAL_MS: Final = 30_000

_KEY_15: Final = STATE_PARTITIONS_KEY.to_bytes(2, "big")
#: Share-partitions by topic id.
Partitions = dict[uuid.UUID, frozenset[int]]
#: One initialization to run: the group, its epoch (the state epoch asked), the share-partitions.
Initialization = tuple[str, int, Partitions]


def simple_assignment(
    members: Mapping[str, frozenset[uuid.UUID]], partitions: Mapping[uuid.UUID, int]
) -> dict[str, SharePartitions]:
    """The ``simple`` share assignor: topic by topic, the members subscribed to it (by member id)
    share its partitions: with no more members than partitions each partition goes to one member
    (round robin), else each member gets one partition and a partition goes to several members.
    Every subscribed member gets something whenever its topics have partitions."""
    out: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in members}
    for topic_id in sorted(partitions):
        count = partitions[topic_id]
        subscribed = sorted(m for m, topics in members.items() if topic_id in topics)
        if not subscribed or count <= 0:
            continue
        if len(subscribed) <= count:
            for index in range(count):
                out[subscribed[index % len(subscribed)]].setdefault(topic_id, []).append(index)
        else:
            for position, member_id in enumerate(subscribed):
                out[member_id].setdefault(topic_id, []).append(position % count)
    return {m: {t: tuple(sorted(ps)) for t, ps in topics.items()} for m, topics in out.items()}


class ShareGroups:
    """The share groups of the coordinator and their requests and timers."""

    def __init__(self, rt: GroupRuntime, persistence: GroupPersistence, topics: TopicsOf) -> None:
        self._rt = rt
        self._persistence = persistence
        self._topics = topics
        self.groups: dict[str, ShareGroup] = {}
        #: The latest write handed out per group: an earlier refused write must not undo it.
        self._latest: dict[str, ShareWrite] = {}
        #: Members replayed at load: their session timers start at the first time seen.
        self.unarmed: dict[tuple[str, str], None] = {}
        #: Initializations whose marking is stored, for the share coordinators.
        self._initializations: list[Initialization] = []
        #: What the heartbeat being handled marks initializing.
        self._asked: tuple[int, Partitions] | None = None

    # -- ShareGroupHeartbeat -----------------------------------------------------------------------

    def heartbeat(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.ShareGroupHeartbeatRequest)
        refused = self._rt.refusal(request.group_id) if request.group_id.strip() else None
        found = self.groups.get(request.group_id)
        before = None if found is None else copy.deepcopy(found)
        try:
            if refused is not None:
                raise Refused(refused, "")
            self._validate(request)
            if request.member_epoch == LEAVE_EPOCH:
                answer = self._leave(request)
            else:
                answer = self._heartbeat(request, client_id, client_host)
        except Refused as no:
            self._asked = None
            self._put_back(request.group_id, before)
            answer = messages.ShareGroupHeartbeatResponse(
                error_code=no.code, error_message=no.message or None, member_epoch=0
            )
            self._rt.respond(waiter, answer)
            return
        asked, self._asked = self._asked, None
        self._write(request.group_id, before, waiter, answer, asked)

    # -- writes ------------------------------------------------------------------------------------

    def _write(
        self,
        group_id: str,
        before: ShareGroup | None,
        waiter: Waiter | None,
        answer: Message | None,
        initialize: tuple[int, Partitions] | None = None,
    ) -> None:
        """Persist what changed since ``before`` (applied already); the answer waits for it."""
        group = self.groups.get(group_id)
        records = [] if group is None else changes(before, group)
        if (
            group is not None
            and initialize is not None
            and not any(k[1] == STATE_PARTITIONS_KEY for k, _ in records)
        ):
            records.append(state_partitions_record(group))  # asked again: written again, as Kafka does
        write = ShareWrite(group_id, before, waiter, answer, initialize=initialize)
        if records:
            self._latest[group_id] = write
        elif waiter is None or answer is None:
            return  # nothing to write, nobody to answer
        self._persistence.persist(group_id, records, write)

    def delete(self, group_id: str, answer: DeleteGroupsAnswer, index: int) -> None:
        """DeleteGroups of an empty share group: its records are tombstoned; the answer's result
        at ``index`` is set once that is stored (the group comes back if it is refused)."""
        group = self.groups.pop(group_id)
        records: list[KeyValue] = [(key, None) for key in group_keys(group_id)]
        write = ShareWrite(group_id, group, deleted=(answer, index))
        self._latest[group_id] = write
        self._persistence.persist(group_id, records, write)

    def written(self, write: ShareWrite, error: int, revert: bool = True) -> None:
        """The outcome of a write: a refused one puts the group back if ``revert`` (its records
        were not appended) and no later write of it was handed out since; its heartbeat gets the
        mapped error."""
        latest = self._latest.get(write.group_id)
        if latest is write:
            del self._latest[write.group_id]
            if error and revert:
                self._put_back(write.group_id, write.before)
        if not error and write.initialize is not None:
            self._initializations.append((write.group_id, *write.initialize))
        if write.waiter is not None and write.answer is not None:
            answer = write.answer if not error else messages.ShareGroupHeartbeatResponse(error_code=error)
            self._rt.respond(write.waiter, answer)
        if write.deleted is not None:
            deletion, index = write.deleted
            deletion.results[index].error_code = error
            deletion.outstanding -= 1
            if deletion.outstanding == 0:
                self._rt.respond(deletion.waiter, messages.DeleteGroupsResponse(results=deletion.results))

    def _put_back(self, group_id: str, before: ShareGroup | None) -> None:
        now = self.groups.get(group_id)
        members = set() if now is None else set(now.members)
        if before is None:
            self.groups.pop(group_id, None)
        else:
            self.groups[group_id] = before
        kept = set() if before is None else set(before.members)
        for member_id in members - kept:
            self._rt.cancel(timer_key(SHARE_SESSION, group_id, member_id))
        for member_id in kept - members:
            self._arm(group_id, member_id)

    def _arm(self, group_id: str, member_id: str) -> None:
        self._rt.schedule(
            timer_key(SHARE_SESSION, group_id, member_id), self._rt.config.share_session_timeout_ms
        )

    # -- replay ------------------------------------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        """One share group record of ``__consumer_offsets`` (``DecodeError``: nothing applied).
        Loaded members' session timers start at the first time the coordinator sees."""
        member = replay(self.groups, key, value)
        if member is not None:
            self.unarmed[member] = None
        for group in self.groups.values():
            group.state = ShareGroupState.STABLE if group.members else ShareGroupState.EMPTY

    def arm_loaded(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            self._arm(group_id, member_id)

    @staticmethod
    def _validate(request: messages.ShareGroupHeartbeatRequest) -> None:
        def blank(value: str | None) -> bool:
            return value is not None and not value.strip()

        if blank(request.member_id):
            raise Refused(E.INVALID_REQUEST, "MemberId can't be empty.")
        if blank(request.group_id):
            raise Refused(E.INVALID_REQUEST, "GroupId can't be empty.")
        if blank(request.rack_id):
            raise Refused(E.INVALID_REQUEST, "RackId can't be empty.")
        if request.member_epoch == 0:
            if not request.subscribed_topic_names:
                raise Refused(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif request.member_epoch < LEAVE_EPOCH:
            raise Refused(E.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in self._rt.groups:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def _leave(self, request: messages.ShareGroupHeartbeatRequest) -> Message:
        group = self._group(request.group_id, create=False)
        if request.member_id not in group.members:
            raise Refused(
                E.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of group {group.group_id}."
            )
        self._remove(group, request.member_id)
        return messages.ShareGroupHeartbeatResponse(member_id=request.member_id, member_epoch=LEAVE_EPOCH)

    def _heartbeat(
        self, request: messages.ShareGroupHeartbeatRequest, client_id: str, client_host: str
    ) -> Message:
        config = self._rt.config
        epoch = request.member_epoch
        group = self._group(request.group_id, create=epoch == 0)
        member_id = request.member_id
        member = group.members.get(member_id)
        if member is None and len(group.members) >= config.share_max_size:
            raise Refused(
                E.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {config.share_max_size} members.",
            )
        bump = False
        if member is None:
            if epoch != 0:
                raise Refused(
                    E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
                )
            member = group.members[member_id] = ShareMember(member_id)
            group.state = step(
                SHARE_GROUP_TRANSITIONS,
                group.state,
                _I.MEMBER_JOINED,
                machine=f"share group {group.group_id}",
            )
            bump = True
        elif epoch > member.member_epoch:
            raise Refused(
                E.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions "
                "and rejoin.",
            )
        elif epoch < member.member_epoch and epoch != member.previous_epoch:
            raise Refused(
                E.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}), and it does not match the previous member "
                f"epoch ({member.previous_epoch}). The member must abandon all its partitions and rejoin.",
            )
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        member.client_id, member.client_host = client_id, client_host
        if request.subscribed_topic_names is not None:
            subscribed = tuple(sorted(set(request.subscribed_topic_names)))
            bump = bump or subscribed != member.subscribed
            member.subscribed = subscribed
        topics = self._subscribed_topics(group)
        topics_hash = metadata_hash(topics)
        if bump or topics_hash != group.topics_hash:
            group.group_epoch += 1
            group.topics_hash = topics_hash
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, topics)
        self._mark_initializing(group, topics)
        before = member.assigned
        target = group.targets.get(member_id, {})
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assigned = target
        self._arm(group.group_id, member_id)
        answer = messages.ShareGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=config.share_heartbeat_interval_ms,
        )
        if epoch == 0 or before != target or epoch != member.member_epoch:
            answer.assignment = messages.ShareGroupHeartbeatResponseAssignment(
                topic_partitions=[
                    messages.ShareGroupHeartbeatResponseTopicPartitions(topic_id=t, partitions=list(ps))
                    for t, ps in sorted(target.items())
                ]
            )
        return answer

    def _mark_initializing(self, group: ShareGroup, topics: dict[str, tuple[uuid.UUID, int]]) -> None:
        """Mark the subscribed share-partitions with no state initialized or being initialized."""
        now = self._rt.clock
        wanted = to_initialize(group, topics, now, INITIALIZE_RETRY_INTERVAL_MS)
        if wanted:
            add_initializing(group, wanted, now)
            self._asked = (group.group_epoch, {t: ps for t, (_, ps) in wanted.items()})

    def _subscribed_topics(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        wanted = {name for m in group.members.values() for name in m.subscribed}
        return {name: (topic_id, count) for name, topic_id, count in self._topics() if name in wanted}

    def _assign(self, group: ShareGroup, topics: dict[str, tuple[uuid.UUID, int]]) -> None:
        members = {
            m.member_id: frozenset(topics[name][0] for name in m.subscribed if name in topics)
            for m in group.members.values()
        }
        group.targets = simple_assignment(members, {topic_id: count for topic_id, count in topics.values()})
        group.assignment_epoch = group.group_epoch

    def _remove(self, group: ShareGroup, member_id: str) -> None:
        del group.members[member_id]
        group.targets.pop(member_id, None)
        self._rt.cancel(timer_key(SHARE_SESSION, group.group_id, member_id))
        move = _I.MEMBER_LEFT if group.members else _I.LAST_MEMBER_LEFT
        group.state = step(
            SHARE_GROUP_TRANSITIONS, group.state, move, machine=f"share group {group.group_id}"
        )
        group.group_epoch += 1
        if group.members:
            self._assign(group, self._subscribed_topics(group))
        else:
            group.targets = {}
            group.assignment_epoch = group.group_epoch

    # -- share-group state metadata (key 15) -------------------------------------------------------

    def take_initializations(self) -> list[Initialization]:
        """The initializations whose marking was stored since the last call."""
        out, self._initializations = self._initializations, []
        return out

    def initialized(self, group_id: str, done: Partitions) -> None:
        """The share coordinators initialized ``done``: initializing -> initialized (Kafka's
        ``initializeShareGroupState``)."""
        self._change_state(group_id, done, initialized=True)

    def uninitialized(self, group_id: str, failed: Partitions) -> None:
        """The share coordinators failed to initialize ``failed``: no longer initializing
        (Kafka's ``uninitializeShareGroupState``); the next heartbeat asks again."""
        self._change_state(group_id, failed, initialized=False)

    def _change_state(self, group_id: str, parts: Partitions, *, initialized: bool) -> None:
        group = self.groups.get(group_id)
        if group is None or not parts:
            return
        before = copy.deepcopy(group)
        if initialized:
            names = {t: n for t, (n, _) in group.initializing.items()} | {t: n for n, t, _ in self._topics()}
            group.initialized = merge_topics(
                group.initialized, {t: (names.get(t, "<UNKNOWN>"), ps) for t, ps in parts.items()}
            )
        group.initializing = remove_topics(group.initializing, parts)
        group.initializing_since_ms = {
            t: ms for t, ms in group.initializing_since_ms.items() if t in group.initializing
        }
        self._write(group_id, before, None, None)

    def begin_alter(self, group_id: str, wanted: StateTopics) -> None:
        """AlterShareGroupOffsets of an empty group (or of one that does not exist: it is made, as
        Kafka's replay of key 15 makes it): ``wanted`` marked initializing."""
        if not wanted:
            return
        found = self.groups.get(group_id)
        before = None if found is None else copy.deepcopy(found)
        group = self.groups.setdefault(group_id, ShareGroup(group_id))
        add_initializing(group, wanted, self._rt.clock)
        self._write(group_id, before, None, None)

    def begin_offsets_delete(self, group_id: str, topics: dict[uuid.UUID, tuple[str, int]]) -> Partitions:
        """DeleteShareGroupOffsets of an empty group (Kafka's
        ``sharePartitionsEligibleForOffsetDeletion``): for each topic (id -> name, partition
        count) the share-partitions to delete: its initialized ones (the topic moves to deleting),
        or all of a topic being deleted already; a topic with neither is left out (there is no
        offset information to delete)."""
        group = self.groups.get(group_id)
        if group is None:
            return {}
        before = copy.deepcopy(group)
        out: Partitions = {}
        for topic_id, (name, count) in topics.items():
            if topic_id in group.initialized:
                out[topic_id] = group.initialized[topic_id][1]
                group.initialized = {t: v for t, v in group.initialized.items() if t != topic_id}
                group.deleting = {**group.deleting, topic_id: name}
            elif topic_id in group.deleting:
                out[topic_id] = frozenset(range(count))
        self._write(group_id, before, None, None)
        return out

    def offsets_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        """The share-partitions of ``topic_ids`` were deleted: no longer deleting."""
        group = self.groups.get(group_id)
        if group is None or not topic_ids & set(group.deleting):
            return
        before = copy.deepcopy(group)
        group.deleting = {t: n for t, n in group.deleting.items() if t not in topic_ids}
        self._write(group_id, before, None, None)

    def state_partitions(self, group_id: str, *, initialized_only: bool) -> Partitions:
        """The group's initialized share-partitions; without ``initialized_only`` those being
        initialized too, and the topics being deleted (as the partition counts ``_topics`` has):
        what a DeleteGroups deletes (Kafka's ``shareGroupBuildPartitionDeleteRequest``)."""
        group = self.groups.get(group_id)
        if group is None:
            return {}
        out: Partitions = {t: ps for t, (_, ps) in group.initialized.items()}
        if initialized_only:
            return out
        for topic_id, (_, ps) in group.initializing.items():
            out[topic_id] = out.get(topic_id, frozenset()) | ps
        counts = {topic_id: count for _, topic_id, count in self._topics()}
        for topic_id in group.deleting:
            if topic_id in counts:
                out[topic_id] = out.get(topic_id, frozenset()) | frozenset(range(counts[topic_id]))
        return out

    def topics_deleted(self) -> None:
        """Topics the metadata no longer has leave every group's state metadata (Kafka's
        ``maybeCleanupShareGroupState``; their state goes with the topic)."""
        live = {topic_id for _, topic_id, _ in self._topics()}
        for group_id, group in list(self.groups.items()):
            if all(t in live for part in group.state_metadata() for t in part):
                continue
            before = copy.deepcopy(group)
            group.initializing = {t: v for t, v in group.initializing.items() if t in live}
            group.initialized = {t: v for t, v in group.initialized.items() if t in live}
            group.deleting = {t: n for t, n in group.deleting.items() if t in live}
            self._write(group_id, before, None, None)

    # -- timers ------------------------------------------------------------------------------------

    def expire(self, group_id: str, member_id: str) -> None:
        """A member's session ran out: it is fenced (removed), as if it had left."""
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            before = copy.deepcopy(group)
            self._remove(group, member_id)
            self._write(group_id, before, None, None)

    def drop_partition(self, belongs: set[str]) -> None:
        """Forget the groups of an offsets partition no longer served (their timers too)."""
        for group_id in belongs:
            group = self.groups.pop(group_id, None)
            if group is None:
                continue
            for member_id in group.members:
                self._rt.cancel(timer_key(SHARE_SESSION, group_id, member_id))
                self.unarmed.pop((group_id, member_id), None)
            self._latest.pop(group_id, None)

    # -- ShareGroupDescribe ------------------------------------------------------------------------

    def describe(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.ShareGroupDescribeRequest)
        names = {topic_id: name for name, topic_id, _ in self._topics()}
        described = []
        for group_id in request.group_ids:
            refused = self._rt.refusal(group_id) if group_id else None
            changed, stored = self._persistence.stored_share_group(group_id)  # as Kafka's reads: stored
            group = stored if changed else self.groups.get(group_id)
            if refused is not None:
                described.append(
                    messages.ShareGroupDescribeResponseDescribedGroup(group_id=group_id, error_code=refused)
                )
                continue
            if group is None:
                message = (
                    f"Group {group_id} is not a share group."
                    if group_id in self._rt.groups
                    else f"Group {group_id} not found."
                )
                described.append(
                    messages.ShareGroupDescribeResponseDescribedGroup(
                        group_id=group_id,
                        error_code=E.GROUP_ID_NOT_FOUND,
                        error_message=message,
                        authorized_operations=NO_OPERATIONS,
                    )
                )
                continue
            described.append(
                messages.ShareGroupDescribeResponseDescribedGroup(
                    group_id=group_id,
                    group_state=group.state.value,
                    group_epoch=group.group_epoch,
                    assignment_epoch=group.assignment_epoch,
                    assignor_name=SIMPLE_ASSIGNOR,
                    authorized_operations=NO_OPERATIONS,
                    members=[
                        messages.ShareGroupDescribeResponseMember(
                            member_id=m.member_id,
                            rack_id=m.rack_id,
                            member_epoch=m.member_epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=list(m.subscribed),
                            assignment=messages.ShareGroupDescribeResponseAssignment(
                                topic_partitions=[
                                    messages.ShareGroupDescribeResponseTopicPartitions(
                                        topic_id=t, topic_name=names[t], partitions=list(ps)
                                    )
                                    for t, ps in sorted(m.assigned.items())
                                    if t in names
                                ]
                            ),
                        )
                        for m in group.members.values()
                    ],
                )
            )
        self._rt.respond(waiter, messages.ShareGroupDescribeResponse(groups=described))
