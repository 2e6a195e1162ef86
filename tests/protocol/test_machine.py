"""The state-machine core: move-or-ERROR over a table, and transitions through an injected logger."""

from __future__ import annotations

import enum
import logging

import pytest

from kafka_wire.broker.group.states import GroupInput, GroupState, transition
from kafka_wire.broker.partition.roles import Leadership
from kafka_wire.errors import LocalProtocolError, RemoteProtocolError
from kafka_wire.protocol import ClientConfig, ClientConnection
from kafka_wire.protocol.machine import LOGGER, StateMachine, Transition, step


class Light(enum.Enum):
    OFF = "OFF"
    ON = "ON"
    ERROR = "ERROR"


class Press(enum.Enum):
    SWITCH_ON = "switch on"
    SWITCH_OFF = "switch off"


TABLE = {(Light.OFF, Press.SWITCH_ON): Light.ON, (Light.ON, Press.SWITCH_OFF): Light.OFF}


def test_move_follows_the_table_and_logs_each_change() -> None:
    seen: list[Transition[Light, Press]] = []
    machine = StateMachine("lamp", TABLE, Light.OFF, error=Light.ERROR, logger=seen.append)
    assert machine.move(Press.SWITCH_ON) is Light.ON
    assert machine.can(Press.SWITCH_OFF) and not machine.can(Press.SWITCH_ON)
    assert machine.target(Press.SWITCH_OFF) is Light.OFF and machine.state is Light.ON  # target does not move
    assert [str(t) for t in seen] == ["lamp: OFF -> ON on switch on"]


@pytest.mark.parametrize("blame", [LocalProtocolError, RemoteProtocolError])
def test_a_move_missing_from_the_table_moves_to_error_and_raises(blame: type[LocalProtocolError]) -> None:
    seen: list[Transition[Light, Press]] = []
    machine = StateMachine("lamp", TABLE, Light.OFF, error=Light.ERROR, logger=seen.append)
    with pytest.raises(blame, match="lamp: 'switch off' is not allowed in state OFF"):
        machine.move(Press.SWITCH_OFF, blame)
    assert machine.failed and machine.state is Light.ERROR
    assert seen[-1].target is Light.ERROR and isinstance(seen[-1].cause, blame)
    with pytest.raises(LocalProtocolError, match="in state ERROR"):
        machine.move(Press.SWITCH_ON)


def test_the_default_logger_writes_debug_records(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=LOGGER.name):
        ClientConnection(ClientConfig(negotiate=False)).close()
    assert [r.getMessage() for r in caplog.records] == ["client connection: READY -> CLOSED on close"]


def test_a_logger_instance_can_be_injected(caplog: pytest.LogCaptureFixture) -> None:
    mine = logging.getLogger("tests.machine")
    with caplog.at_level(logging.DEBUG, logger="tests.machine"):
        ClientConnection(ClientConfig(negotiate=False), logger=mine).close()
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("tests.machine", "client connection: READY -> CLOSED on close")
    ]


def test_group_and_replica_roles_move_through_the_core(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=LOGGER.name):
        assert (
            transition(GroupState.EMPTY, GroupInput.PREPARE_REBALANCE, group="g1")
            is GroupState.PREPARING_REBALANCE
        )
        leadership = Leadership(node_id=1)
        leadership.become_follower(1, leader_id=2)
    assert [r.getMessage() for r in caplog.records] == [
        "group g1: EMPTY -> PREPARING_REBALANCE on prepare rebalance",
        "replica on node 1: LEADER -> FOLLOWER on become follower",
    ]
    with pytest.raises(LocalProtocolError, match="'delete' is not allowed in state STABLE"):
        transition(GroupState.STABLE, GroupInput.DELETE)


def test_step_is_the_stateless_form() -> None:
    assert step(TABLE, Light.OFF, Press.SWITCH_ON, machine="lamp") is Light.ON
    with pytest.raises(LocalProtocolError):
        step(TABLE, Light.ON, Press.SWITCH_ON, machine="lamp")
