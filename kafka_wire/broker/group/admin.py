"""Group administration: ListGroups, DescribeGroups, DeleteGroups, and the deletion of a group
(also used by offset retention)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.group.consumer_model import CONSUMER_GROUP_TYPE, tombstone_keys
from kafka_wire.broker.group.consumer_records import Partitions, consumer_record
from kafka_wire.broker.group.model import CLASSIC_GROUP_TYPE, NO_OPERATIONS, Group, Waiter
from kafka_wire.broker.group.persistence import DeleteGroupsAnswer, GroupDeleted, GroupPersistence
from kafka_wire.broker.group.rebalance import Rebalance
from kafka_wire.broker.group.records import group_metadata_record, offset_commit_record
from kafka_wire.broker.group.runtime import JOIN, SYNC, GroupRuntime, timer_key
from kafka_wire.broker.group.share_groups import SHARE_GROUP_TYPE
from kafka_wire.broker.group.share_model import ShareGroup
from kafka_wire.broker.group.states import GroupInput, GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        ConsumerGroupDescribeResponseAssignment,
    )

E = ErrorCode


class GroupAdmin:
    """The admin APIs over every group."""

    def __init__(
        self,
        rt: GroupRuntime,
        persistence: GroupPersistence,
        rebalance: Rebalance,
        share_groups: dict[str, ShareGroup] | None = None,
        delete_share_group: Callable[[str, DeleteGroupsAnswer, int], None] | None = None,
    ) -> None:
        #: Deletes an empty share group (``share_groups``), answering in the DeleteGroups answer.
        self._delete_share_group = delete_share_group or (lambda group_id, answer, index: None)
        self._rt = rt
        #: The share groups (``share_groups``), listed beside the others.
        self._share_groups = share_groups if share_groups is not None else {}
        self._persistence = persistence
        self._rebalance = rebalance

    def deletion_written(self, write: GroupDeleted, error: int, *, revert: bool = True) -> None:
        """The outcome of a group's tombstones: refused (``revert``), the group comes back;
        appended but not stored in time, it stays deleted (they may yet be stored)."""
        old = write.group
        if error and revert:
            self._persistence.give_back(write.dropped)
        if error and revert and old.group_id not in self._rt.groups:
            # The tombstones are not stored: the group is still what the log says. Restore it as
            # load() would build it (empty, its generation and offsets).
            self._rt.groups[old.group_id] = Group(
                old.group_id,
                state_timestamp_ms=write.state_timestamp_ms,
                generation=old.generation,
                protocol_type=old.protocol_type,
                offsets=old.offsets,
                subscribed_topics=old.subscribed_topics,
                consumer=old.consumer,
            )
        answer = write.answer
        if answer is None:
            return
        answer.results[write.index].error_code = error
        answer.outstanding -= 1
        if answer.outstanding == 0:
            self._rt.respond(answer.waiter, messages.DeleteGroupsResponse(results=answer.results))

    def list_groups(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.ListGroupsRequest)
        v = waiter.api_version
        states = {s.strip().lower() for s in request.states_filter} if v >= 4 else set()
        types = {t.strip().lower() for t in request.types_filter} if v >= 5 else set()
        listed = []
        if self._rt.loading:  # Kafka lists nothing while a partition of its groups is loading
            self._rt.respond(waiter, messages.ListGroupsResponse(error_code=E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        every = [
            *(
                (g.group_id, CONSUMER_GROUP_TYPE, g.consumer.state().value, "consumer")
                if g.consumer is not None
                else (g.group_id, CLASSIC_GROUP_TYPE, g.state.value, g.protocol_type or "")
                for g in self._rt.groups.values()
            ),
            *((g.group_id, SHARE_GROUP_TYPE, g.state.value, "share") for g in self._share_groups.values()),
        ]
        for group_id, kind, state, protocol_type in every:
            if (types and kind not in types) or (states and state.lower() not in states):
                continue
            listed.append(
                messages.ListGroupsResponseListedGroup(
                    group_id=group_id,
                    protocol_type=protocol_type,
                    group_state=state if v >= 4 else "",
                    group_type=kind if v >= 5 else "",
                )
            )
        self._rt.respond(waiter, messages.ListGroupsResponse(groups=listed))

    def describe_groups(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.DescribeGroupsRequest)
        v = waiter.api_version
        described = []
        for group_id in request.groups:
            group = self._rt.groups.get(group_id)
            if not group_id:
                described.append(
                    messages.DescribeGroupsResponseDescribedGroup(
                        group_id=group_id, error_code=E.INVALID_GROUP_ID, group_state=GroupState.DEAD.value
                    )
                )
            elif (refused := self._rt.refusal(group_id)) is not None:
                described.append(
                    messages.DescribeGroupsResponseDescribedGroup(
                        group_id=group_id,
                        error_code=refused,
                        group_state="",
                        authorized_operations=NO_OPERATIONS,
                    )
                )
            elif group is None or group.consumer is not None:
                not_found = v >= 6
                described.append(
                    messages.DescribeGroupsResponseDescribedGroup(
                        group_id=group_id,
                        group_state=GroupState.DEAD.value,
                        error_code=E.GROUP_ID_NOT_FOUND if not_found else E.NONE,
                        error_message=f"Group {group_id} not found." if not_found else None,
                    )
                )
            else:
                stable = group.state is GroupState.STABLE
                described.append(
                    messages.DescribeGroupsResponseDescribedGroup(
                        group_id=group_id,
                        group_state=group.state.value,
                        protocol_type=group.protocol_type or "",
                        protocol_data=(group.protocol_name or "") if stable else "",
                        members=[
                            messages.DescribeGroupsResponseDescribedGroupMember(
                                member_id=m.member_id,
                                group_instance_id=m.group_instance_id,
                                client_id=m.client_id,
                                client_host=m.client_host,
                                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                                member_assignment=m.assignment,
                            )
                            for m in group.members.values()
                        ],
                        authorized_operations=NO_OPERATIONS,
                    )
                )
        self._rt.respond(waiter, messages.DescribeGroupsResponse(groups=described))

    def delete_groups(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.DeleteGroupsRequest)
        answer = DeleteGroupsAnswer(waiter, [])
        for group_id in request.groups_names:
            group = self._rt.groups.get(group_id)
            share = self._share_groups.get(group_id)
            if not group_id:
                error = E.INVALID_GROUP_ID
            elif (refused := self._rt.refusal(group_id)) is not None:
                error = refused
            elif share is not None:
                error = E.NON_EMPTY_GROUP if share.members else E.NONE
                if not error:
                    answer.outstanding += 1
                    self._delete_share_group(group_id, answer, len(answer.results))
            elif group is None:
                error = E.GROUP_ID_NOT_FOUND
            elif group.state is not GroupState.EMPTY or (
                group.consumer is not None and group.consumer.members
            ):
                error = E.NON_EMPTY_GROUP
            else:
                error = E.NONE
                answer.outstanding += 1
                self.delete_group(group, answer, len(answer.results))
            answer.results.append(
                messages.DeleteGroupsResponseDeletableGroupResult(group_id=group_id, error_code=error)
            )
        if answer.outstanding == 0:
            self._rt.respond(waiter, messages.DeleteGroupsResponse(results=answer.results))

    def delete_group(self, group: Group, answer: DeleteGroupsAnswer | None = None, index: int = -1) -> None:
        """Tombstone every offset and the metadata of an empty group; drop it once stored.

        A partition that only a transaction holds an offset of is tombstoned too, and the
        tombstones drop the group's pending transactional offsets (Kafka's ``deleteAllOffsets``):
        no later COMMIT marker brings them back."""
        group_id = group.group_id
        keys = dict.fromkeys((t, p) for t, partitions in group.offsets.items() for p in partitions)
        pending = self._persistence.pending_partitions(group_id)
        keys.update(dict.fromkeys(pending))
        records = [offset_commit_record(group_id, topic, partition, None) for topic, partition in keys]
        if group.consumer is not None:
            records += [consumer_record(key, None) for key in tombstone_keys(group.consumer)]
        else:
            records.append(group_metadata_record(group_id, None))
        write = GroupDeleted(group, group.state_timestamp_ms, answer, index)
        write.dropped = self._persistence.drop_pending(group_id, pending)
        for member_id in list(group.pending_join):
            self._rebalance.remove_member(group, member_id)
        self._rt.cancel(timer_key(JOIN, group_id))
        self._rt.cancel(timer_key(SYNC, group_id))
        self._rt.transition(group, GroupInput.DELETE)
        del self._rt.groups[group_id]
        self._persistence.persist(group_id, records, write)

    def consumer_group_describe(
        self, waiter: Waiter, request: Message, client_id: str, client_host: str
    ) -> None:
        """ConsumerGroupDescribe v0-v1: the group as its stored records say (a change not stored
        yet is not seen); GROUP_ID_NOT_FOUND for a group that is not a consumer group."""
        assert isinstance(request, messages.ConsumerGroupDescribeRequest)
        described = []
        for group_id in request.group_ids:
            group = self._rt.groups.get(group_id)
            consumer = None if group is None else group.consumer
            _, changed, before = self._persistence.committed_before(group_id)
            if changed:  # read at the last stored write, as Kafka's coordinator reads it
                consumer = before
            refused = self._rt.refusal(group_id) if group_id else E.INVALID_GROUP_ID
            if refused is not None or consumer is None:
                described.append(
                    messages.ConsumerGroupDescribeResponseDescribedGroup(
                        group_id=group_id,
                        error_code=refused or E.GROUP_ID_NOT_FOUND,
                        error_message=None if refused else f"Group {group_id} not found.",
                        authorized_operations=NO_OPERATIONS,
                    )
                )
                continue
            described.append(
                messages.ConsumerGroupDescribeResponseDescribedGroup(
                    group_id=group_id,
                    group_state=consumer.state().value,
                    group_epoch=consumer.epoch,
                    assignment_epoch=consumer.assignment_epoch,
                    assignor_name=consumer.preferred_assignor(self._rt.config.consumer_assignors[0]),
                    members=[
                        messages.ConsumerGroupDescribeResponseMember(
                            member_id=m.member_id,
                            instance_id=m.instance_id,
                            rack_id=m.rack_id,
                            member_epoch=m.member_epoch,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            subscribed_topic_names=list(m.subscribed_topic_names),
                            # none is "", as Kafka's member record keeps it
                            subscribed_topic_regex=m.subscribed_topic_regex or "",
                            assignment=self._described(m.assigned),
                            target_assignment=self._described(consumer.target.get(m.member_id, {})),
                            member_type=1,  # a consumer-protocol member (0: classic, -1: unknown)
                        )
                        for m in consumer.members.values()
                    ],
                    authorized_operations=NO_OPERATIONS,
                )
            )
        self._rt.respond(waiter, messages.ConsumerGroupDescribeResponse(groups=described))

    def _described(self, partitions: Partitions) -> ConsumerGroupDescribeResponseAssignment:
        out = []
        for topic_id, numbers in sorted(partitions.items()):
            name = None if self._rt.topic_name_of is None else self._rt.topic_name_of(topic_id)
            if name is not None:  # a deleted topic is left out, as Kafka does
                out.append(
                    messages.ConsumerGroupDescribeResponseTopicPartitions(
                        topic_id=topic_id, topic_name=name, partitions=list(numbers)
                    )
                )
        return messages.ConsumerGroupDescribeResponseAssignment(topic_partitions=out)
