"""The broker engine: pure state machines fed connection bytes and time, returning effects.

``Broker`` composes the partition logs (``log/``), replicas (``partition/``), producer state
(``txn/``), the group coordinator (``group/``) and one handler module per API (``apis/``). The
asyncio driver is ``kafka_wire.adapters.broker_server``; ``kafka-wire serve`` runs it.
"""

from kafka_wire.broker.broker import Broker
from kafka_wire.broker.config import BrokerConfig, BrokerConfigError

__all__ = ["Broker", "BrokerConfig", "BrokerConfigError"]
