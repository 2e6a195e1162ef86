"""The consume-transform-produce worker (``sim/clients/ctp_worker.py``) against one in-memory
broker: two workers (transaction versions 2 and 1) split an input topic, abort some of their
transactions and restart in others, and still write each input exactly once to the output that a
read_committed consumer reads, with their positions committed to the end."""

from __future__ import annotations

import random

from kafka_wire.sim.checker.ends import EndReport
from kafka_wire.sim.checker.eos import check_eos
from kafka_wire.sim.checker.txns import COMMITTED, check_txns, txn_outcomes
from kafka_wire.sim.clients.consumer import AssignConsumer
from kafka_wire.sim.clients.ctp_worker import CtpWorker
from kafka_wire.sim.clients.producer import Producer
from kafka_wire.sim.history import History, OpKind, OpType, input_of
from tests.sim.test_clients import ADDRESS, OneNode, _created


def _committed_positions(history: History) -> dict[int, int]:
    outcomes, _ = txn_outcomes(history)
    positions: dict[int, int] = {}
    for op in history.ops:
        if op.kind is OpKind.OFFSETS and outcomes.get(op.txn) == COMMITTED:
            positions[op.partition] = max(positions.get(op.partition, 0), op.offset)
    return positions


def test_workers_write_each_input_once_and_commit_their_positions() -> None:
    world = OneNode()
    _created(world)
    history = world.history
    producer = Producer(
        "p", history, random.Random(4), [ADDRESS], ["t1"], acks=-1, idempotent=True, interval_ms=40
    )
    workers = [
        CtpWorker(
            f"ctp-{i + 1}",
            history,
            random.Random(20 + i),
            [ADDRESS],
            "t1",
            "t2",
            "ctp",
            index=i,
            workers=2,
            version=version,
            commit_share=0.7,
            restart_share=0.3,
        )
        for i, version in enumerate((2, 1))
    ]
    reader = AssignConsumer("reader", history, random.Random(7), [ADDRESS], ["t2"], read_committed=True)
    for c in [producer, *workers, reader]:
        world.add(c)
    world.run(4_000)
    producer.quiesce(world.now_ms)
    world.run(10_000, until=producer.idle)
    acked = {o.value: o for o in history.ops if o.process == "p" and o.type is OpType.OK}
    ends = {p: max(o.offset for o in acked.values() if o.partition == p) + 1 for p in (0, 1, 2)}
    seen = [0]

    def caught_up() -> bool:  # looked at again only once the history grew
        if len(history.ops) == seen[0]:
            return False
        seen[0] = len(history.ops)
        return _committed_positions(history) == ends

    world.run(30_000, until=caught_up)
    assert _committed_positions(history) == ends
    for w in workers:
        w.quiesce(world.now_ms)
    world.run(10_000, until=lambda: all(w.idle() for w in workers))
    world.run(1_000)

    outputs = [
        input_of(value)
        for op in history.ops
        if op.kind is OpKind.POLL and op.process == "reader"
        for _, value in op.records
    ]
    assert sorted(v for v in outputs if v is not None) == sorted(acked)
    outcomes, _ = txn_outcomes(history)
    ended = [outcomes.get(o.txn) for o in history.ops if o.kind is OpKind.TXN and o.type is not OpType.INVOKE]
    assert COMMITTED in ended and len(set(ended)) > 1  # some transactions aborted, fenced or restarted
    resumed = [o for o in history.ops if o.kind is OpKind.POLL and o.error == "RESUMED"]
    assert len(resumed) > 3  # each worker started, then resumed after a transaction not committed
    report = EndReport()
    check_txns(history, {}, report)
    check_eos(history, {}, report)
    assert report.violations == []
