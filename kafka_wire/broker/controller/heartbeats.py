"""What a broker's heartbeat does to its registration (Kafka's ``BrokerHeartbeatManager``).

A registered broker is FENCED until a heartbeat reports a metadata offset at or past its
registration (then UNFENCED); an unfenced broker that asks to shut down enters
CONTROLLED_SHUTDOWN (its leaderships move away), and is told SHUTDOWN_NOW once those moves are
committed and seen by every active broker. A broker that asks to be fenced, or whose heartbeats
stop for ``broker.session.timeout.ms``, is fenced. The transitions are the table
``BROKER_TRANSITIONS``, keyed by (state, input).
"""

from __future__ import annotations

import enum
from typing import Final


class BrokerState(enum.Enum):
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"


class HeartbeatInput(enum.Enum):
    """What a heartbeat asks for, by precedence: fence, shut down, else the broker's progress."""

    WANT_FENCE = "want_fence"
    WANT_SHUT_DOWN = "want_shut_down"
    CAUGHT_UP = "caught_up"
    BEHIND = "behind"
    #: In controlled shutdown: its leadership moves are committed and seen by the active brokers.
    MOVES_DONE = "moves_done"


S = BrokerState
H = HeartbeatInput

#: (state, input) -> next state. Missing pairs keep the state.
BROKER_TRANSITIONS: Final[dict[tuple[BrokerState, HeartbeatInput], BrokerState]] = {
    (S.FENCED, H.WANT_FENCE): S.FENCED,
    (S.FENCED, H.WANT_SHUT_DOWN): S.SHUTDOWN_NOW,
    (S.FENCED, H.CAUGHT_UP): S.UNFENCED,
    (S.FENCED, H.BEHIND): S.FENCED,
    (S.UNFENCED, H.WANT_FENCE): S.FENCED,
    (S.UNFENCED, H.WANT_SHUT_DOWN): S.CONTROLLED_SHUTDOWN,
    (S.UNFENCED, H.CAUGHT_UP): S.UNFENCED,
    (S.UNFENCED, H.BEHIND): S.UNFENCED,
    (S.CONTROLLED_SHUTDOWN, H.WANT_FENCE): S.FENCED,
    (S.CONTROLLED_SHUTDOWN, H.WANT_SHUT_DOWN): S.CONTROLLED_SHUTDOWN,
    (S.CONTROLLED_SHUTDOWN, H.MOVES_DONE): S.SHUTDOWN_NOW,
    (S.CONTROLLED_SHUTDOWN, H.CAUGHT_UP): S.CONTROLLED_SHUTDOWN,
    (S.CONTROLLED_SHUTDOWN, H.BEHIND): S.CONTROLLED_SHUTDOWN,
}


def next_state(state: BrokerState, heartbeat: HeartbeatInput) -> BrokerState:
    return BROKER_TRANSITIONS.get((state, heartbeat), state)
