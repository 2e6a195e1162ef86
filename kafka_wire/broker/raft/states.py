"""The roles a KRaft replica moves between, as one transition table.

A voter starts Unattached (or where its ``quorum-state`` file left it), votes (Voted), stands for
election (Candidate), leads (Leader), follows (Follower) or steps down (Resigned). An observer is
only ever Unattached or Follower. Every move goes through :data:`QUORUM_TRANSITIONS` with
:func:`kafka_wire.protocol.machine.step`; a move the table lacks is a bug and raises.
"""

from __future__ import annotations

import enum
from typing import Final


class QuorumRole(enum.Enum):
    UNATTACHED = "unattached"
    VOTED = "voted"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


class QuorumInput(enum.Enum):
    #: A higher epoch was seen with no known leader (or an observer lost its leader).
    NEW_EPOCH = "new epoch"
    #: This voter granted its vote in the current epoch.
    GRANT_VOTE = "grant vote"
    #: The election (or fetch) timeout passed: stand for election in a new epoch.
    ELECTION_TIMEOUT = "election timeout"
    #: A majority of voters granted their votes.
    ELECTED = "elected"
    #: A leader became known (BeginQuorumEpoch, a Fetch or Vote answer, the quorum-state file).
    LEADER_KNOWN = "leader known"
    #: The leader steps down (graceful shutdown, or no fetches from a majority).
    RESIGN = "resign"


_R = QuorumRole
_I = QuorumInput

QUORUM_TRANSITIONS: Final[dict[tuple[QuorumRole, QuorumInput], QuorumRole]] = {
    **{(role, _I.NEW_EPOCH): _R.UNATTACHED for role in _R},
    **{(role, _I.LEADER_KNOWN): _R.FOLLOWER for role in _R},
    (_R.UNATTACHED, _I.GRANT_VOTE): _R.VOTED,
    (_R.UNATTACHED, _I.ELECTION_TIMEOUT): _R.CANDIDATE,
    (_R.VOTED, _I.ELECTION_TIMEOUT): _R.CANDIDATE,
    (_R.CANDIDATE, _I.ELECTION_TIMEOUT): _R.CANDIDATE,
    (_R.FOLLOWER, _I.ELECTION_TIMEOUT): _R.CANDIDATE,
    (_R.RESIGNED, _I.ELECTION_TIMEOUT): _R.CANDIDATE,
    (_R.CANDIDATE, _I.ELECTED): _R.LEADER,
    (_R.LEADER, _I.RESIGN): _R.RESIGNED,
}
"""Where each input leads. LEADER_KNOWN from LEADER only at a higher epoch (the caller checks)."""
