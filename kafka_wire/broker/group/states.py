"""The classic group's states and its transition table (STYLE §3.4).

:data:`GROUP_TRANSITIONS` is the whole machine: ``(state, input) -> state``. The coordinator moves a
group only through :func:`transition`, so a move missing from the table raises
:class:`~kafka_wire.errors.LocalProtocolError` (a bug in the coordinator, never a client's fault:
clients get Kafka error codes in their responses). ``docs/reference/state-machines.md`` draws the table
(``make docs``).

States (Kafka's ``ClassicGroupState``; ``name_in_kafka`` is what DescribeGroups/ListGroups report):

``EMPTY``
    no members; offsets may still be committed (simple consumers) and fetched.
``PREPARING_REBALANCE``
    a rebalance started; JoinGroups are held until every known member rejoined or the rebalance
    timeout (or, for a group that was empty, the initial rebalance delay) expires.
``COMPLETING_REBALANCE``
    the new generation exists; waiting for the leader's SyncGroup with the assignment.
``STABLE``
    the leader's assignment is stored and handed out.
``DEAD``
    the group was deleted; it is dropped from the coordinator right after the move.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kafka_wire.protocol.machine import TransitionLogger, step


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def name_in_kafka(self) -> str:
        """The state as Kafka spells it on the wire (``"PreparingRebalance"``)."""
        return self.value


class GroupInput(enum.Enum):
    """What moves a group."""

    #: A member joined, left, expired or changed its protocols (or an empty group got its first member).
    PREPARE_REBALANCE = "prepare rebalance"
    #: The join phase ended with members: a new generation, waiting for the leader's assignment.
    COMPLETE_JOIN = "complete join"
    #: The join phase ended with no member left: a new, empty generation.
    COMPLETE_JOIN_EMPTY = "complete join (no members)"
    #: The leader's SyncGroup assignment was stored.
    STORE_ASSIGNMENT = "store assignment"
    #: DeleteGroups, or expiry of an empty group whose offsets are all gone.
    DELETE = "delete"


S = GroupState
I = GroupInput  # noqa: E741  (the table reads better with a one-letter alias)

GROUP_TRANSITIONS: Final[Mapping[tuple[GroupState, GroupInput], GroupState]] = MappingProxyType(
    {
        (S.EMPTY, I.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
        (S.STABLE, I.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
        (S.COMPLETING_REBALANCE, I.PREPARE_REBALANCE): S.PREPARING_REBALANCE,
        (S.PREPARING_REBALANCE, I.COMPLETE_JOIN): S.COMPLETING_REBALANCE,
        (S.PREPARING_REBALANCE, I.COMPLETE_JOIN_EMPTY): S.EMPTY,
        (S.COMPLETING_REBALANCE, I.STORE_ASSIGNMENT): S.STABLE,
        (S.EMPTY, I.DELETE): S.DEAD,
    }
)

del S, I


def transition(
    state: GroupState, move: GroupInput, *, group: str = "", logger: TransitionLogger | None = None
) -> GroupState:
    """The state after ``move`` (the shared state-machine step, which logs the change through
    ``logger``); a move the table lacks raises :class:`LocalProtocolError`."""
    return step(GROUP_TRANSITIONS, state, move, machine=f"group {group}" if group else "group", logger=logger)


def can_rebalance(state: GroupState) -> bool:
    """Whether :attr:`GroupInput.PREPARE_REBALANCE` is legal in ``state``."""
    return (state, GroupInput.PREPARE_REBALANCE) in GROUP_TRANSITIONS
