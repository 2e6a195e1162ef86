"""Configuration of the transaction coordinator: one frozen dataclass, Kafka's property names beside
each field (the broker fills it from its own configuration)."""

from __future__ import annotations

from typing import Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.quick_dataclass import dataclass


class TxnConfigError(KafkaWireError):
    """A transaction coordinator setting is invalid; ``key`` is Kafka's property name."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnConfig:
    """Every field has Kafka's default; :data:`PROPERTY_NAMES` maps fields to Kafka's keys."""

    #: ``transaction.max.timeout.ms``: InitProducerId asking for more gets INVALID_TRANSACTION_TIMEOUT.
    max_timeout_ms: int = 900_000
    #: ``transactional.id.expiration.ms``: a transactional id idle this long (with no transaction
    #: open) is expired: its tombstone is written and it is forgotten.
    transactional_id_expiration_ms: int = 604_800_000
    #: ``transaction.abort.timed.out.transaction.cleanup.interval.ms``: how often open
    #: transactions past their timeout are aborted.
    abort_timed_out_interval_ms: int = 10_000
    #: ``transaction.remove.expired.transaction.cleanup.interval.ms``: how often expired
    #: transactional ids are removed.
    remove_expired_interval_ms: int = 3_600_000
    #: ``transaction.state.log.num.partitions``: places transactional ids (the broker passes the
    #: partition count ``__transaction_state`` has, once it exists).
    num_partitions: int = 50

    def __post_init__(self) -> None:
        for name in PROPERTY_NAMES:
            if getattr(self, name) < 1:
                raise TxnConfigError(PROPERTY_NAMES[name], "must be at least 1")


#: Kafka's property name of every :class:`TxnConfig` field.
PROPERTY_NAMES: Final[dict[str, str]] = {
    "max_timeout_ms": "transaction.max.timeout.ms",
    "transactional_id_expiration_ms": "transactional.id.expiration.ms",
    "abort_timed_out_interval_ms": "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "remove_expired_interval_ms": "transaction.remove.expired.transaction.cleanup.interval.ms",
    "num_partitions": "transaction.state.log.num.partitions",
}
