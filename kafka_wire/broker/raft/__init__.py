"""KRaft: the replicated ``__cluster_metadata`` log every node keeps, as a voter or an observer.

- :mod:`.states`: the roles (Unattached, Voted, Candidate, Leader, Follower, Resigned) and the
  transition table between them.
- :mod:`.quorum_state`: the ``quorum-state`` file (epoch, leader, vote).
- :mod:`.snapshots`: ``<offset>-<epoch>.checkpoint`` snapshot files.
- :mod:`.config`: :class:`RaftConfig` and the metadata topic's names; :mod:`.committed`: what
  :meth:`KRaftReplica.take_committed` hands out.
- :class:`KRaftReplica`, the replica itself (pure), in layers, each module's class extending the
  previous one: :mod:`.replica_state` (fields, views), :mod:`.leader_fetch` (the leader's side of
  Fetch, the high watermark), :mod:`.transitions` (role changes), :mod:`.handlers` (answering
  requests), :mod:`.outbound` (requests to other nodes, the follower's side), :mod:`.replica`
  (start, append, commit, snapshots, timers; its docstring gives the rules).
"""

from kafka_wire.broker.cluster_settings import Voter
from kafka_wire.broker.raft.committed import Committed, CommittedBatch, SnapshotLoad
from kafka_wire.broker.raft.config import METADATA_DIRECTORY, METADATA_TOPIC, METADATA_TOPIC_ID, RaftConfig
from kafka_wire.broker.raft.replica import KRaftReplica
from kafka_wire.broker.raft.replica_state import ReplicaProgress
from kafka_wire.broker.raft.snapshots import SnapshotId
from kafka_wire.broker.raft.states import QuorumRole

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
]
