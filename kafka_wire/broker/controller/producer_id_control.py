"""Producer id blocks, for the active controller (Kafka's ``ProducerIdControlManager``).

:class:`ProducerIdControl` owns the next block's start
(:class:`~kafka_wire.broker.controller.producer_ids_image.ProducerIdsImage`) and answers
AllocateProducerIds: a registered broker (its current epoch) gets the next
:data:`~kafka_wire.broker.controller.settings.PRODUCER_ID_BLOCK_SIZE` ids, recorded as a
ProducerIdsRecord so that no id is handed out twice, across brokers and restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.producer_ids_image import ProducerIdsImage
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.settings import PRODUCER_ID_BLOCK_SIZE
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        AllocateProducerIdsRequest,
    )


class ProducerIdControl:
    """The producer id blocks handed out so far."""

    def __init__(self, epoch_ok: Callable[[int, int], bool]) -> None:
        self._epoch_ok = epoch_ok
        self.image = ProducerIdsImage()

    def reset(self) -> None:
        self.image = ProducerIdsImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    def allocate_producer_ids(self, version: int, req: AllocateProducerIdsRequest, now_ms: int) -> Decision:
        def fail(code: int) -> Message:
            return messages.AllocateProducerIdsResponse(
                error_code=code, producer_id_start=-1, producer_id_len=0
            )

        if not self._epoch_ok(req.broker_id, req.broker_epoch):
            return fail(ErrorCode.STALE_BROKER_EPOCH)
        start = self.image.next_producer_id
        record = messages.ProducerIdsRecord(
            broker_id=req.broker_id,
            broker_epoch=req.broker_epoch,
            next_producer_id=start + PRODUCER_ID_BLOCK_SIZE,
        )
        answer = messages.AllocateProducerIdsResponse(
            producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE
        )
        return ControllerResult([record], lambda: answer, fail)
