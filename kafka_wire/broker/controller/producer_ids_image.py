"""The producer id blocks handed out so far as the metadata log records them (Kafka's
``ProducerIdsImage``): the first id not yet given to a broker, from ProducerIdsRecord."""

from __future__ import annotations

from typing import Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message

#: The records this section applies, by class name (a class loads with its first record).
PRODUCER_ID_RECORDS: Final = ("ProducerIdsRecord",)


class ProducerIdsImage:
    """The next producer id block's start, and who took the last block."""

    def __init__(self) -> None:
        #: The first producer id not yet handed out (``ProducerIdsRecord.NextProducerId``).
        self.next_producer_id = 0
        self.broker = -1
        self.broker_epoch = -1

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.ProducerIdsRecord):
            self.next_producer_id = record.next_producer_id
            self.broker, self.broker_epoch = record.broker_id, record.broker_epoch

    def snapshot_records(self) -> list[Message]:
        if not self.next_producer_id:
            return []
        return [
            messages.ProducerIdsRecord(
                broker_id=self.broker, broker_epoch=self.broker_epoch, next_producer_id=self.next_producer_id
            )
        ]
