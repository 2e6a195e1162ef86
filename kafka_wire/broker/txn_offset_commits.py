"""What the broker does with a TxnOffsetCommit before its group coordinator sees it (Kafka's
``KafkaApis.handleTxnOffsetCommitRequest`` and the coordinator runtime's transaction
verification).

1. Partitions of topics the metadata does not know (by name before v6, by id from v6) answer
   UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID), as do partitions a topic does not have; they
   are taken out of the request and merged back into the coordinator's answer.
2. The group's ``__consumer_offsets`` partition is checked with the transaction coordinator
   (:mod:`kafka_wire.broker.txn.verifier`): added to the transaction for v5+ (transaction version
   2, no AddOffsetsToTxn), verified to be in it for older versions when
   ``transaction.partition.verification.enable`` is on. A failure answers every partition with
   the error, mapped as the group coordinator maps a failed write (NOT_ENOUGH_REPLICAS and
   REQUEST_TIMED_OUT become COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER NOT_COORDINATOR).
3. Then the group coordinator checks the group and writes the offsets (``group/txn_offsets.py``).
"""

from __future__ import annotations

from dataclasses import field

from kafka_wire import messages
from kafka_wire.broker.coordinator_keys import partition_for_group
from kafka_wire.broker.group.effects import client_error
from kafka_wire.broker.group.txn_errors import txn_offset_commit_error
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.txn.verifier import Operation, Verification
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.quick_dataclass import dataclass

Token = tuple[int, int]


@dataclass(slots=True)
class _Pending:
    token: Token
    request: Request
    verification: Verification


@dataclass(slots=True)
class TxnCommitGate:
    """TxnOffsetCommits on their way to the group coordinator (see the module docstring)."""

    state: BrokerState
    #: Partitions answered before the coordinator, merged into its answer, by token.
    rejected: dict[Token, list[messages.TxnOffsetCommitResponseTopic]] = field(default_factory=dict)
    verifying: list[_Pending] = field(default_factory=list)

    def admit(
        self, token: Token, request: Request, now_ms: int
    ) -> Request | messages.TxnOffsetCommitResponse | None:
        """The request to hand to the coordinator now, an answer now, or None (verifying)."""
        body = request.body
        assert isinstance(body, messages.TxnOffsetCommitRequest)
        v = request.api_version
        kept: list[messages.TxnOffsetCommitRequestTopic] = []
        rejected: list[messages.TxnOffsetCommitResponseTopic] = []
        for topic in body.topics:
            info = self.state.topic_with_id(topic.topic_id) if v >= 6 else self.state.topic_named(topic.name)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID if v >= 6 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            good = [
                p for p in topic.partitions if info is not None and 0 <= p.partition_index < info.partitions
            ]
            bad = [p for p in topic.partitions if p not in good]
            if bad:
                rejected.append(
                    messages.TxnOffsetCommitResponseTopic(
                        name=topic.name,
                        topic_id=topic.topic_id,
                        partitions=[
                            messages.TxnOffsetCommitResponsePartition(
                                partition_index=p.partition_index,
                                error_code=unknown if info is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            )
                            for p in bad
                        ],
                    )
                )
            if good:
                kept.append(
                    messages.TxnOffsetCommitRequestTopic(
                        name=topic.name, topic_id=topic.topic_id, partitions=good
                    )
                )
        if not kept:
            return messages.TxnOffsetCommitResponse(topics=rejected)
        if rejected:
            self.rejected[token] = rejected
        filtered = Request(
            header=request.header,
            body=messages.TxnOffsetCommitRequest(
                transactional_id=body.transactional_id,
                group_id=body.group_id,
                producer_id=body.producer_id,
                producer_epoch=body.producer_epoch,
                generation_id_or_member_epoch=body.generation_id_or_member_epoch,
                member_id=body.member_id,
                group_instance_id=body.group_instance_id,
                topics=kept,
            ),
        )
        operation = Operation.of_txn_offset_commit(v)
        verifier = self.state.txn_verifier
        offsets = self.state.topic_named(OFFSETS_TOPIC)
        if (
            verifier is None
            or offsets is None
            or not body.group_id
            or not (operation.adds or self.state.config.transaction_partition_verification_enable)
        ):
            return filtered
        partition = (OFFSETS_TOPIC, partition_for_group(body.group_id, offsets.partitions))
        verification = verifier.start(
            body.transactional_id, body.producer_id, body.producer_epoch, [partition], operation, now_ms
        )
        self.verifying.append(_Pending(token, filtered, verification))
        return self._ready_or_none(self.verifying[-1], now_ms)

    def poll(self, now_ms: int) -> list[tuple[Token, Request | messages.TxnOffsetCommitResponse]]:
        ready: list[tuple[Token, Request | messages.TxnOffsetCommitResponse]] = []
        still = []
        for pending in self.verifying:
            outcome = self._ready_or_none(pending, now_ms)
            if outcome is None:
                still.append(pending)
            else:
                ready.append((pending.token, outcome))
        self.verifying = still
        return ready

    def _ready_or_none(
        self, pending: _Pending, now_ms: int
    ) -> Request | messages.TxnOffsetCommitResponse | None:
        verifier = self.state.txn_verifier
        assert verifier is not None
        if not verifier.poll(pending.verification, now_ms):
            return None
        if pending in self.verifying:
            self.verifying.remove(pending)
        errors = list(pending.verification.errors.values())
        if not errors:
            return pending.request
        body = pending.request.body
        assert isinstance(body, messages.TxnOffsetCommitRequest)
        error = client_error(errors[0])
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and pending.request.api_version < 2:
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return txn_offset_commit_error(body, pending.request.api_version, error)

    def merge(
        self, token: Token, answer: messages.TxnOffsetCommitResponse
    ) -> messages.TxnOffsetCommitResponse:
        """The coordinator's answer with the partitions rejected before it."""
        answer.topics += self.rejected.pop(token, [])
        return answer

    @property
    def next_deadline_ms(self) -> int | None:
        retries = [
            p.verification.retry_at_ms for p in self.verifying if p.verification.retry_at_ms is not None
        ]
        return min(retries) if retries else None

    def forget(self, conn_id: int) -> None:
        self.verifying = [p for p in self.verifying if p.token[0] != conn_id]
        self.rejected = {t: r for t, r in self.rejected.items() if t[0] != conn_id}
