"""The roles a KRaft replica moves between, as one transition table.

A voter starts Unattached (or where its ``quorum-state`` file left it), votes (Voted), asks the
other voters whether they would vote for it without changing the epoch (Prospective: KIP-996's
pre-vote), stands for election in a new epoch (Candidate), leads (Leader), follows (Follower) or
steps down (Resigned). An observer is only ever Unattached or Follower. Every move goes through
:data:`QUORUM_TRANSITIONS` with :func:`kafka_wire.protocol.machine.step`; a move the table lacks
is a bug and raises.
"""

from __future__ import annotations

import enum
from typing import Final


class QuorumRole(enum.Enum):
    UNATTACHED = "unattached"
    VOTED = "voted"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


class QuorumInput(enum.Enum):
    #: A higher epoch was seen with no known leader (or an observer lost its leader).
    NEW_EPOCH = "new epoch"
    #: This voter granted its vote in the current epoch.
    GRANT_VOTE = "grant vote"
    #: The election (or fetch, or election backoff) timeout passed: ask for pre-votes.
    ELECTION_TIMEOUT = "election timeout"
    #: A majority of voters granted their pre-votes: stand for election in the next epoch.
    PRE_VOTES_GRANTED = "pre-votes granted"
    #: The pre-vote failed (a majority rejected it, or it timed out) and no leader is known.
    PRE_VOTES_LOST = "pre-votes lost"
    #: The same, for a prospective that granted its vote in this epoch meanwhile.
    PRE_VOTES_LOST_VOTED = "pre-votes lost, voted"
    #: A majority of voters granted their votes.
    ELECTED = "elected"
    #: A leader became known (BeginQuorumEpoch, a Fetch or Vote answer, the quorum-state file, or
    #: a failed pre-vote of a voter that knew its leader).
    LEADER_KNOWN = "leader known"
    #: The leader steps down (graceful shutdown, or no fetches from a majority).
    RESIGN = "resign"


_R = QuorumRole
_I = QuorumInput

QUORUM_TRANSITIONS: Final[dict[tuple[QuorumRole, QuorumInput], QuorumRole]] = {
    **{(role, _I.NEW_EPOCH): _R.UNATTACHED for role in _R},
    **{(role, _I.LEADER_KNOWN): _R.FOLLOWER for role in _R},
    (_R.UNATTACHED, _I.GRANT_VOTE): _R.VOTED,
    (_R.PROSPECTIVE, _I.GRANT_VOTE): _R.PROSPECTIVE,
    **{
        (role, _I.ELECTION_TIMEOUT): _R.PROSPECTIVE
        for role in (_R.UNATTACHED, _R.VOTED, _R.FOLLOWER, _R.CANDIDATE, _R.RESIGNED)
    },
    (_R.PROSPECTIVE, _I.PRE_VOTES_GRANTED): _R.CANDIDATE,
    (_R.PROSPECTIVE, _I.PRE_VOTES_LOST): _R.UNATTACHED,
    (_R.PROSPECTIVE, _I.PRE_VOTES_LOST_VOTED): _R.VOTED,
    (_R.CANDIDATE, _I.ELECTED): _R.LEADER,
    (_R.LEADER, _I.RESIGN): _R.RESIGNED,
}
"""Where each input leads. LEADER_KNOWN from LEADER only at a higher epoch (the caller checks)."""
