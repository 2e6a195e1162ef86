"""``ReplicationControl``: the replication part of the controller (Kafka's
``ReplicationControlManager``), top layer: AlterPartition, ElectLeaders and the partition
reassignment APIs.

The part is built in layers, each a class adding one concern to the one below:
:class:`~kafka_wire.broker.controller.partition_changes.PartitionChanges` (the working topics and
partitions, their replay, partition changes, leader moves, the imbalance check),
:class:`~kafka_wire.broker.controller.topic_requests.TopicRequests` (CreateTopics, DeleteTopics,
CreatePartitions) and :class:`ReplicationControl` (this module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.elections import Election
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.settings import ELECTION_PREFERRED, ELECTION_UNCLEAN
from kafka_wire.broker.controller.topic_requests import TopicRequests
from kafka_wire.broker.controller.topics_image import NO_LEADER, NO_LEADER_CHANGE, merge_partition_change
from kafka_wire.broker.error_answers import ERROR_ANSWERS, failure_answer
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponseReassignableTopicResponse,
        AlterPartitionRequest,
        AlterPartitionRequestPartitionData,
        AlterPartitionResponsePartitionData,
        ElectLeadersRequest,
        ElectLeadersResponseReplicaElectionResult,
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponseOngoingPartitionReassignment,
    )

#: The messages Kafka's ``Errors`` give these codes (an ``ApiError`` without its own message).
_MESSAGES: Final = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
}


class ReplicationControl(TopicRequests):
    """Topics, partitions, elections and reassignments (see the module docstring)."""

    # -- AlterPartition --------------------------------------------------------------------------

    def alter_partition(self, version: int, req: AlterPartitionRequest, now_ms: int) -> Decision:
        if not self.cluster.epoch_ok(req.broker_id, req.broker_epoch):
            return messages.AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        response = messages.AlterPartitionResponse()
        records: list[Message] = []
        for topic_data in req.topics:
            out = messages.AlterPartitionResponseTopicData(
                topic_id=topic_data.topic_id, topic_name=topic_data.topic_name
            )
            response.topics.append(out)
            name = self.image.topic_name(topic_data.topic_id) if version > 1 else topic_data.topic_name
            if name is None or name not in self.image.topics:
                code = ErrorCode.UNKNOWN_TOPIC_ID if version > 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out.partitions = [
                    messages.AlterPartitionResponsePartitionData(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in topic_data.partitions
                ]
                continue
            for data in topic_data.partitions:
                out.partitions.append(self._alter_one(version, req.broker_id, name, data, records))
        return ControllerResult(
            records, lambda: response, lambda code: messages.AlterPartitionResponse(error_code=code)
        )

    def _alter_one(
        self,
        version: int,
        broker: int,
        topic: str,
        data: AlterPartitionRequestPartitionData,
        records: list[Message],
    ) -> AlterPartitionResponsePartitionData:
        index = data.partition_index
        isr_with_epochs = (
            [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs]
            if version >= 3
            else [(b, -1) for b in data.new_isr]
        )
        p = self.image.partition(topic, index)
        code = self._check_alter(version, broker, p, data, isr_with_epochs)
        if code != ErrorCode.NONE or p is None:
            return messages.AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
        record = self.change(
            p,
            records,
            target_isr=[b for b, _ in isr_with_epochs],
            target_leader_recovery_state=LeaderRecoveryState(data.leader_recovery_state),
        )
        if record is not None:
            p = merge_partition_change(p, record, self.hooks)
            if record.leader not in (broker, NO_LEADER_CHANGE):
                code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
                return messages.AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
        return messages.AlterPartitionResponsePartitionData(
            partition_index=index,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            isr=list(p.isr),
            leader_recovery_state=int(p.leader_recovery_state),
            partition_epoch=p.partition_epoch,
        )

    def _check_alter(
        self,
        version: int,
        broker: int,
        p: PartitionState | None,
        data: AlterPartitionRequestPartitionData,
        isr_with_epochs: list[tuple[int, int]],
    ) -> int:
        """Kafka's ``validateAlterPartitionData``, in its order."""
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if data.leader_epoch > p.leader_epoch or data.partition_epoch > p.partition_epoch:
            return ErrorCode.NOT_CONTROLLER  # the broker knows newer metadata than this controller
        if data.leader_epoch < p.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if broker != p.leader:
            return ErrorCode.INVALID_REQUEST
        if data.partition_epoch < p.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        new_isr = [b for b, _ in isr_with_epochs]
        if (
            len(set(new_isr)) != len(new_isr)
            or any(b not in p.replicas for b in new_isr)
            or p.leader not in new_isr
        ):
            return ErrorCode.INVALID_REQUEST
        recovering = data.leader_recovery_state == LeaderRecoveryState.RECOVERING
        if recovering and len(new_isr) > 1:
            return ErrorCode.INVALID_REQUEST
        if recovering and p.leader_recovery_state is LeaderRecoveryState.RECOVERED:
            return ErrorCode.INVALID_REQUEST
        for b, epoch in isr_with_epochs:
            info = self.cluster.broker(b)
            if info is None or info.fenced or info.in_controlled_shutdown or epoch not in (-1, info.epoch):
                return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
        return ErrorCode.NONE

    # -- ElectLeaders ----------------------------------------------------------------------------

    def elect_leaders(self, version: int, req: ElectLeadersRequest, now_ms: int) -> Decision:
        """Kafka's ``electLeaders``: each topic asked for is listed with a result per partition; a
        null list means every partition of every topic, and then the partitions that need no
        election are left out (each topic is still listed)."""
        if req.election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):  # Kafka: the whole request
            return ERROR_ANSWERS[ApiKey.ELECT_LEADERS](
                req, ErrorCode.INVALID_REQUEST, f"Unknown election type {req.election_type}"
            )
        unclean = version >= 1 and req.election_type == ELECTION_UNCLEAN
        everything = req.topic_partitions is None
        wanted: list[tuple[str, list[int]]] = (
            [(name, sorted(self.image.topics[name].partitions)) for name in sorted(self.image.topics)]
            if req.topic_partitions is None
            else [(t.topic, list(t.partitions)) for t in req.topic_partitions]
        )
        records: list[Message] = []
        results: list[ElectLeadersResponseReplicaElectionResult] = []
        for topic, indexes in wanted:
            out = messages.ElectLeadersResponseReplicaElectionResult(topic=topic)
            results.append(out)
            for index in indexes:
                code, message = self._elect_one(topic, index, unclean, records)
                if everything and code == ErrorCode.ELECTION_NOT_NEEDED:
                    continue
                out.partition_result.append(
                    messages.ElectLeadersResponsePartitionResult(
                        partition_id=index, error_code=code, error_message=message
                    )
                )
        response = messages.ElectLeadersResponse(replica_election_results=results)
        return ControllerResult(
            records,
            lambda: response,
            lambda code: failure_answer(ApiKey.ELECT_LEADERS, req, code),
            req.timeout_ms,
        )

    def _elect_one(
        self, topic: str, index: int, unclean: bool, records: list[Message]
    ) -> tuple[int, str | None]:
        if topic not in self.image.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
        p = self.image.partition(topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
        not_needed = ErrorCode.ELECTION_NOT_NEEDED, _MESSAGES[ErrorCode.ELECTION_NOT_NEEDED]
        if unclean:
            if p.leader != NO_LEADER:
                return not_needed
            record = self.change(p, records, election=Election.UNCLEAN)
            if record is None or record.leader == NO_LEADER:
                code = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                return code, _MESSAGES[code]
            return ErrorCode.NONE, None
        if p.replicas and p.leader == p.replicas[0]:
            return not_needed
        candidate: list[Message] = []
        record = self.change(p, candidate, election=Election.PREFERRED)
        if record is None or record.leader != p.replicas[0]:
            code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            return code, _MESSAGES[code]
        records += candidate
        return ErrorCode.NONE, None

    # -- partition reassignments -----------------------------------------------------------------

    def alter_partition_reassignments(
        self, version: int, req: AlterPartitionReassignmentsRequest, now_ms: int
    ) -> Decision:
        records: list[Message] = []
        responses: list[AlterPartitionReassignmentsResponseReassignableTopicResponse] = []
        for topic in req.topics:
            out = messages.AlterPartitionReassignmentsResponseReassignableTopicResponse(name=topic.name)
            responses.append(out)
            for part in topic.partitions:
                code, message = self._reassign_one(topic.name, part.partition_index, part.replicas, records)
                out.partitions.append(
                    messages.AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                        partition_index=part.partition_index, error_code=code, error_message=message
                    )
                )
        response = messages.AlterPartitionReassignmentsResponse(error_message=None, responses=responses)
        return ControllerResult(
            records,
            lambda: response,
            lambda code: failure_answer(ApiKey.ALTER_PARTITION_REASSIGNMENTS, req, code),
            req.timeout_ms,
        )

    def _reassign_one(
        self, topic: str, index: int, target: list[int] | None, records: list[Message]
    ) -> tuple[int, str | None]:
        p = self.image.partition(topic, index)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}-{index}"
        if target is None:  # cancel: back to the original replicas
            if not p.adding_replicas and not p.removing_replicas:
                return (
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.description,
                )
            original = [r for r in p.replicas if r not in p.adding_replicas]
            isr = [r for r in p.isr if r in original] or [r for r in original if self.cluster.acceptable(r)][
                :1
            ]
            self.change(
                p, records, target_replicas=original, target_isr=isr, target_adding=[], target_removing=[]
            )
            return ErrorCode.NONE, None
        if not target:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        problem = self.assignment_problem([target])
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        original = [r for r in p.replicas if r not in p.adding_replicas]
        adding = [r for r in target if r not in original]
        removing = [r for r in original if r not in target]
        merged = list(target) + removing
        self.change(p, records, target_replicas=merged, target_adding=adding, target_removing=removing)
        return ErrorCode.NONE, None

    def list_partition_reassignments(
        self, version: int, req: ListPartitionReassignmentsRequest, now_ms: int
    ) -> Decision:
        if req.topics is None:
            wanted = [p for p in self.image.all_partitions() if p.adding_replicas or p.removing_replicas]
        else:
            wanted = []
            for t in req.topics:
                for i in t.partition_indexes:
                    p = self.image.partition(t.name, i)
                    if p is not None and (p.adding_replicas or p.removing_replicas):
                        wanted.append(p)
        by_topic: dict[str, list[ListPartitionReassignmentsResponseOngoingPartitionReassignment]] = {}
        for p in wanted:
            by_topic.setdefault(p.topic, []).append(
                messages.ListPartitionReassignmentsResponseOngoingPartitionReassignment(
                    partition_index=p.partition,
                    replicas=list(p.replicas),
                    adding_replicas=list(p.adding_replicas),
                    removing_replicas=list(p.removing_replicas),
                )
            )
        return messages.ListPartitionReassignmentsResponse(
            error_message=None,
            topics=[
                messages.ListPartitionReassignmentsResponseOngoingTopicReassignment(name=n, partitions=ps)
                for n, ps in by_topic.items()
            ],
        )
