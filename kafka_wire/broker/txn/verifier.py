"""A partition leader's check with the transaction coordinator before it appends a transaction's
first batch (KIP-890; Kafka's ``AddPartitionsToTxnManager``).

A transactional Produce (or a TxnOffsetCommit) whose producer has no transaction open in a
partition asks the coordinator of its transactional id (the leader of its ``__transaction_state``
partition; COORDINATOR_NOT_AVAILABLE while there is none) with AddPartitionsToTxn v4+: to verify
that the partitions are in the transaction (part 1: ``verify_only``), or, for a Produce v12+ or
TxnOffsetCommit v5+ of transaction version 2, to add them (part 2). The answer, per partition, as
Kafka's leader reads it: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE
becomes INVALID_TXN_STATE for a client older than Produce v11 / TxnOffsetCommit v4, a lost
connection is NETWORK_EXCEPTION, a top-level error applies to every partition;
CONCURRENT_TRANSACTIONS is asked again after :data:`RETRY_BACKOFF_MS` for up to
:data:`RETRY_MAX_MS` (Kafka's ``add.partitions.to.txn.retry.backoff.ms`` /
``...backoff.max.ms``), as the previous transaction's end is usually being written.

:func:`produce_error` is what a Produce's partition then answers (Kafka's
``ReplicaManager``): the errors meaning "could not verify" (NETWORK_EXCEPTION,
COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE, NOT_COORDINATOR, and CONCURRENT_TRANSACTIONS for a
client before transaction version 2) become the retriable NOT_ENOUGH_REPLICAS.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.coordinator_keys import partition_for_transactional_id
from kafka_wire.broker.internal_topics import TRANSACTION_STATE_TOPIC
from kafka_wire.broker.txn.metadata import TopicPartition
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: Kafka's ``add.partitions.to.txn.retry.backoff.ms`` and ``...retry.backoff.max.ms`` defaults.
RETRY_BACKOFF_MS: Final = 20
RETRY_MAX_MS: Final = 100
#: Kafka's ``request.timeout.ms`` for the broker's own request.
REQUEST_TIMEOUT_MS: Final = 30_000

_UNVERIFIABLE: Final = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


class Operation(enum.Enum):
    """What the requester's version supports (Kafka's ``TransactionSupportedOperation``)."""

    #: Produce v0-v10, TxnOffsetCommit v0-v3: TRANSACTION_ABORTABLE is not known to the client.
    DEFAULT_ERROR = "default"
    #: Produce v11, TxnOffsetCommit v4.
    GENERIC_ERROR = "generic"
    #: Produce v12+, TxnOffsetCommit v5+: transaction version 2, the partitions are added.
    ADD_PARTITION = "add"

    @property
    def adds(self) -> bool:
        return self is Operation.ADD_PARTITION

    @classmethod
    def of_produce(cls, version: int) -> Operation:
        return cls.ADD_PARTITION if version > 11 else cls.GENERIC_ERROR if version > 10 else cls.DEFAULT_ERROR

    @classmethod
    def of_txn_offset_commit(cls, version: int) -> Operation:
        return cls.ADD_PARTITION if version > 4 else cls.GENERIC_ERROR if version > 3 else cls.DEFAULT_ERROR


def produce_error(error: int, operation: Operation) -> tuple[int, str | None]:
    """The error (and message) a partition whose verification failed with ``error`` answers."""
    if error == ErrorCode.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    if error in _UNVERIFIABLE or (error == ErrorCode.CONCURRENT_TRANSACTIONS and not operation.adds):
        known = ErrorCode.lookup(error)
        name = known.name if isinstance(known, ErrorCode) else str(error)
        return (
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"Unable to verify the partition has been added to the transaction. Underlying error: {name}",
        )
    return error, None


@dataclass(slots=True)
class Verification:
    """One verification in progress; ``errors`` (the partitions that failed) once ``done``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]
    operation: Operation
    started_ms: int
    done: bool = False
    errors: dict[TopicPartition, int] = field(default_factory=dict)
    #: Set when CONCURRENT_TRANSACTIONS is to be asked again at this time.
    retry_at_ms: int | None = None


