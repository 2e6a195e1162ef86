"""When the broker's logs get their maintenance (flushes, rolls, retention, cleaning), on the
engine's :class:`~kafka_wire.broker.timers.TimerQueue`.

Each log's next deadline (``PartitionLog.next_deadline_ms``) is put in the queue, keyed
``("log", topic, partition)``, whenever the log was touched in a call (appended to, opened,
maintained): a log that nobody touched keeps its deadline. Every ``log.retention.check.interval.ms``
all logs are maintained as well (Kafka's periodic retention check).
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.state import BrokerState
from kafka_wire.broker.timers import TimerKey, TimerQueue

#: The owner of the log timers in the engine's queue.
LOG_TIMERS: Final = "log"
#: The periodic retention check over every log.
RETENTION_CHECK: Final[TimerKey] = ("broker", "retention check")


class LogMaintenance:
    """Log deadlines in the queue, and the maintenance that runs when they pass."""

    def __init__(self, timers: TimerQueue, retention_check_interval_ms: int) -> None:
        self._timers = timers
        self._interval_ms = retention_check_interval_ms

    def start(self, now_ms: int) -> None:
        self._timers.schedule(RETENTION_CHECK, now_ms + self._interval_ms)

    def arm(self, state: BrokerState) -> None:
        """Put the deadlines of the logs touched in this call in the queue."""
        for topic, partition in state.touched:
            replica = state.partitions.get((topic, partition))
            key = (LOG_TIMERS, topic, partition)
            deadline = None if replica is None else replica.log.next_deadline_ms()
            if deadline is None:
                self._timers.cancel(key)
            elif self._timers.deadline_of(key) != deadline:
                self._timers.schedule(key, deadline)

    def run_due(self, state: BrokerState, now_ms: int) -> None:
        """Maintain the logs whose deadline passed, or every log when the periodic check is due."""
        periodic = False
        while (due := self._timers.pop_due(now_ms, "broker")) is not None:
            periodic = periodic or due.key == RETENTION_CHECK
        if periodic:
            self._timers.schedule(RETENTION_CHECK, now_ms + self._interval_ms)
            self._timers.clear(LOG_TIMERS)
            replicas = list(state.partitions.values())
        else:
            replicas = []
            while (due := self._timers.pop_due(now_ms, LOG_TIMERS)) is not None:
                _, topic, partition = due.key
                assert isinstance(topic, str) and isinstance(partition, int)
                replica = state.partitions.get((topic, partition))
                if replica is not None:
                    replicas.append(replica)
        for replica in replicas:
            replica.log.maintain(
                now_ms,
                high_watermark=replica.high_watermark,
                stable_offset=replica.last_stable_offset,
                producers=replica.producers.active,
            )
            replica.producers.truncate_before(replica.log_start_offset)
            replica.producer_log.prune(replica.log)
            state.touch(replica)
