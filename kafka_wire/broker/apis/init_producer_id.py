"""InitProducerId.

Behaviour: without a transactional id, a request with producer id -1 gets a new producer id at
epoch 0 (ids are persisted so they are never reused); a request naming its current id and epoch
(KIP-360, v3+) gets the epoch bumped, or a new id when the epoch would overflow. Transactional ids
are refused with INVALID_REQUEST: this broker has no transaction coordinator yet.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.state import Context
from kafka_wire.messages import ErrorCode, InitProducerIdRequest, InitProducerIdResponse

_MAX_EPOCH: Final = 0x7FFF - 1


def handle(ctx: Context, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    metadata = ctx.state.metadata
    if request.producer_id >= 0 and 0 <= request.producer_epoch < _MAX_EPOCH:
        if request.producer_id >= metadata.next_producer_id:
            return InitProducerIdResponse(error_code=ErrorCode.INVALID_PRODUCER_ID_MAPPING, producer_id=-1, producer_epoch=-1)
        return InitProducerIdResponse(producer_id=request.producer_id, producer_epoch=request.producer_epoch + 1)
    producer_id = metadata.next_producer_id
    metadata.next_producer_id += 1
    ctx.state.effects += metadata.persist()
    return InitProducerIdResponse(producer_id=producer_id, producer_epoch=0)
