"""The replica role machine: every (role, input) pair, epochs, and the leader epoch cache."""

from __future__ import annotations

import pytest

from kafka_wire.broker.partition.roles import REPLICA_TRANSITIONS, Leadership, ReplicaRole, RoleInput
from kafka_wire.errors import LocalProtocolError


def in_role(role: ReplicaRole) -> Leadership:
    leadership = Leadership(1)
    if role is ReplicaRole.FOLLOWER:
        leadership.become_follower(1, leader_id=2)
    elif role is ReplicaRole.OFFLINE:
        leadership.go_offline()
    assert leadership.role is role
    return leadership


@pytest.mark.parametrize("role", list(ReplicaRole), ids=lambda r: r.name)
@pytest.mark.parametrize("move", list(RoleInput), ids=lambda m: m.name)
def test_every_role_and_input(role: ReplicaRole, move: RoleInput) -> None:
    leadership = in_role(role)
    calls = {
        RoleInput.BECOME_LEADER: lambda: leadership.become_leader(leadership.epoch + 1, 10),
        RoleInput.BECOME_FOLLOWER: lambda: leadership.become_follower(leadership.epoch + 1, 3),
        RoleInput.GO_OFFLINE: leadership.go_offline,
    }
    if (role, move) in REPLICA_TRANSITIONS:
        calls[move]()
        assert leadership.role is REPLICA_TRANSITIONS[role, move]
    else:
        with pytest.raises(LocalProtocolError, match=role.name):
            calls[move]()


def test_epochs_only_move_forward() -> None:
    leadership = Leadership(1)
    leadership.become_follower(3, leader_id=2)
    with pytest.raises(LocalProtocolError):
        leadership.become_follower(2, leader_id=2)
    with pytest.raises(LocalProtocolError):
        leadership.become_leader(0, 5)
    leadership.become_leader(4, 50)
    assert (leadership.role, leadership.epoch, leadership.leader_id) == (ReplicaRole.LEADER, 4, 1)


def test_end_offset_for_an_epoch_follows_kafkas_rule() -> None:
    leadership = Leadership(1)  # epoch 0 from offset 0
    leadership.become_follower(1, leader_id=2)
    leadership.become_leader(2, 40)
    leadership.become_leader(5, 90)
    log_end = 120
    assert leadership.end_offset_for(0, log_end) == (0, 40)
    assert leadership.end_offset_for(1, log_end) == (0, 40)  # epoch 1 was never led here
    assert leadership.end_offset_for(2, log_end) == (2, 90)
    assert leadership.end_offset_for(4, log_end) == (2, 90)
    assert leadership.end_offset_for(5, log_end) == (5, 120)
    assert leadership.end_offset_for(9, log_end) == (-1, -1)  # above the latest: undefined, as Kafka
