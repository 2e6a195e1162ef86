"""AlterPartition, ElectLeaders and the partition reassignment APIs, for
:class:`~kafka_wire.broker.controller.controller.QuorumController`.

Each handler takes the controller, the request version, the request and ``now_ms``, and returns
the answer or a held answer (``Waiting``) that comes once its records are committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.elections import Election
from kafka_wire.broker.controller.image import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    merge_partition_change,
)
from kafka_wire.broker.controller.settings import (
    ELECTION_UNCLEAN,
)
from kafka_wire.broker.controller.topics import assignment_problem
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartitionResponse,
    AlterPartitionReassignmentsResponseReassignableTopicResponse,
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
    ApiKey,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
    ErrorCode,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseOngoingPartitionReassignment,
    ListPartitionReassignmentsResponseOngoingTopicReassignment,
)

if TYPE_CHECKING:
    from kafka_wire.broker.controller.controller import QuorumController


def alter_partition(
    c: QuorumController, version: int, req: AlterPartitionRequest, now_ms: int
) -> Message | Waiting:
    reg = c.image.registration(req.broker_id)
    if reg is None or reg.info.epoch != req.broker_epoch:
        return AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    response = AlterPartitionResponse()
    records: list[Message] = []
    for topic_data in req.topics:
        out = AlterPartitionResponseTopicData(topic_id=topic_data.topic_id, topic_name=topic_data.topic_name)
        response.topics.append(out)
        name = c.image.topic_name(topic_data.topic_id) if version > 1 else topic_data.topic_name
        if name is None or name not in c.image.topics:
            code = ErrorCode.UNKNOWN_TOPIC_ID if version > 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.partitions = [
                AlterPartitionResponsePartitionData(partition_index=p.partition_index, error_code=code)
                for p in topic_data.partitions
            ]
            continue
        for data in topic_data.partitions:
            out.partitions.append(_alter_one(c, version, req.broker_id, name, data, records))
    return c.answer_when_committed(
        records, lambda: response, lambda code: AlterPartitionResponse(error_code=code), now_ms
    )


def _alter_one(
    c: QuorumController,
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
    p = c.image.partition(topic, index)
    code = _check_alter(c, version, broker, p, data, isr_with_epochs)
    if code != ErrorCode.NONE or p is None:
        return AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
    record = c.change(
        p,
        records,
        target_isr=[b for b, _ in isr_with_epochs],
        target_leader_recovery_state=LeaderRecoveryState(data.leader_recovery_state),
    )
    if record is not None:
        p = merge_partition_change(p, record)
        if record.leader not in (broker, NO_LEADER_CHANGE):
            code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
            return AlterPartitionResponsePartitionData(partition_index=index, error_code=code)
    return AlterPartitionResponsePartitionData(
        partition_index=index,
        leader_id=p.leader,
        leader_epoch=p.leader_epoch,
        isr=list(p.isr),
        leader_recovery_state=int(p.leader_recovery_state),
        partition_epoch=p.partition_epoch,
    )


def _check_alter(
    c: QuorumController,
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
        info = c.image.broker(b)
        if info is None or info.fenced or info.in_controlled_shutdown or epoch not in (-1, info.epoch):
            return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return ErrorCode.NONE


def elect_leaders(
    c: QuorumController, version: int, req: ElectLeadersRequest, now_ms: int
) -> Message | Waiting:
    unclean = version >= 1 and req.election_type == ELECTION_UNCLEAN
    everything = req.topic_partitions is None
    wanted: list[tuple[str, int]] = (
        [(p.topic, p.partition) for p in c.image.all_partitions()]
        if req.topic_partitions is None
        else [(t.topic, i) for t in req.topic_partitions for i in t.partitions]
    )
    by_topic: dict[str, list[ElectLeadersResponsePartitionResult]] = {}
    records: list[Message] = []
    for topic, index in wanted:
        code, message = _elect_one(c, topic, index, unclean, records)
        if everything and code != ErrorCode.NONE:
            continue  # Kafka lists only the partitions it elected when asked for all
        by_topic.setdefault(topic, []).append(
            ElectLeadersResponsePartitionResult(partition_id=index, error_code=code, error_message=message)
        )
    response = ElectLeadersResponse(
        replica_election_results=[
            ElectLeadersResponseReplicaElectionResult(topic=t, partition_result=r)
            for t, r in by_topic.items()
        ]
    )
    return c.answer_when_committed(
        records,
        lambda: response,
        lambda code: failure_answer(ApiKey.ELECT_LEADERS, req, code),
        now_ms,
        req.timeout_ms,
    )


def _elect_one(
    c: QuorumController, topic: str, index: int, unclean: bool, records: list[Message]
) -> tuple[int, str | None]:
    p = c.image.partition(topic, index)
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic-partition {topic}-{index}"
    if unclean:
        if p.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.description
        record = c.change(p, records, election=Election.UNCLEAN)
        if record is None or record.leader == NO_LEADER:
            return (
                ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                f"Unable to find any eligible leader for {topic}-{index}",
            )
        return ErrorCode.NONE, None
    if p.replicas and p.leader == p.replicas[0]:
        return ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.description
    candidate: list[Message] = []
    record = c.change(p, candidate, election=Election.PREFERRED)
    if record is None or record.leader != p.replicas[0]:
        return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, f"Failed to elect leader for {topic}-{index}"
    records += candidate
    return ErrorCode.NONE, None


def alter_partition_reassignments(
    c: QuorumController, version: int, req: AlterPartitionReassignmentsRequest, now_ms: int
) -> Message | Waiting:
    records: list[Message] = []
    responses: list[AlterPartitionReassignmentsResponseReassignableTopicResponse] = []
    for topic in req.topics:
        out = AlterPartitionReassignmentsResponseReassignableTopicResponse(name=topic.name)
        responses.append(out)
        for part in topic.partitions:
            code, message = _reassign_one(c, topic.name, part.partition_index, part.replicas, records)
            out.partitions.append(
                AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                    partition_index=part.partition_index, error_code=code, error_message=message
                )
            )
    response = AlterPartitionReassignmentsResponse(error_message=None, responses=responses)
    return c.answer_when_committed(
        records,
        lambda: response,
        lambda code: failure_answer(ApiKey.ALTER_PARTITION_REASSIGNMENTS, req, code),
        now_ms,
        req.timeout_ms,
    )


def _reassign_one(
    c: QuorumController, topic: str, index: int, target: list[int] | None, records: list[Message]
) -> tuple[int, str | None]:
    p = c.image.partition(topic, index)
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}-{index}"
    if target is None:  # cancel: back to the original replicas
        if not p.adding_replicas and not p.removing_replicas:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.description
        original = [r for r in p.replicas if r not in p.adding_replicas]
        isr = [r for r in p.isr if r in original] or [r for r in original if c.acceptable(r)][:1]
        c.change(p, records, target_replicas=original, target_isr=isr, target_adding=[], target_removing=[])
        return ErrorCode.NONE, None
    if not target:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    problem = assignment_problem(c, [target])
    if problem is not None:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    original = [r for r in p.replicas if r not in p.adding_replicas]
    adding = [r for r in target if r not in original]
    removing = [r for r in original if r not in target]
    merged = list(target) + removing
    c.change(p, records, target_replicas=merged, target_adding=adding, target_removing=removing)
    return ErrorCode.NONE, None


def list_partition_reassignments(
    c: QuorumController, version: int, req: ListPartitionReassignmentsRequest, now_ms: int
) -> Message | Waiting:
    if req.topics is None:
        wanted = [p for p in c.image.all_partitions() if p.adding_replicas or p.removing_replicas]
    else:
        wanted = []
        for t in req.topics:
            for i in t.partition_indexes:
                p = c.image.partition(t.name, i)
                if p is not None and (p.adding_replicas or p.removing_replicas):
                    wanted.append(p)
    by_topic: dict[str, list[ListPartitionReassignmentsResponseOngoingPartitionReassignment]] = {}
    for p in wanted:
        by_topic.setdefault(p.topic, []).append(
            ListPartitionReassignmentsResponseOngoingPartitionReassignment(
                partition_index=p.partition,
                replicas=list(p.replicas),
                adding_replicas=list(p.adding_replicas),
                removing_replicas=list(p.removing_replicas),
            )
        )
    return ListPartitionReassignmentsResponse(
        error_message=None,
        topics=[
            ListPartitionReassignmentsResponseOngoingTopicReassignment(name=n, partitions=ps)
            for n, ps in by_topic.items()
        ],
    )
