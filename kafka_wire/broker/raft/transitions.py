"""``QuorumTransitions``: the replica's moves between roles (:data:`.states.QUORUM_TRANSITIONS`),
each persisting the epoch, leader and vote to ``quorum-state`` and arming its role's timers."""

from __future__ import annotations

from kafka_wire import messages
from kafka_wire.broker.raft.leader_fetch import LeaderFetch
from kafka_wire.broker.raft.quorum_state import NO_NODE, ElectionState, write_quorum_state
from kafka_wire.broker.raft.replica_state import ReplicaProgress
from kafka_wire.broker.raft.states import QUORUM_TRANSITIONS, QuorumInput, QuorumRole
from kafka_wire.errors import LocalProtocolError
from kafka_wire.protocol.machine import step
from kafka_wire.records.control import ControlRecordType, build_control_batch


class QuorumTransitions(LeaderFetch):
    """Layer 3 of :class:`~kafka_wire.broker.raft.replica.KRaftReplica`: role transitions."""

    # -- transitions ------------------------------------------------------------------------------
    def _random_timeout(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self._rng.randrange(timeout)

    def _move(self, move: QuorumInput) -> None:
        self.role = step(
            QUORUM_TRANSITIONS, self.role, move, machine=f"raft node {self.node_id}", logger=self._logger
        )
        self._generation += 1
        self._appended.clear()  # a new role reads what it hands out from the log
        self._inflight.clear()
        self._retry_at.clear()
        self._election_deadline = self._fetch_deadline = self._check_quorum_deadline = None
        self._snapshot_fetch = None
        self._fetched_from_leader = False

    def _persist(self) -> None:
        write_quorum_state(
            self._effects,
            self.config.directory,
            ElectionState(self.epoch, self.leader_id, self.voted_id),
            self._voters,
        )

    def _become_unattached(self, epoch: int, now_ms: int) -> None:
        # Kafka's ``QuorumState.transitionToUnattached``: a voter that was waiting for an election
        # (Unattached, Voted, Candidate, or Prospective with its pre-vote not yet rejected) keeps
        # its running election timer, so the requests of a voter that cannot win do not put off
        # the others' elections; one coming from another role draws a new timeout.
        keeps = self.role in (QuorumRole.UNATTACHED, QuorumRole.VOTED, QuorumRole.CANDIDATE) or (
            self.role is QuorumRole.PROSPECTIVE and not self._majority_rejected()
        )
        running = self._election_deadline if keeps else None
        self._move(QuorumInput.NEW_EPOCH)
        if epoch != self.epoch:
            self.voted_id = NO_NODE
        self.epoch, self.leader_id = epoch, NO_NODE
        self._persist()
        if self.is_voter:
            self._election_deadline = running if running is not None else now_ms + self._random_timeout()

    def _become_voted(self, candidate: int, now_ms: int) -> None:
        """Grant this epoch's vote (Unattached, or Prospective, which goes on asking for pre-votes
        in a new round); the election timer restarts, as the candidate may well win."""
        self._move(QuorumInput.GRANT_VOTE)
        self.voted_id = candidate
        self._persist()
        self._granted, self._rejected = {self.node_id}, set()
        self._election_deadline = now_ms + self._random_timeout()

    def _majority_rejected(self) -> bool:
        return len(self._rejected) * 2 >= len(self._voters)

    def _become_prospective(self, now_ms: int) -> None:
        """Ask the voters for pre-votes in the current epoch (KIP-996): the epoch, leader and vote
        stay as they are and nothing is persisted."""
        retries = self._election_retries + 1 if self.role is QuorumRole.CANDIDATE else 1
        self._move(QuorumInput.ELECTION_TIMEOUT)
        self._election_retries = retries
        self._granted, self._rejected = {self.node_id}, set()
        self._election_deadline = now_ms + self._random_timeout()
        self._maybe_pre_elected(now_ms)

    def _maybe_pre_elected(self, now_ms: int) -> None:
        if self.role is QuorumRole.PROSPECTIVE and len(self._granted) * 2 > len(self._voters):
            self._become_candidate(now_ms)

    def _lose_pre_vote(self, now_ms: int) -> None:
        """The pre-vote failed: follow the leader this voter knew, else wait in this epoch for
        another election timeout (a new one when a majority rejected the pre-vote, else the
        expired one: it asks again at once)."""
        if self.leader_id >= 0:
            self._become_follower(self.leader_id, self.epoch, now_ms)
            return
        deadline = now_ms + self._random_timeout() if self._majority_rejected() else now_ms
        voted = self.voted_id >= 0
        self._move(QuorumInput.PRE_VOTES_LOST_VOTED if voted else QuorumInput.PRE_VOTES_LOST)
        self._persist()
        self._election_deadline = deadline

    def _become_candidate(self, now_ms: int) -> None:
        self._move(QuorumInput.PRE_VOTES_GRANTED)
        self.epoch += 1
        self.leader_id, self.voted_id = NO_NODE, self.node_id
        if self._voters != (self.node_id,):  # a lone voter is elected at once: its leader state,
            self._persist()  # written next with this epoch and vote, is the one write it needs
        self._granted, self._rejected = {self.node_id}, set()
        self._election_deadline = now_ms + self._random_timeout()
        self._maybe_elected(now_ms)

    def _maybe_elected(self, now_ms: int) -> None:
        if self.role is QuorumRole.CANDIDATE and len(self._granted) * 2 > len(self._voters):
            self._become_leader(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        self._move(QuorumInput.ELECTED)
        self.leader_id = self.node_id
        self._persist()
        log = self._log
        self._epoch_start_offset = log.log_end_offset
        message = messages.LeaderChangeMessage(
            version=0,
            leader_id=self.node_id,
            voters=[messages.LeaderChangeMessageVoter(voter_id=v) for v in self._voters],
            granting_voters=[messages.LeaderChangeMessageVoter(voter_id=v) for v in sorted(self._granted)],
        )
        control = build_control_batch(
            ControlRecordType.LEADER_CHANGE,
            message.encode(0),
            timestamp=now_ms,
            partition_leader_epoch=self.epoch,
        )
        result = log.append(control, now_ms, leader_epoch=self.epoch, origin="coordinator")
        if result.error_code:
            raise LocalProtocolError(
                f"the metadata log refused the LeaderChangeMessage ({result.error_code})"
            )
        self._remember(self._epoch_start_offset, None)
        self._note_epoch(self.epoch, self._epoch_start_offset)
        self._progress = {v: ReplicaProgress() for v in self._voters}
        self._acked = {self.node_id}
        self._quorum_fetched = {self.node_id}
        # A lone voter is its own majority: its quorum check never expires (Kafka's LeaderState).
        lone = len(self._voters) == 1
        self._check_quorum_deadline = None if lone else now_ms + self.config.fetch_timeout_ms * 3 // 2
        self._update_leader_progress(now_ms)

    def _become_follower(self, leader_id: int, epoch: int, now_ms: int) -> None:
        if self.role is QuorumRole.LEADER and epoch == self.epoch:
            raise LocalProtocolError(f"node {leader_id} claims epoch {epoch}, which this node leads")
        self._move(QuorumInput.LEADER_KNOWN)
        if epoch != self.epoch:
            self.voted_id = NO_NODE
        self.epoch, self.leader_id = epoch, leader_id
        self._persist()
        self._progress = {}
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms

    def _resign(self, now_ms: int, preferred: list[int]) -> None:
        self._move(QuorumInput.RESIGN)
        self._preferred = preferred
        self._acked = {self.node_id}
        self._progress = {}
        self._election_deadline = now_ms + self._random_timeout()

    def _maybe_transition(self, leader_id: int, epoch: int, now_ms: int) -> None:
        """React to another node's view of the epoch and its leader (Kafka's ``maybeTransition``)."""
        if epoch < self.epoch or leader_id == self.node_id:
            return
        if epoch > self.epoch:
            if leader_id >= 0:
                self._become_follower(leader_id, epoch, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
        elif leader_id >= 0 and self.leader_id != leader_id and self.role is not QuorumRole.LEADER:
            self._become_follower(leader_id, epoch, now_ms)
