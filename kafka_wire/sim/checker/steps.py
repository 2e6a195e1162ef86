"""The per-step invariants (ENGINE-NOTES §7), checked after every event on snapshots of every
live node (``observe.py``). Each check costs a few dict operations per replica.

What is tracked across steps, and why:

- the highest leader high watermark ever seen per partition, and the epochs of the committed
  records below it (the leader's epoch cache cut at its HW); #3: a replica whose log end offset
  *falls* below it truncated committed data, unless the records it dropped there were not the
  committed ones. Two logs hold the same record at an offset when they hold it in the same leader
  epoch (one leader per epoch, KIP-101), so the replica's epoch cache before the truncation tells
  up to where it held the committed prefix; a replica that led or followed an epoch whose records
  never committed (a diverging suffix) truncates it legally, even below the committed offset;
- each replica's last log end offset, leader epoch and partition epoch (#3, #7), forgotten when
  its node loses storage (power loss, a disk fault: ``NodeLike.storage_losses``), whose own
  truncation is then expected; such a replica is also exempt from #5 until it has caught up;
- each leader's high watermark per leader epoch (#4 monotonic, #5 frozen below min ISR);
- the leader of each (partition, leader epoch) ever seen (#7);
- per node, each partition's registration in its metadata image when the image last moved (#7 in
  the image, #10 no fenced broker joins an ISR, #11 a new leader comes from the previous ISR);
- the raft quorum: one leader per epoch, epochs and the high watermark monotonic per node, a
  majority of voters' logs reaching the leader's high watermark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from kafka_wire.broker.cluster_view import PartitionState
from kafka_wire.sim.checker.observe import RaftSnap, ReplicaSnap, TopicPartition, is_recovering
from kafka_wire.sim.contracts import Violation


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass(slots=True)
class _ImagePartition:
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    eligible: tuple[int, ...]


@dataclass(slots=True)
class StepChecker:
    """Per-step invariants over replica, raft and image snapshots (see the module docstring)."""

    unclean_allowed: bool = False
    #: Partitions that had an unclean election (their lost writes are expected, not violations).
    unclean: dict[TopicPartition, int] = field(default_factory=dict)
    _max_hw: dict[TopicPartition, int] = field(default_factory=dict)
    #: The ``(epoch, start offset)`` entries of the committed records below ``_max_hw``.
    _committed_epochs: dict[TopicPartition, list[tuple[int, int]]] = field(default_factory=dict)
    _leo: dict[tuple[int, TopicPartition], int] = field(default_factory=dict)
    _epochs: dict[tuple[int, TopicPartition], tuple[int, int]] = field(default_factory=dict)
    _leader_hw: dict[tuple[int, TopicPartition], tuple[int, int, bool]] = field(default_factory=dict)
    _leaders: dict[tuple[TopicPartition, int], int] = field(default_factory=dict)
    _caches: dict[tuple[int, TopicPartition], list[tuple[int, int]]] = field(default_factory=dict)
    #: Nodes that lost storage, and the replicas of theirs not yet caught up since.
    _lossy: dict[int, set[TopicPartition]] = field(default_factory=dict)
    #: The same, judged by each leader's record of the node's last fetch to it: the
    #: ``(leader, partition)`` records caught up. A record catches up after the node's own log
    #: has (the fetch that brought the records back was sent from below), a record from before
    #: the loss tells nothing, and one leader's record says nothing of another's: a fetch the
    #: node sent from below to a leader it no longer follows may reach it after the node caught
    #: up on its new leader (seed 2609).
    _lossy_fetch: dict[int, set[tuple[int, TopicPartition]]] = field(default_factory=dict)
    _losses: dict[int, int] = field(default_factory=dict)
    _images: dict[int, dict[TopicPartition, _ImagePartition]] = field(default_factory=dict)
    _image_offsets: dict[int, int] = field(default_factory=dict)
    _raft_leaders: dict[int, int] = field(default_factory=dict)
    _raft: dict[int, tuple[int, int]] = field(default_factory=dict)
    _raft_leo: dict[int, int] = field(default_factory=dict)
    _raft_lossy: set[int] = field(default_factory=set)
    _unclean_seen: set[tuple[TopicPartition, int]] = field(default_factory=set)

    # -- storage losses ---------------------------------------------------------------------------
    def note_losses(self, node_id: int, count: int) -> None:
        """``count`` storage losses so far on ``node_id``: a new one forgets what its logs held."""
        if count <= self._losses.get(node_id, 0):
            return
        self._losses[node_id] = count
        for key in [k for k in self._leo if k[0] == node_id]:
            del self._leo[key]
        for key in [k for k in self._epochs if k[0] == node_id]:
            del self._epochs[key]
        for key in [k for k in self._caches if k[0] == node_id]:
            del self._caches[key]
        self._lossy[node_id] = set()  # no replica caught up yet
        self._lossy_fetch[node_id] = set()
        self._images.pop(node_id, None)
        self._image_offsets.pop(node_id, None)
        self._raft.pop(node_id, None)
        self._raft_leo.pop(node_id, None)
        self._raft_lossy.add(node_id)

    def restarted(self, node_id: int) -> None:
        """A new engine runs on ``node_id``: its leaders' high watermarks start again from the
        checkpoint (Kafka's HW is monotonic within one running log, and a restarted broker may
        lead the same epoch again with the lower HW it checkpointed)."""
        for key in [k for k in self._leader_hw if k[0] == node_id]:
            del self._leader_hw[key]

    def forget_image(self, node_id: int) -> None:
        """The node restarted: its new image is rebuilt from its log, from the start."""
        self._images.pop(node_id, None)
        self._image_offsets.pop(node_id, None)

    def _exempt(self, node_id: int, tp: TopicPartition) -> bool:
        """A replica on a node that lost storage and has not caught up since."""
        caught = self._lossy.get(node_id)
        return caught is not None and tp not in caught

    # -- partition replicas -----------------------------------------------------------------------
    def check_replicas(self, now_ms: int, snaps: Sequence[ReplicaSnap]) -> list[Violation]:
        out: list[Violation] = []
        max_hw = self._max_hw
        leos = self._leo
        for s in snaps:  # leaders first: the committed offsets this step
            if s.is_leader and s.high_watermark > max_hw.get(s.tp, 0) and s.tp not in self.unclean:
                max_hw[s.tp] = s.high_watermark
                self._committed_epochs[s.tp] = committed_lineage(
                    self._committed_epochs.get(s.tp, []), s.epoch_entries, s.high_watermark
                )
        for s in snaps:
            key = (s.node_id, s.tp)
            hw, leo = s.high_watermark, s.log_end_offset
            # 4: log start <= HW <= LEO
            if hw > leo:
                out.append(
                    Violation("hw-above-leo", now_ms, f"node {s.node_id} {_tp(s.tp)} hw {hw} > leo {leo}")
                )
            if s.log_start_offset > hw:
                out.append(
                    Violation(
                        "log-start-above-hw",
                        now_ms,
                        f"node {s.node_id} {_tp(s.tp)} log start {s.log_start_offset} > hw {hw}",
                    )
                )
            # 3: the committed prefix is never truncated
            committed = max_hw.get(s.tp, 0)
            before = leos.get(key)
            if (
                before is not None
                and leo < before
                and leo < committed
                and s.tp not in self.unclean
                and not self._exempt(s.node_id, s.tp)
            ):
                held = committed_prefix_held(
                    self._caches.get(key), self._committed_epochs.get(s.tp, []), min(before, committed)
                )
                if leo < held:
                    out.append(
                        Violation(
                            "committed-truncated",
                            now_ms,
                            f"node {s.node_id} {_tp(s.tp)} leo {before} -> {leo} below committed {committed}"
                            f" (it held the committed records up to {held})",
                        )
                    )
            leos[key] = leo
            caught = self._lossy.get(s.node_id)
            if caught is not None and s.tp not in caught and leo >= committed:
                caught.add(s.tp)
            # 7: epochs monotonic per replica
            if s.leader_epoch >= 0:
                seen = self._epochs.get(key)
                now = (s.leader_epoch, s.partition_epoch)
                if seen is not None and seen != now:
                    if now[0] < seen[0] or (now[0] == seen[0] and now[1] < seen[1]):
                        out.append(
                            Violation(
                                "epoch-regressed",
                                now_ms,
                                f"node {s.node_id} {_tp(s.tp)} (leader epoch, partition epoch) {seen} -> {now}",
                            )
                        )
                self._epochs[key] = now
            # 8: the epoch cache is increasing
            entries = s.epoch_entries
            if self._caches.get(key) is not entries:
                self._caches[key] = entries
                out += self._check_cache(now_ms, s)
        for s in snaps:  # once every replica's log end offset is known
            if s.is_leader:
                out += self._check_leader(now_ms, s)
        return out

    def _check_cache(self, now_ms: int, s: ReplicaSnap) -> list[Violation]:
        entries = s.epoch_entries
        for (e1, o1), (e2, o2) in pairwise(entries):
            if e2 <= e1 or o2 <= o1:
                return [
                    Violation("epoch-cache-not-monotonic", now_ms, f"node {s.node_id} {_tp(s.tp)} {entries}")
                ]
        if entries and entries[-1][1] > s.log_end_offset:
            return [
                Violation(
                    "epoch-cache-past-leo",
                    now_ms,
                    f"node {s.node_id} {_tp(s.tp)} {entries[-1]} beyond leo {s.log_end_offset}",
                )
            ]
        if s.is_leader and entries and entries[-1][0] > s.leader_epoch:
            return [
                Violation(
                    "epoch-cache-ahead",
                    now_ms,
                    f"node {s.node_id} {_tp(s.tp)} leads epoch {s.leader_epoch}, cache has {entries[-1]}",
                )
            ]
        return []

    def _check_leader(self, now_ms: int, s: ReplicaSnap) -> list[Violation]:
        out: list[Violation] = []
        key = (s.node_id, s.tp)
        # 7: one leader per (partition, leader epoch)
        other = self._leaders.setdefault((s.tp, s.leader_epoch), s.node_id)
        if other != s.node_id:
            out.append(
                Violation(
                    "two-leaders",
                    now_ms,
                    f"{_tp(s.tp)} epoch {s.leader_epoch} led by node {other} and node {s.node_id}",
                )
            )
        if not s.min_isr:  # a single-node replica: no ISR to check
            return out
        under = len(s.isr) < s.min_isr
        seen = self._leader_hw.get(key)
        if seen is not None and seen[0] == s.leader_epoch:
            # 4: the leader's HW is monotonic within its epoch
            if s.high_watermark < seen[1]:
                out.append(
                    Violation(
                        "hw-regressed",
                        now_ms,
                        f"node {s.node_id} {_tp(s.tp)} epoch {s.leader_epoch} hw {seen[1]} -> {s.high_watermark}",
                    )
                )
            # 5: the HW is frozen while the ISR is below min.insync.replicas
            elif s.high_watermark > seen[1] and under and seen[2]:
                out.append(
                    Violation(
                        "hw-advanced-under-min-isr",
                        now_ms,
                        f"node {s.node_id} {_tp(s.tp)} hw {seen[1]} -> {s.high_watermark} with isr {list(s.isr)}"
                        f" < min {s.min_isr}",
                    )
                )
        self._leader_hw[key] = (s.leader_epoch, s.high_watermark, under)
        # 5: every maximal-ISR member's log reaches the HW (its own log, and the leader's view of it)
        hw = s.high_watermark
        committed = self._max_hw.get(s.tp, 0)
        for node_id, leo in s.follower_leos:
            if node_id not in s.maximal_isr or leo < 0:
                continue
            caught = self._lossy_fetch.get(node_id)
            if caught is not None and (s.node_id, s.tp) not in caught:
                # A node that lost storage fetches from below the HW while the leader's metadata
                # still names it in the ISR (the controller's removal has not reached the leader).
                if leo >= committed and not self._exempt(node_id, s.tp):
                    caught.add((s.node_id, s.tp))
                continue
            if leo < hw:
                out.append(
                    Violation(
                        "hw-above-isr",
                        now_ms,
                        f"node {s.node_id} {_tp(s.tp)} hw {hw} > follower {node_id} fetch offset {leo}",
                    )
                )
        for member in s.maximal_isr:
            if member == s.node_id or self._exempt(member, s.tp):
                continue
            member_leo = self._leo.get((member, s.tp))
            if member_leo is not None and member_leo < hw:
                out.append(
                    Violation(
                        "hw-above-isr",
                        now_ms,
                        f"node {s.node_id} {_tp(s.tp)} hw {hw} > member {member} leo {member_leo}",
                    )
                )
        return out

    # -- metadata images --------------------------------------------------------------------------
    def check_image(
        self,
        now_ms: int,
        node_id: int,
        offset: int,
        partitions: Iterable[PartitionState],
        fenced: Callable[[int], bool],
    ) -> list[Violation]:
        """A node's image at ``offset`` (checked when it moved): epochs monotonic (#7), ISR
        additions unfenced (#10), new leaders from the previous ISR or ELR unless unclean (#11).
        #10 and #11 are judged on one change at a time only (the partition epoch moved by one:
        every change bumps it by one), since a node that applied several at once (a restart, a
        lagging node) shows only their sum."""
        if self._image_offsets.get(node_id) == offset:
            return []
        self._image_offsets[node_id] = offset
        known = self._images.setdefault(node_id, {})
        out: list[Violation] = []
        for state in partitions:
            tp = (state.topic, state.partition)
            eligible = state.isr + state.elr + state.last_known_elr
            now = _ImagePartition(
                state.leader, state.leader_epoch, state.partition_epoch, state.isr, eligible
            )
            was = known.get(tp)
            known[tp] = now
            if is_recovering(state):
                self.unclean.setdefault(tp, now_ms)
                if not self.unclean_allowed and (tp, state.leader_epoch) not in self._unclean_seen:
                    self._unclean_seen.add((tp, state.leader_epoch))
                    out.append(
                        Violation(
                            "unclean-election",
                            now_ms,
                            f"node {node_id} image {_tp(tp)} leader {state.leader} recovering",
                        )
                    )
            if was is None:
                continue
            if (now.leader_epoch, now.partition_epoch) < (was.leader_epoch, was.partition_epoch):
                out.append(
                    Violation(
                        "image-epoch-regressed",
                        now_ms,
                        f"node {node_id} image {_tp(tp)} epochs ({was.leader_epoch}, {was.partition_epoch})"
                        f" -> ({now.leader_epoch}, {now.partition_epoch})",
                    )
                )
                continue
            if now.partition_epoch != was.partition_epoch + 1:
                continue  # unchanged, or several changes seen at once: their steps are unknown
            if now.leader_epoch == was.leader_epoch:
                for member in now.isr:
                    if member not in was.isr and fenced(member):
                        out.append(
                            Violation(
                                "fenced-isr-join",
                                now_ms,
                                f"node {node_id} image {_tp(tp)} isr {list(now.isr)} adds fenced {member}",
                            )
                        )
            elif now.leader >= 0 and now.leader != was.leader and now.leader not in was.eligible:
                self.unclean.setdefault(tp, now_ms)
                if not self.unclean_allowed and (tp, now.leader_epoch) not in self._unclean_seen:
                    self._unclean_seen.add((tp, now.leader_epoch))
                    out.append(
                        Violation(
                            "unclean-election",
                            now_ms,
                            f"node {node_id} image {_tp(tp)} leader {now.leader} (epoch {now.leader_epoch})"
                            f" not in previous isr {list(was.isr)} or elr {list(was.eligible)}",
                        )
                    )
        return out

    # -- the raft quorum --------------------------------------------------------------------------
    def check_raft(
        self, now_ms: int, snaps: Sequence[RaftSnap], restarted: Iterable[int] = ()
    ) -> list[Violation]:
        """One leader per epoch; epoch and HW monotonic per node (a restarted node's HW starts
        again); a majority of voters' logs reach the leader's HW."""
        out: list[Violation] = []
        for node_id in restarted:
            seen = self._raft.get(node_id)
            if seen is not None:
                self._raft[node_id] = (seen[0], -1)
        for s in snaps:
            if s.is_leader:
                other = self._raft_leaders.setdefault(s.epoch, s.node_id)
                if other != s.node_id:
                    out.append(
                        Violation(
                            "raft-two-leaders",
                            now_ms,
                            f"epoch {s.epoch} led by node {other} and node {s.node_id}",
                        )
                    )
            seen = self._raft.get(s.node_id)
            if seen is not None:
                if s.epoch < seen[0]:
                    out.append(
                        Violation(
                            "raft-epoch-regressed", now_ms, f"node {s.node_id} epoch {seen[0]} -> {s.epoch}"
                        )
                    )
                if s.high_watermark < seen[1]:
                    out.append(
                        Violation(
                            "raft-hw-regressed",
                            now_ms,
                            f"node {s.node_id} hw {seen[1]} -> {s.high_watermark}",
                        )
                    )
            self._raft[s.node_id] = (s.epoch, s.high_watermark)
            self._raft_leo[s.node_id] = s.log_end_offset
        for s in snaps:
            if s.node_id in self._raft_lossy and s.log_end_offset >= max(
                (x.high_watermark for x in snaps if x.is_leader), default=0
            ):
                self._raft_lossy.discard(s.node_id)
        for s in snaps:
            if not s.is_leader or not s.voters:
                continue
            reached = sum(
                1 for v in s.voters if v in self._raft_lossy or self._raft_leo.get(v, -1) >= s.high_watermark
            )
            if reached * 2 <= len(s.voters):
                ends = {v: self._raft_leo.get(v, -1) for v in s.voters}
                out.append(
                    Violation(
                        "raft-hw-above-majority",
                        now_ms,
                        f"leader {s.node_id} epoch {s.epoch} hw {s.high_watermark}, voters' ends {ends}",
                    )
                )
        return out


def image_partitions(
    get: Callable[[str, int], PartitionState | None], topics: Sequence[tuple[str, int]]
) -> list[PartitionState]:
    """Each registered partition of ``topics`` through an image's ``partition`` lookup."""
    found: list[PartitionState] = []
    for name, count in topics:
        for index in range(count):
            state = get(name, index)
            if state is not None:
                found.append(state)
    return found


