"""The planted bugs the simulator can switch on, and its BUGGIFY hooks.

Each planted bug is a wrong branch beside the right code in the engine, taken only while the
engine's hooks (``kafka_wire.broker.buggify.Hooks``) say ``planted(name)``; :data:`BUGS` names them, with the
invariant of ENGINE-NOTES §7 that catches each (``kafka-wire simulate --list-bugs``).
:data:`POINTS` names the BUGGIFY points: rare but legal paths the engine takes on purpose when
``hooks.fire(point)`` says so.

:class:`SimHooks` are the hooks a simulated run builds every node's engine with
(``Broker(..., hooks=SimHooks(...))``): the bugs asked for are planted, and each BUGGIFY point is, FoundationDB-style, enabled for the whole
run with probability ``enable_probability`` and then fires at each visit with probability
``fire_probability``, all drawn from the run's buggify generator, so a run stays a pure function
of its seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Final

#: Planted bug name -> what it breaks, and the invariant (ENGINE-NOTES §7) that catches it.
BUGS: Final[dict[str, str]] = {
    "hw-without-isr": (
        "the leader moves its high watermark to its own log end offset without its ISR "
        "(#5 HW backed by ISR; #2 lost-write after a failover)"
    ),
    "skip-truncation": (
        "a follower never asks its leader whether its log diverged (no DivergingEpoch), so it "
        "keeps an old leader's unreplicated suffix (#1 offset agreement, #9 truncation)"
    ),
    "unclean-election": (
        "the controller elects an out-of-sync live replica when the ISR is offline, with unclean "
        "election off (#11 election eligibility; #2 lost-write, #3 committed prefix truncated)"
    ),
    "ack-before-isr": (
        "acks=all is answered once the batch is appended on the leader, before the high "
        "watermark covers it (#2 lost-write)"
    ),
    "forget-producer-state": (
        "a broker opening a partition (a restart) rebuilds no idempotent producer state from "
        "the log, so a retried batch is appended again (#13 duplicate)"
    ),
    "serve-above-hw": (
        "consumer fetches return records above the high watermark, up to the log end offset "
        "(#12 read isolation; #1 inconsistent-offsets once they are truncated)"
    ),
    "offsets-not-loaded": (
        "a group coordinator loading a partition of __consumer_offsets (a restart, a new "
        "leadership) skips the committed offsets, so members start again from the beginning "
        "(#16 committed offsets regress)"
    ),
    "assign-before-revoke": (
        "a KIP-848 coordinator gives a member a partition of its target while another member "
        "still owns it, before that member revoked it (#16 one owner per partition)"
    ),
    "marker-before-prepare": (
        "the transaction coordinator counts its __transaction_state writes as done once appended "
        "locally, so the EndTxn is answered and the markers written before the prepare record is "
        "replicated; a coordinator failover then forgets the decision and aborts (#14: lost-write, "
        "G1a)"
    ),
    "lso-ignores-open-txn": (
        "a partition's last stable offset is its high watermark even while a transaction is open "
        "in it, so read_committed consumers read transactions not yet decided (#12 read_committed "
        "isolation: precommitted-read, G1a)"
    ),
    "zombie-produce-accepted": (
        "a transactional batch of a producer epoch older than the partition's (a zombie fenced by a "
        "newer instance or a timeout's abort) is appended, and then ended by the newer epoch's "
        "marker (#14 zombie fencing: G1a)"
    ),
    "txn-offsets-before-commit": (
        "a group coordinator makes a transaction's offsets (TxnOffsetCommit) the group's committed "
        "offsets once written, before the transaction commits, and keeps them when it aborts, so a "
        "consume-transform-produce worker resumes past inputs whose outputs were aborted "
        "(#14 exactly-once: eos-lost)"
    ),
    "share-lock-ignored": (
        "a share-partition takes a lock past half its duration as run out, so a share fetch "
        "acquires a record another member still holds (KIP-932 share groups, beside #16 one owner: "
        "share-double-acquire)"
    ),
    "share-past-delivery-limit": (
        "a share-partition archives a released or timed-out record only one delivery past "
        "share.delivery.count.limit, so a poison record is delivered once too often "
        "(KIP-932 share groups, beside #16: share-delivery-limit)"
    ),
    "share-accepted-redelivered": (
        "an accepted record's acquisition lock still runs, and its end makes the record available "
        "again, so it is delivered after its accept was confirmed (KIP-932 share groups, beside #16: "
        "share-redelivered-accepted)"
    ),
    "no-epoch-bump": (
        "a partition change that names a new leader keeps the old leader epoch "
        "(#7 single leader per epoch; #8 epoch cache; #1 offset agreement)"
    ),
}

#: Planted bugs only a workload other than the default one exercises: bug -> the workload
#: (``kafka-wire simulate --workload``) that catches it.
BUG_WORKLOADS: Final[dict[str, str]] = {
    "marker-before-prepare": "txn",
    "lso-ignores-open-txn": "txn",
    "zombie-produce-accepted": "txn",
    "txn-offsets-before-commit": "txn",
    "share-lock-ignored": "share",
    "share-past-delivery-limit": "share",
    "share-accepted-redelivered": "share",
}

#: BUGGIFY point -> the rare legal path it forces.
POINTS: Final[dict[str, str]] = {
    "replica.delay_alter_partition": (
        "a leader's AlterPartition stays pending (its ISR counted as maximal) and is sent only "
        "after a retry backoff, so a leader change can overtake it"
    ),
    "replica.minimal_isr": (
        "a leader shrinks its ISR to min.insync.replicas members (itself first) although "
        "every member is caught up"
    ),
    "replica.delay_fetch": "a follower waits a fetch backoff before its next fetch round",
    "controller.early_rebalance": (
        "the controller runs its preferred-leader rebalance now, before the imbalance interval"
    ),
}

#: A BUGGIFY point is enabled for a run with this probability (FoundationDB uses 1/4)...
DEFAULT_ENABLE_PROBABILITY: Final = 0.25
#: ... and then fires at each visit with this one.
DEFAULT_FIRE_PROBABILITY: Final = 0.05


class SimHooks:
    """``buggify.Hooks`` for one simulated run: the planted ``bugs`` and the run's BUGGIFY draws.

    Points are enabled in the order first visited, one draw each, then one draw per visit of an
    enabled point; with ``buggify=False`` nothing fires and ``rng`` is never drawn from.
    """

    def __init__(
        self,
        rng: random.Random,
        bugs: Iterable[str] = (),
        *,
        buggify: bool = True,
        enable_probability: float = DEFAULT_ENABLE_PROBABILITY,
        fire_probability: float = DEFAULT_FIRE_PROBABILITY,
    ) -> None:
        self.bugs = frozenset(bugs)
        unknown = sorted(self.bugs - BUGS.keys())
        if unknown:
            raise ValueError(f"unknown planted bug(s): {', '.join(unknown)}")
        self.rng = rng
        self.buggify = buggify
        self.enable_probability = enable_probability
        self.fire_probability = fire_probability
        #: Point -> enabled for this run (decided at its first visit).
        self.enabled: dict[str, bool] = {}
        #: Point -> times it fired (for the run's figures).
        self.fired: dict[str, int] = {}

    def planted(self, bug: str) -> bool:
        return bug in self.bugs

    def fire(self, point: str) -> bool:
        if not self.buggify:
            return False
        enabled = self.enabled.get(point)
        if enabled is None:
            enabled = self.enabled[point] = self.rng.random() < self.enable_probability
        if not enabled or self.rng.random() >= self.fire_probability:
            return False
        self.fired[point] = self.fired.get(point, 0) + 1
        return True


__all__ = ["BUGS", "BUG_WORKLOADS", "POINTS", "SimHooks"]
