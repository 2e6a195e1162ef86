"""What the group coordinator asks its driver to do: small frozen values, applied in the order returned.

``Persist`` always comes before the ``Respond`` effects that depend on it (a SyncGroup leader's
assignment, an OffsetCommit): the driver appends the records to ``__consumer_offsets`` partition
``partition`` and sends those responses only once the append is durable (Kafka answers after the
write is committed).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_wire.codec.runtime import Message

#: One record of ``__consumer_offsets``: key bytes and value bytes, ``None`` being a tombstone.
KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class Respond:
    """Answer the request that was handed to :meth:`GroupCoordinator.handle` with ``token``.

    ``body`` is the response message of the request's API; it encodes at the request's version
    (``body.encode(api_version)``), which the driver keeps beside the token.
    """

    token: object
    body: Message


@dataclass(frozen=True, slots=True)
class Persist:
    """Append ``records`` to the compacted internal log, as one batch, in order.

    All records of one ``Persist`` belong to ``group_id``; ``partition`` is its
    ``__consumer_offsets`` partition (:func:`~kafka_wire.broker.group.records.partition_for_group`
    with ``offsets.topic.num.partitions``).
    """

    group_id: str
    partition: int
    records: list[KeyValue]


GroupEffect = Respond | Persist
