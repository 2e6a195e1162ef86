"""What every part of the group coordinator shares: its groups, its clock, its timers and the
effects of the call in progress.

Timers live in the engine's :class:`~kafka_wire.broker.timers.TimerQueue` under the owner
``"group"``, keyed ``("group", kind, group id, member id or "")``. Delays count from the
coordinator's time, which, while a due timer fires, is that timer's deadline (so that a late tick
acts as a punctual one would).
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.coordinator_keys import partition_for_group
from kafka_wire.broker.group.config import GroupConfig
from kafka_wire.broker.group.effects import GroupEffect, Respond
from kafka_wire.broker.group.model import (
    Group,
    Member,
    MemberIdFactory,
    PartitionsOf,
    TopicIdOf,
    TopicNameOf,
    Waiter,
)
from kafka_wire.broker.group.states import GroupInput, transition
from kafka_wire.broker.timers import TimerKey, TimerQueue
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ErrorCode

#: The owner of the coordinator's timers in the shared queue.
GROUP_TIMERS: Final = "group"
#: Timer kinds: the end of a join phase, of a sync phase, a member's session, offset retention.
JOIN: Final = "join"
SYNC: Final = "sync"
HEARTBEAT: Final = "heartbeat"
RETENTION: Final = "retention"
RETENTION_KEY: Final[TimerKey] = (GROUP_TIMERS, RETENTION, "", "")


def timer_key(kind: str, group_id: str, member_id: str = "") -> TimerKey:
    return (GROUP_TIMERS, kind, group_id, member_id)


class GroupRuntime:
    """The coordinator's shared state (see the module docstring)."""

    def __init__(
        self,
        config: GroupConfig,
        timers: TimerQueue,
        new_id: MemberIdFactory,
        topic_name_of: TopicNameOf | None,
        topic_id_of: TopicIdOf | None,
        partitions_of: PartitionsOf | None = None,
        hooks: Hooks = OFF,
    ) -> None:
        self.config = config
        #: The simulator's planted bugs (``buggify.OFF`` outside it).
        self.hooks = hooks
        self.timers = timers
        self.new_id = new_id
        self.topic_name_of = topic_name_of
        self.topic_id_of = topic_id_of
        self.partitions_of = partitions_of
        self.groups: dict[str, Group] = {}
        #: The ``__consumer_offsets`` partitions served (None: every one, as on a single node).
        self.served: set[int] | None = None
        #: Partitions being loaded: their groups are refused with COORDINATOR_LOAD_IN_PROGRESS.
        self.loading: set[int] = set()
        #: The latest time seen (None before the first call), or a firing timer's deadline.
        self.now: int | None = None
        #: The effects of the call in progress, in order.
        self.out: list[GroupEffect] = []

    @property
    def clock(self) -> int:
        now = self.now
        if now is None:
            raise LocalProtocolError("the group coordinator was used before it saw a time")
        return now

    def schedule(self, key: TimerKey, delay_ms: int, args: tuple[int, ...] = ()) -> None:
        """Fire ``key`` (see :func:`timer_key`) ``delay_ms`` from now, with ``args``."""
        self.timers.schedule(key, self.clock + max(delay_ms, 0), args)

    def cancel(self, key: TimerKey) -> None:
        self.timers.cancel(key)

    def arm_heartbeat(self, group: Group, member: Member, timeout_ms: int) -> None:
        self.schedule(timer_key(HEARTBEAT, group.group_id, member.member_id), timeout_ms)

    def partition_of(self, group_id: str) -> int:
        return partition_for_group(group_id, self.config.offsets_topic_num_partitions)

    def refusal(self, group_id: str) -> ErrorCode | None:
        """Why a request for ``group_id`` is not served here (None: it is)."""
        if self.served is None:
            return None
        partition = self.partition_of(group_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.served:
            return ErrorCode.NOT_COORDINATOR
        return None

    def serves(self, group_id: str) -> bool:
        return self.refusal(group_id) is None

    def take(self) -> list[GroupEffect]:
        out, self.out = self.out, []
        return out

    def respond(self, waiter: Waiter, body: Message) -> None:
        self.out.append(Respond(waiter.token, body))

    def transition(self, group: Group, move: GroupInput) -> None:
        target = transition(group.state, move)
        group.previous_state = group.state
        group.state = target
        group.state_timestamp_ms = self.clock

    def create_group(self, group_id: str) -> Group:
        group = self.groups[group_id] = Group(group_id, state_timestamp_ms=self.clock)
        return group

    def new_member_id(self, group: Group, prefix: str) -> str:
        while True:
            member_id = self.new_id(prefix)
            if member_id and member_id not in group.members and member_id not in group.pending_join:
                return member_id
