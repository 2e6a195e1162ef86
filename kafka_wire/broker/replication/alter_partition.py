"""ISR changes a leader asks the controller for (AlterPartition), one in flight per partition.

A leader that wants another ISR (a follower caught up, or lags too long) or to end the
RECOVERING state after an unclean election calls :meth:`AlterPartitionSender.propose`. The
replica's ``pending_isr`` holds the proposal while it is in flight (the high watermark counts
the maximal ISR meanwhile); no other proposal is made for that partition until it is settled.
The controller's answer is applied (new ISR and partition epoch); a failed request (no reply, a
top-level error, a retriable partition error) is sent again after ``retry_backoff_ms``. A refusal
that proves the proposal was not applied (an ineligible replica) drops it and the replica goes back
to its committed ISR. A stale proposal (fenced leader epoch, stale partition epoch, no such
partition, another leader elected) is dropped too, but the replica stays pending until the next
metadata: the request may have been applied by the controller before (an answer lost, then the
retry found the partition epoch it had made), so the proposed ISR still counts for the high
watermark (Kafka's ``Partition.handleAlterPartitionError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import ClusterView, LeaderRecoveryState, Outbound
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.partition.replica import PartitionReplica

DEFAULT_RETRY_BACKOFF_MS: Final = 100
#: How many retry backoffs the BUGGIFY point ``replica.delay_alter_partition`` holds a proposal.
DELAY_BACKOFFS: Final = 30
#: Partition errors after which the proposal is dropped and the replica waits for the metadata to
#: tell what happened, still counting the proposed ISR (an earlier send may have been applied).
DROP_ERRORS: Final = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    }
)
#: Partition errors by which the controller says the proposal was not applied, by it or any
#: controller before or after it: the proposal is dropped and the replica goes back to its
#: committed ISR.
RESET_ERRORS: Final = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})


@dataclass(slots=True)
class Proposal:
    replica: PartitionReplica
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    recovery_state: LeaderRecoveryState
    #: When to send it again after a failure (None: in flight).
    retry_at_ms: int | None = None


class AlterPartitionSender:
    def __init__(
        self, cluster: ClusterView, *, retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS, hooks: Hooks = OFF
    ) -> None:
        self.cluster = cluster
        self.hooks = hooks
        self.retry_backoff_ms = retry_backoff_ms
        self.proposals: dict[tuple[str, int], Proposal] = {}
        self._now_ms = 0

    def propose(
        self,
        replica: PartitionReplica,
        isr: tuple[int, ...],
        recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
    ) -> bool:
        """Ask the controller for ``isr`` (False: a change is already in flight, or no registration)."""
        key = (replica.topic, replica.partition)
        registration = replica.registration
        if key in self.proposals or registration is None or not replica.is_leader:
            return False
        proposal = Proposal(replica, isr, replica.leader_epoch, registration.partition_epoch, recovery_state)
        self.proposals[key] = proposal
        replica.pending_isr = isr
        if self.hooks.fire("replica.delay_alter_partition"):
            # A rare legal path: the proposal stays pending (as if its first send were lost) and
            # goes out after the backoff, so a leader change may come first.
            proposal.retry_at_ms = self._now_ms + self.retry_backoff_ms * DELAY_BACKOFFS
            return True
        self._send(proposal)
        return True

    def forget(self, topic: str, partition: int) -> None:
        """The partition changed leader or went away: its proposal no longer matters."""
        proposal = self.proposals.pop((topic, partition), None)
        if proposal is not None and proposal.replica.pending_isr == proposal.isr:
            proposal.replica.pending_isr = None

    def _send(self, proposal: Proposal) -> None:
        proposal.retry_at_ms = None
        replica = proposal.replica
        me = self.cluster.broker(self.cluster.node_id)

        def epoch_of(node: int) -> int:
            follower = replica.followers.get(node)
            if follower is not None and follower.broker_epoch >= 0:
                return follower.broker_epoch
            broker = self.cluster.broker(node)
            return broker.epoch if broker is not None else -1

        body = messages.AlterPartitionRequest(
            broker_id=self.cluster.node_id,
            broker_epoch=me.epoch if me is not None else -1,
            topics=[
                messages.AlterPartitionRequestTopicData(
                    topic_id=replica.topic_id,
                    partitions=[
                        messages.AlterPartitionRequestPartitionData(
                            partition_index=replica.partition,
                            leader_epoch=proposal.leader_epoch,
                            new_isr_with_epochs=[
                                messages.AlterPartitionRequestBrokerState(
                                    broker_id=r, broker_epoch=epoch_of(r)
                                )
                                for r in proposal.isr
                            ],
                            leader_recovery_state=int(proposal.recovery_state),
                            partition_epoch=proposal.partition_epoch,
                        )
                    ],
                )
            ],
        )

        def on_reply(reply: Message | None, now_ms: int) -> None:
            self._on_reply(proposal, reply, now_ms)

        self.cluster.send(
            Outbound(self.cluster.controller_id, self.cluster.controller_listener, body, on_reply)
        )

    def _on_reply(self, proposal: Proposal, reply: Message | None, now_ms: int) -> None:
        self._now_ms = now_ms
        replica = proposal.replica
        key = (replica.topic, replica.partition)
        if self.proposals.get(key) is not proposal:
            return  # forgotten meanwhile
        if not isinstance(reply, messages.AlterPartitionResponse) or reply.error_code:
            proposal.retry_at_ms = now_ms + self.retry_backoff_ms
            return
        for topic in reply.topics:
            for data in topic.partitions:
                if data.partition_index != replica.partition:
                    continue
                if topic.topic_name not in ("", replica.topic) and topic.topic_id != replica.topic_id:
                    continue
                if data.error_code in RESET_ERRORS:
                    del self.proposals[key]
                    if replica.pending_isr == proposal.isr:
                        replica.pending_isr = None
                elif data.error_code in DROP_ERRORS:
                    del self.proposals[key]  # pending until the metadata tells
                elif data.error_code:
                    proposal.retry_at_ms = now_ms + self.retry_backoff_ms
                else:
                    del self.proposals[key]
                    if data.leader_epoch == replica.leader_epoch and replica.is_leader:
                        replica.isr_committed(
                            tuple(data.isr),
                            data.partition_epoch,
                            now_ms,
                            LeaderRecoveryState(data.leader_recovery_state),
                        )
                    # else another leader epoch: pending until the metadata tells
                return
        proposal.retry_at_ms = now_ms + self.retry_backoff_ms  # the answer did not name it

    def tick(self, now_ms: int) -> None:
        self._now_ms = now_ms
        for proposal in list(self.proposals.values()):
            if proposal.retry_at_ms is not None and proposal.retry_at_ms <= now_ms:
                registration = proposal.replica.registration
                if not proposal.replica.is_leader or registration is None:
                    self.forget(proposal.replica.topic, proposal.replica.partition)
                    continue
                proposal.leader_epoch = proposal.replica.leader_epoch
                proposal.partition_epoch = registration.partition_epoch
                self._send(proposal)

    def next_deadline_ms(self) -> int | None:
        due = [p.retry_at_ms for p in self.proposals.values() if p.retry_at_ms is not None]
        return min(due) if due else None
