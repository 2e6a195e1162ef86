"""A Kafka-aware proxy built on the Sans-IO connections, and its filter API.

:class:`~kafka_wire.proxy.proxy.Proxy` holds what a proxy's connections share (upstreams, filter
chain, the address book that maps broker addresses to proxy ports); each client connection is a
:class:`~kafka_wire.proxy.pair.ProxyPair`, a state machine with bytes and time in and bytes and
effects out. ``kafka_wire.adapters.proxy_server`` runs it on asyncio; ``kafka-wire proxy`` is the
command. Filters (:mod:`kafka_wire.proxy.filters`) see the requests and responses they ask for as
the generated classes; every other frame is relayed undecoded. Built-in filters are in
:mod:`kafka_wire.proxy.builtin`.
"""

from kafka_wire.proxy.addresses import AddressBook, Route, address_paths
from kafka_wire.proxy.effects import Await, Effect, LogLine
from kafka_wire.proxy.filters import (
    ALL_KEYS,
    FORWARD,
    Answer,
    Call,
    Close,
    ConnectionInfo,
    Delay,
    Filter,
    Outcome,
    Verdict,
)
from kafka_wire.proxy.pair import PAIR_TRANSITIONS, PairInput, PairState, ProxyPair
from kafka_wire.proxy.proxy import Proxy, ProxyConfig

__all__ = [
    "ALL_KEYS",
    "FORWARD",
    "PAIR_TRANSITIONS",
    "AddressBook",
    "Answer",
    "Await",
    "Call",
    "Close",
    "ConnectionInfo",
    "Delay",
    "Effect",
    "Filter",
    "LogLine",
    "Outcome",
    "PairInput",
    "PairState",
    "Proxy",
    "ProxyConfig",
    "ProxyPair",
    "Route",
    "Verdict",
    "address_paths",
]
