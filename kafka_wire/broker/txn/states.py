"""A transaction's states and its transition table (STYLE §3.4).

:data:`TXN_TRANSITIONS` is the whole machine: ``(state, input) -> state``, Kafka's rule that each
state may only be entered from its "valid previous states" (``TransactionState`` of Kafka's
transaction coordinator) written as a table. The coordinator prepares every move through
:func:`transition`, so a move missing from the table raises
:class:`~kafka_wire.errors.LocalProtocolError` (a coordinator bug; clients only ever see error
codes). ``docs/reference/state-machines.md`` draws the table (``make docs``).

States (the ids are what ``__transaction_state`` stores; the names what DescribeTransactions and
ListTransactions report):

``EMPTY`` (0)
    no transaction open: after InitProducerId, or once one ended and its producer id was
    initialized again.
``ONGOING`` (1)
    partitions (or a group's offsets) were added: a transaction is open.
``PREPARE_COMMIT`` (2) / ``PREPARE_ABORT`` (3)
    EndTxn (or a timeout, or a fencing InitProducerId) decided; the markers are being written.
``COMPLETE_COMMIT`` (4) / ``COMPLETE_ABORT`` (5)
    every partition has its marker.
``DEAD`` (6)
    the transactional id expired (``transactional.id.expiration.ms``): its tombstone is written.
``PREPARE_EPOCH_FENCE`` (7)
    a new producer (InitProducerId) or the timeout fences the open transaction: it goes on to
    PREPARE_ABORT with the epoch bumped, so that the old producer is fenced.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from kafka_wire.protocol.machine import TransitionLogger, step


class TxnState(enum.Enum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def name_in_kafka(self) -> str:
        """The state as Kafka spells it on the wire (``"PrepareCommit"``)."""
        return _NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        """Whether a transactional id idle in this state may expire (Kafka's ``isExpirationAllowed``)."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @classmethod
    def from_id(cls, state_id: int) -> TxnState | None:
        """The state a ``__transaction_state`` record names (None: an id Kafka does not define)."""
        try:
            return cls(state_id)
        except ValueError:
            return None

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        """The state with Kafka's name ``name`` (ListTransactions' state filter), else None."""
        return _BY_NAME.get(name)


_NAMES: Final = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME: Final = {name: state for state, name in _NAMES.items()}


class TxnInput(enum.Enum):
    """What moves a transaction."""

    #: InitProducerId: a new or bumped epoch, or a new producer id; no transaction open.
    INIT_PRODUCER_ID = "init producer id"
    #: AddPartitionsToTxn, AddOffsetsToTxn, or a partition a TV2 produce (or TxnOffsetCommit) adds.
    ADD_PARTITIONS = "add partitions"
    #: EndTxn with commit.
    PREPARE_COMMIT = "prepare commit"
    #: EndTxn with abort, a timeout's abort, or the abort that follows an epoch fence.
    PREPARE_ABORT = "prepare abort"
    #: Every partition has its marker.
    COMPLETE = "complete"
    #: A new producer, or the timeout, fences the open transaction (its epoch is bumped).
    FENCE_EPOCH = "fence epoch"
    #: The transactional id expired.
    EXPIRE = "expire"


S = TxnState
I = TxnInput  # noqa: E741  (the table reads better with a one-letter alias)

TXN_TRANSITIONS: Final[Mapping[tuple[TxnState, TxnInput], TxnState]] = MappingProxyType(
    {
        (S.EMPTY, I.INIT_PRODUCER_ID): S.EMPTY,
        (S.COMPLETE_COMMIT, I.INIT_PRODUCER_ID): S.EMPTY,
        (S.COMPLETE_ABORT, I.INIT_PRODUCER_ID): S.EMPTY,
        (S.EMPTY, I.ADD_PARTITIONS): S.ONGOING,
        (S.ONGOING, I.ADD_PARTITIONS): S.ONGOING,
        (S.COMPLETE_COMMIT, I.ADD_PARTITIONS): S.ONGOING,
        (S.COMPLETE_ABORT, I.ADD_PARTITIONS): S.ONGOING,
        (S.ONGOING, I.PREPARE_COMMIT): S.PREPARE_COMMIT,
        (S.ONGOING, I.PREPARE_ABORT): S.PREPARE_ABORT,
        (S.PREPARE_EPOCH_FENCE, I.PREPARE_ABORT): S.PREPARE_ABORT,
        # Transaction version 2: an abort with no partition added (Kafka 4.x).
        (S.EMPTY, I.PREPARE_ABORT): S.PREPARE_ABORT,
        (S.COMPLETE_COMMIT, I.PREPARE_ABORT): S.PREPARE_ABORT,
        (S.COMPLETE_ABORT, I.PREPARE_ABORT): S.PREPARE_ABORT,
        (S.PREPARE_COMMIT, I.COMPLETE): S.COMPLETE_COMMIT,
        (S.PREPARE_ABORT, I.COMPLETE): S.COMPLETE_ABORT,
        (S.ONGOING, I.FENCE_EPOCH): S.PREPARE_EPOCH_FENCE,
        (S.EMPTY, I.EXPIRE): S.DEAD,
        (S.COMPLETE_COMMIT, I.EXPIRE): S.DEAD,
        (S.COMPLETE_ABORT, I.EXPIRE): S.DEAD,
    }
)

del S, I


def transition(
    state: TxnState, move: TxnInput, *, transactional_id: str = "", logger: TransitionLogger | None = None
) -> TxnState:
    """The state after ``move`` (the shared state-machine step, which logs the change through
    ``logger``); a move the table lacks raises :class:`LocalProtocolError`."""
    machine = f"transaction {transactional_id}" if transactional_id else "transaction"
    return step(TXN_TRANSITIONS, state, move, machine=machine, logger=logger)


def in_progress(state: TxnState) -> bool:
    """A transaction is open or ending (Kafka's ``hasPendingTransaction``)."""
    return state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