def fenced_of(brokers: Mapping[int, bool]) -> Callable[[int], bool]:
    return lambda node_id: brokers.get(node_id, True)


def committed_lineage(
    known: list[tuple[int, int]], leader_entries: Sequence[tuple[int, int]], high_watermark: int
) -> list[tuple[int, int]]:
    """The epochs of the committed records once a leader with ``leader_entries`` has committed
    up to ``high_watermark``: its entries below the HW, and the ``known`` ones below its first
    (where retention moved its log start)."""
    new = [(e, o) for e, o in leader_entries if o < high_watermark]
    if not new:
        return known
    return [(e, o) for e, o in known if o < new[0][1]] + new


def _epoch_at(entries: Sequence[tuple[int, int]], offset: int) -> int:
    found = -1
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found


def committed_prefix_held(
    entries: Sequence[tuple[int, int]] | None, committed: Sequence[tuple[int, int]], end: int
) -> int:
    """Up to which offset (at most ``end``) a replica whose epoch cache was ``entries`` held the
    committed records described by ``committed``: from its first entry on, the first offset whose
    epoch differs (a record of another epoch is another record). Unknown entries: ``end``."""
    if not entries or not committed:
        return end
    first = entries[0][1]
    points = sorted(
        {o for _, o in entries if first <= o < end} | {o for _, o in committed if first <= o < end}
    )
    for offset in points:
        if _epoch_at(entries, offset) != _epoch_at(committed, offset):
            return offset
    return end
