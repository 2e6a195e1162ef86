"""The engine's one timer queue (kafka_wire.broker.timers)."""

from __future__ import annotations

from kafka_wire.broker.group import GroupConfig, GroupCoordinator
from kafka_wire.broker.timers import DueTimer, TimerQueue


def _drain(queue: TimerQueue, now_ms: int, owner: object | None = None) -> list[DueTimer]:
    fired: list[DueTimer] = []
    while (due := queue.pop_due(now_ms, owner)) is not None:
        fired.append(due)
    return fired


def test_due_in_deadline_order_then_scheduling_order() -> None:
    queue = TimerQueue()
    queue.schedule(("log", "a", 0), 30)
    queue.schedule(("group", "join", "g", ""), 10, (5, 7))
    queue.schedule(("connection", 1), 10)
    assert queue.next_deadline_ms() == 10
    assert _drain(queue, 9) == []
    fired = _drain(queue, 30)
    assert [d.key for d in fired] == [("group", "join", "g", ""), ("connection", 1), ("log", "a", 0)]
    assert fired[0].payload == (5, 7) and fired[0].deadline_ms == 10
    assert queue.next_deadline_ms() is None and len(queue) == 0


def test_rescheduling_moves_and_cancel_drops() -> None:
    queue = TimerQueue()
    queue.schedule(("connection", 1), 10)
    queue.schedule(("connection", 1), 50)  # renewed: the earlier deadline is gone
    queue.schedule(("connection", 2), 20)
    queue.cancel(("connection", 2))
    queue.cancel(("connection", 3))  # not scheduled: nothing happens
    assert queue.deadline_of(("connection", 1)) == 50
    assert ("connection", 2) not in queue
    assert queue.next_deadline_ms() == 50
    assert _drain(queue, 49) == []
    assert [d.key for d in _drain(queue, 50)] == [("connection", 1)]


def test_owners_take_only_their_own_timers() -> None:
    queue = TimerQueue()
    queue.schedule(("connection", 1), 5)
    queue.schedule(("group", "heartbeat", "g", "m"), 8)
    assert queue.next_deadline_ms("group") == 8
    assert [d.key for d in _drain(queue, 100, "group")] == [("group", "heartbeat", "g", "m")]
    assert queue.next_deadline_ms() == 5  # the connection's timer is still there
    queue.clear("connection")
    assert queue.next_deadline_ms() is None


def test_a_fired_timer_may_schedule_one_due_in_the_same_loop() -> None:
    queue = TimerQueue()
    queue.schedule(("group", "retention", "", ""), 10)
    seen: list[int] = []
    while (due := queue.pop_due(25)) is not None:
        seen.append(due.deadline_ms)
        queue.schedule(due.key, due.deadline_ms + 10)  # re-arms from its own deadline
    assert seen == [10, 20]
    assert queue.next_deadline_ms() == 30


def test_memory_follows_live_timers_not_renewals() -> None:
    queue = TimerQueue()
    for now in range(10_000):
        queue.schedule(("connection", now % 3), now + 1000)  # an idle timer renewed per request
    assert len(queue) == 3
    assert sum(len(heap) for heap in queue._heaps.values()) <= 2 * 3 + 64 + 1
    assert [d.key for d in _drain(queue, 11_000)] == [("connection", 1), ("connection", 2), ("connection", 0)]


def test_the_group_coordinator_keeps_its_timers_in_the_queue_it_is_given() -> None:
    queue = TimerQueue()
    queue.schedule(("connection", 1), 10)
    coordinator = GroupCoordinator(GroupConfig(offsets_retention_check_interval_ms=5_000), timers=queue)
    assert coordinator.tick(1_000) == []
    assert queue.next_deadline_ms("group") == 6_000 == coordinator.next_deadline_ms()
    assert queue.next_deadline_ms() == 10  # the broker's next deadline covers both
    coordinator.tick(6_000)  # the retention check ran and re-armed itself
    assert queue.next_deadline_ms("group") == 11_000
    assert ("connection", 1) in queue  # another owner's timer is left alone
