"""A consumer group member's reconciliation: its current assignment moved towards its target,
one step per heartbeat (Kafka's ``CurrentAssignmentBuilder``).

A partition is never owned by two members at once: a member is given a partition of its target
only once no other member owns it (its partition epoch is -1), and a member that must give
partitions up keeps its epoch, in ``UNREVOKED_PARTITIONS``, until its heartbeat no longer lists
them. The moves are the table :data:`MEMBER_TRANSITIONS`.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.group.consumer_model import ConsumerMember, MemberState, intersect, minus
from kafka_wire.broker.group.consumer_records import Partitions
from kafka_wire.protocol.machine import step


class MemberInput(Enum):
    """What a reconciliation step found."""

    #: Partitions of the current assignment are not in the target and the member still owns them.
    REVOKE = "revoke"
    #: At the target's epoch, but some target partitions are still owned by other members.
    AWAIT_RELEASE = "await_release"
    #: At the target's epoch with every target partition.
    RECONCILED = "reconciled"


S = MemberState
I = MemberInput  # noqa: E741

#: ``(state, input) -> state``: every known state may move on any finding. The unknown state
#: (a state stored by a newer Kafka) has no move: its member is fenced and rejoins at epoch 0.
MEMBER_TRANSITIONS: Final[dict[tuple[MemberState, MemberInput], MemberState]] = {
    (state, move): target
    for state in (S.STABLE, S.UNREVOKED_PARTITIONS, S.UNRELEASED_PARTITIONS)
    for move, target in (
        (I.REVOKE, S.UNREVOKED_PARTITIONS),
        (I.AWAIT_RELEASE, S.UNRELEASED_PARTITIONS),
        (I.RECONCILED, S.STABLE),
    )
}


def owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
    """The member's heartbeat still lists one of ``partitions`` (``None``: it did not say, so it
    is taken to own them all)."""
    if owned is None:
        return True
    return bool(intersect(owned, partitions))


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    owner_epochs: dict[tuple[uuid.UUID, int], int],
    owned: Partitions | None,
    *,
    hooks: Hooks = OFF,
) -> ConsumerMember:
    """The member after one reconciliation step (a new object when anything changed).

    ``owner_epochs`` holds the partitions owned by any member (Kafka's partition epochs);
    ``owned`` the partitions the heartbeat lists (``None``: not sent); ``hooks`` the simulator's
    planted bugs.
    """
    state = member.state
    if state is S.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owner_epochs, owned, hooks)
    if state is S.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owner_epochs, owned, hooks)
    # UNRELEASED_PARTITIONS; UNKNOWN is refused before (the member must rejoin)
    return _next(member, member.member_epoch, target_epoch, target, owner_epochs, owned, hooks)


def _next(
    member: ConsumerMember,
    member_epoch: int,
    target_epoch: int,
    target: Partitions,
    owner_epochs: dict[tuple[uuid.UUID, int], int],
    owned: Partitions | None,
    hooks: Hooks,
) -> ConsumerMember:
    kept = intersect(member.assigned, target)
    revoke = minus(member.assigned, kept)
    wanted = minus(target, kept)
    free: Partitions = {}
    unreleased = False
    if hooks.planted("assign-before-revoke"):
        owner_epochs = {}
    for topic_id, partitions in wanted.items():
        available = tuple(p for p in partitions if (topic_id, p) not in owner_epochs)
        unreleased = unreleased or len(available) < len(partitions)
        if available:
            free[topic_id] = available
    out = member.copy()
    if revoke and owns_any(owned, revoke):
        move = I.REVOKE
        out.assigned, out.pending_revocation = kept, revoke
        _set_epoch(out, member_epoch)
    else:
        move = I.AWAIT_RELEASE if unreleased else I.RECONCILED
        assigned = dict(kept)
        for topic_id, partitions in free.items():
            assigned[topic_id] = tuple(sorted({*assigned.get(topic_id, ()), *partitions}))
        out.assigned, out.pending_revocation = assigned, {}
        _set_epoch(out, target_epoch)
    out.state = step(MEMBER_TRANSITIONS, member.state, move, machine="consumer group member")
    return out


def _set_epoch(member: ConsumerMember, epoch: int) -> None:
    if epoch != member.member_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = epoch
