"""KRaft: the replicated ``__cluster_metadata`` log every node keeps, as a voter or an observer.

- :mod:`.voters`: ``controller.quorum.voters`` / ``controller.quorum.bootstrap.servers`` parsing.
- :mod:`.states`: the roles (Unattached, Voted, Candidate, Leader, Follower, Resigned) and the
  transition table between them.
- :mod:`.quorum_state`: the ``quorum-state`` file (epoch, leader, vote).
- :mod:`.snapshots`: ``<offset>-<epoch>.checkpoint`` snapshot files.
- :mod:`.replica`: :class:`KRaftReplica`, the replica itself (pure; see its docstring).
"""

from kafka_wire.broker.raft.committed import Committed, CommittedBatch, SnapshotLoad
from kafka_wire.broker.raft.config import METADATA_DIRECTORY, METADATA_TOPIC, METADATA_TOPIC_ID, RaftConfig
from kafka_wire.broker.raft.replica import KRaftReplica
from kafka_wire.broker.raft.replica_state import ReplicaProgress
from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.broker.raft.states import QuorumRole
from kafka_wire.broker.raft.voters import Voter, parse_bootstrap_servers, parse_voters

__all__ = [
    "METADATA_DIRECTORY",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "Committed",
    "CommittedBatch",
    "KRaftReplica",
    "QuorumRole",
    "RaftConfig",
    "ReplicaProgress",
    "SnapshotId",
    "SnapshotLoad",
    "Voter",
    "parse_bootstrap_servers",
    "parse_voters",
]