class TxnVerifier:
    """Sends the verifications (see the module docstring)."""

    def __init__(self, cluster: ClusterView) -> None:
        self._cluster = cluster

    def start(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        operation: Operation,
        now_ms: int,
    ) -> Verification:
        verification = Verification(
            transactional_id, producer_id, producer_epoch, tuple(sorted(partitions)), operation, now_ms
        )
        self._send(verification)
        return verification

    def poll(self, verification: Verification, now_ms: int) -> bool:
        """Whether the verification is done (asking again what is due)."""
        if verification.retry_at_ms is not None and now_ms >= verification.retry_at_ms:
            verification.retry_at_ms = None
            verification.done = False
            self._send(verification)
        return verification.done

    def _send(self, v: Verification) -> None:
        cluster = self._cluster
        states = cluster.partitions_of(TRANSACTION_STATE_TOPIC)
        leader = -1
        if states:
            registration = cluster.partition(
                TRANSACTION_STATE_TOPIC, partition_for_transactional_id(v.transactional_id, len(states))
            )
            broker = None if registration is None else cluster.broker(registration.leader)
            if broker is not None and not broker.fenced and broker.endpoint(cluster.inter_broker_listener):
                leader = broker.node_id
        if leader < 0:
            self._finish(v, dict.fromkeys(v.partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE), v.started_ms)
            return
        by_topic: dict[str, list[int]] = {}
        for topic, partition in v.partitions:
            by_topic.setdefault(topic, []).append(partition)
        body = messages.AddPartitionsToTxnRequest(
            transactions=[
                messages.AddPartitionsToTxnRequestTransaction(
                    transactional_id=v.transactional_id,
                    producer_id=v.producer_id,
                    producer_epoch=v.producer_epoch,
                    verify_only=not v.operation.adds,
                    topics=[
                        messages.AddPartitionsToTxnRequestTopic(name=t, partitions=p)
                        for t, p in by_topic.items()
                    ],
                )
            ]
        )

        def on_reply(reply: Message | None, reply_ms: int) -> None:
            self._finish(v, _errors(v, reply), reply_ms)

        cluster.send(Outbound(leader, cluster.inter_broker_listener, body, on_reply, REQUEST_TIMEOUT_MS))

    @staticmethod
    def _finish(v: Verification, errors: dict[TopicPartition, int], now_ms: int) -> None:
        concurrent = bool(errors) and all(e == ErrorCode.CONCURRENT_TRANSACTIONS for e in errors.values())
        if concurrent and now_ms - v.started_ms < RETRY_MAX_MS:
            v.retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        v.errors = errors
        v.done = True


def _errors(v: Verification, reply: Message | None) -> dict[TopicPartition, int]:
    if not isinstance(reply, messages.AddPartitionsToTxnResponse):
        return dict.fromkeys(v.partitions, ErrorCode.NETWORK_EXCEPTION)
    if reply.error_code:
        code = (
            ErrorCode.INVALID_TXN_STATE
            if reply.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            else reply.error_code
        )
        return dict.fromkeys(v.partitions, code)
    errors: dict[TopicPartition, int] = {}
    for result in reply.results_by_transaction:
        if result.transactional_id != v.transactional_id:
            continue
        for topic in result.topic_results:
            for partition in topic.results_by_partition:
                code = partition.partition_error_code
                if not code:
                    continue
                if code == ErrorCode.PRODUCER_FENCED:
                    code = ErrorCode.INVALID_PRODUCER_EPOCH
                elif code == ErrorCode.TRANSACTION_ABORTABLE and v.operation is Operation.DEFAULT_ERROR:
                    code = ErrorCode.INVALID_TXN_STATE
                errors[(topic.name, partition.partition_index)] = code
    return errors
