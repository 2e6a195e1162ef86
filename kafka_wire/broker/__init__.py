"""The broker engine: pure state machines fed connection bytes and time, returning effects.

``Broker`` composes the partition logs (``log/``), replicas (``partition/``), producer state
(``txn/``), the group coordinator (``group/``) and one handler module per API (``apis/``). The
asyncio driver is ``kafka_wire.adapters.broker_server``; ``kafka-wire serve`` runs it.

The package itself imports nothing: ``Broker``, ``BrokerConfig`` and ``BrokerConfigError`` load
from their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire.lazy_exports import exports

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.config import BrokerConfig, BrokerConfigError

__all__ = ["Broker", "BrokerConfig", "BrokerConfigError"]

#: Each name of ``__all__`` and its module, imported on first use: ``kafka_wire.broker.config``
#: (what ``kafka-wire serve`` reads first) does not load the engine.
__getattr__ = exports(
    __name__,
    {
        "Broker": "kafka_wire.broker.broker",
        "BrokerConfig": "kafka_wire.broker.config",
        "BrokerConfigError": "kafka_wire.broker.config",
    },
)
