"""The ``quorum-state`` file: the epoch, the known leader and this voter's vote, as Kafka keeps it.

Kafka writes it in the metadata partition's directory as JSON (``data_version`` 0:
``clusterId``, ``leaderId``, ``leaderEpoch``, ``votedId``, ``appliedOffset``, ``currentVoters``)
through a ``quorum-state.tmp`` file renamed over the old one, so a crash leaves the old or the new
state, never half of one. Version 1 files (Kafka 3.8+, with ``votedDirectoryId`` and no voters)
are read too. The vote is written, and fsynced, before the answer granting it leaves.
"""

from __future__ import annotations

import json

from kafka_wire.broker.effects import EffectSink, Fsync, Rename, Truncate, WriteAt
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import InvalidValueError
from kafka_wire.quick_dataclass import dataclass

QUORUM_STATE_FILE = "quorum-state"
QUORUM_STATE_TMP = "quorum-state.tmp"
#: No leader / no vote, as the file writes it.
NO_NODE = -1


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What ``quorum-state`` holds: the epoch, its leader (-1: unknown) and this node's vote (-1: none)."""

    epoch: int = 0
    leader_id: int = NO_NODE
    voted_id: int = NO_NODE


def encode_quorum_state(state: ElectionState, voters: tuple[int, ...]) -> bytes:
    """The file's bytes (``data_version`` 0, Kafka's field order)."""
    document = {
        "clusterId": "",
        "leaderId": state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in sorted(voters)],
        "data_version": 0,
    }
    return json.dumps(document, separators=(",", ":")).encode()


def decode_quorum_state(data: bytes) -> ElectionState:
    """Parse the file; a malformed one raises :class:`InvalidValueError`."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidValueError(f"quorum-state is not JSON: {e}", message="quorum-state") from None
    if not isinstance(document, dict):
        raise InvalidValueError("quorum-state is not a JSON object", message="quorum-state")
    values: list[int] = []
    for key, default in (("leaderEpoch", 0), ("leaderId", NO_NODE), ("votedId", NO_NODE)):
        value = document.get(key, default)
        if type(value) is not int:
            raise InvalidValueError(f"quorum-state field {key} is not an integer", message="quorum-state")
        values.append(value)
    epoch, leader_id, voted_id = values
    if epoch < 0:
        raise InvalidValueError(f"quorum-state has a negative epoch {epoch}", message="quorum-state")
    return ElectionState(epoch, max(leader_id, NO_NODE), max(voted_id, NO_NODE))


def read_quorum_state(storage: StorageReader, directory: str) -> ElectionState | None:
    """The stored state, or None when there is no file yet."""
    path = f"{directory}/{QUORUM_STATE_FILE}"
    size = storage.size(path)
    if size is None:
        return None
    return decode_quorum_state(storage.read(path, 0, size))


def write_quorum_state(
    effects: EffectSink, directory: str, state: ElectionState, voters: tuple[int, ...]
) -> None:
    """Emit the effects replacing the file atomically (write a temporary file, fsync, rename)."""
    data = encode_quorum_state(state, voters)
    tmp = f"{directory}/{QUORUM_STATE_TMP}"
    effects.emit(WriteAt(tmp, 0, data))
    effects.emit(Truncate(tmp, len(data)))
    effects.emit(Fsync(tmp))
    effects.emit(Rename(tmp, f"{directory}/{QUORUM_STATE_FILE}"))
