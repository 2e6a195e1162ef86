"""What a leader knows of its followers: each one's fetch state (Kafka's ``Replica``), kept while
it leads, and the questions the ISR rules ask of them (who lags, how far the high watermark may
go, the low watermark).

:class:`Followers` owns the states of one leader replica's followers; the replica
(``partition.replica``) owns the ISR, its pending change and the high watermark, and asks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Final

from kafka_wire.quick_dataclass import dataclass

#: Kafka's ``replica.lag.time.max.ms`` default.
DEFAULT_REPLICA_LAG_TIME_MAX_MS: Final = 30_000
UNKNOWN_OFFSET: Final = -1


@dataclass(slots=True)
class FollowerState:
    """What a leader knows of one follower (Kafka's ``Replica``): updated on each of its fetches."""

    node_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    #: The leader's log end offset when the follower last fetched.
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    broker_epoch: int = -1

    def update(
        self, fetch_offset: int, log_start: int, now_ms: int, leader_leo: int, broker_epoch: int
    ) -> None:
        """A fetch at ``fetch_offset``: caught up at this fetch if it reached the leader's log
        end, else at the previous fetch if it reached the leader's log end of then."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms
        self.broker_epoch = broker_epoch

    def is_caught_up(self, leader_leo: int, now_ms: int, lag_max_ms: int) -> bool:
        return self.log_end_offset == leader_leo or now_ms - self.last_caught_up_ms <= lag_max_ms


class Followers:
    """The fetch states of the followers of the replica on node ``leader_id`` (none while it
    does not lead), and ``replica.lag.time.max.ms``."""

    __slots__ = ("_states", "lag_max_ms", "leader_id")

    def __init__(self, leader_id: int, lag_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS) -> None:
        self.leader_id = leader_id
        self.lag_max_ms = lag_max_ms
        self._states: dict[int, FollowerState] = {}

    def states(self) -> tuple[FollowerState, ...]:
        return tuple(self._states.values())

    def get(self, node_id: int) -> FollowerState | None:
        return self._states.get(node_id)

    def clear(self) -> None:
        """Not leading: no follower state is kept."""
        self._states = {}

    def restart(self, replicas: Iterable[int], isr: Collection[int], now_ms: int) -> None:
        """A new leader epoch: every follower starts afresh, those in ``isr`` caught up now."""
        self._states = {
            r: FollowerState(r, last_caught_up_ms=now_ms if r in isr else 0)
            for r in replicas
            if r != self.leader_id
        }

    def follow_assignment(self, replicas: Collection[int]) -> None:
        """The same epoch with ``replicas`` assigned: new followers get a state, removed ones lose it."""
        for r in replicas:
            if r != self.leader_id and r not in self._states:
                self._states[r] = FollowerState(r)
        for r in [r for r in self._states if r not in replicas]:
            del self._states[r]

    def record_fetch(
        self, node_id: int, fetch_offset: int, log_start: int, now_ms: int, leader_leo: int, broker_epoch: int
    ) -> FollowerState:
        """A fetch from ``node_id`` (its state is made when it has none)."""
        follower = self._states.get(node_id)
        if follower is None:
            follower = self._states[node_id] = FollowerState(node_id)
        follower.update(fetch_offset, log_start, now_ms, leader_leo, broker_epoch)
        return follower

    def lagging(self, isr: Iterable[int], leader_leo: int, now_ms: int) -> list[int]:
        """Members of ``isr`` (other than the leader) that lag more than ``lag_max_ms``."""
        out = []
        for r in isr:
            if r == self.leader_id:
                continue
            follower = self._states.get(r)
            if follower is None or not follower.is_caught_up(leader_leo, now_ms, self.lag_max_ms):
                out.append(r)
        return out

    def high_watermark_bound(
        self,
        leader_leo: int,
        maximal_isr: Collection[int],
        now_ms: int,
        isr_eligible: Callable[[FollowerState], bool],
    ) -> int:
        """The smallest log end offset over the leader and the followers Kafka's
        ``maybeIncrementLeaderHW`` counts: those in the maximal ISR, and those caught up and
        eligible to join it."""
        bound = leader_leo
        for follower in self._states.values():
            counted = follower.node_id in maximal_isr or (
                follower.is_caught_up(leader_leo, now_ms, self.lag_max_ms) and isr_eligible(follower)
            )
            if counted and follower.log_end_offset < bound:
                bound = follower.log_end_offset
        return bound

    def low_watermark(self, leader_log_start: int, maximal_isr: Iterable[int]) -> int:
        """The smallest log start offset over the leader and its maximal ISR (DeleteRecords)."""
        low = leader_log_start
        for r in maximal_isr:
            follower = self._states.get(r)
            if r != self.leader_id and follower is not None:
                low = min(low, follower.log_start_offset)
        return low
