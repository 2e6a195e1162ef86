"""Producer ids: blocks allocated by the active controller.

Every broker answers InitProducerId, so the ids come from the controller in blocks (AllocateProducerIds with the
broker's id and epoch; the controller records each block as a ProducerIdsRecord in the metadata
log, so no id is handed out twice, across brokers or restarts). :class:`ProducerIdBlocks` is the
broker's side, as Kafka's ``RPCProducerIdManager``:

* the first block is asked for by the first InitProducerId, except on a single node (the only
  voter), which asks once it is unfenced (:meth:`ProducerIdBlocks.prefetch`): its controller
  answers in-process, so it has the block before its first client;
* ids are taken in order from the current block;
* when 90% of the current block is used, the next block is asked for (one request in flight);
* when the current block is used up and the next has not come, there is no id:
  InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS, which every client retries, and the next
  block is asked for;
* a failed request (an error code, a timeout, a lost connection, a block that goes backwards or
  has no ids) is retried no sooner than :data:`RETRY_BACKOFF_MS` later.

Pure: the request leaves through :meth:`ClusterView.send`, its reply comes back in a later call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

#: Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``: what the controller hands out at once.
BLOCK_SIZE: Final = 1000
#: The share of a block used when the next one is asked for (``PID_PREFETCH_THRESHOLD``).
PREFETCH_THRESHOLD: Final = 0.90
#: Kafka's ``RPCProducerIdManager.RETRY_BACKOFF_MS``: the wait after a failed request.
RETRY_BACKOFF_MS: Final = 50

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IdBlock:
    """``length`` producer ids from ``start``."""

    start: int
    length: int

    @property
    def end(self) -> int:
        """The first id after the block."""
        return self.start + self.length

    @property
    def prefetch_at(self) -> int:
        """The id whose hand-out asks for the next block."""
        return self.start + int(self.length * PREFETCH_THRESHOLD)


class ProducerIdBlocks:
    """Producer ids from controller-allocated blocks (see the module docstring).

    ``broker_epoch`` gives the broker's current epoch (from its registration) for each request.
    """

    def __init__(
        self,
        cluster: ClusterView,
        broker_epoch: Callable[[], int],
        *,
        request_timeout_ms: int = 30_000,
        logger: logging.Logger | None = None,
    ) -> None:
        self._cluster = cluster
        self._broker_epoch = broker_epoch
        self._timeout_ms = request_timeout_ms
        self._log = logger or _log
        #: The block ids come from, and the next id of it.
        self._current: IdBlock | None = None
        self._next_id = 0
        #: A block received ahead of need.
        self._prefetched: IdBlock | None = None
        self._in_flight = False
        #: No request before this time (after a failure).
        self._retry_at_ms = 0
        #: Requests sent so far (for tests and logs).
        self.requests_sent = 0

    @property
    def current_block(self) -> IdBlock | None:
        return self._current

    @property
    def prefetched_block(self) -> IdBlock | None:
        return self._prefetched

    @property
    def in_flight(self) -> bool:
        return self._in_flight

    def next_id(self, now_ms: int) -> int | None:
        """A producer id never handed out before, or None while no block has one (the caller
        answers COORDINATOR_LOAD_IN_PROGRESS; a block has been asked for)."""
        current = self._current
        if current is None or self._next_id >= current.end:
            block = self._prefetched
            if block is None:
                self._request(now_ms)
                return None
            self._current, self._prefetched = block, None
            current, self._next_id = block, block.start
        producer_id = self._next_id
        self._next_id += 1
        if producer_id >= current.prefetch_at:
            self._request(now_ms)
        return producer_id

    def prefetch(self, now_ms: int) -> None:
        """Ask for the first block ahead of need (nothing when one is held or asked for)."""
        if self._current is None:
            self._request(now_ms)

    def _request(self, now_ms: int) -> None:
        if self._in_flight or self._prefetched is not None or now_ms < self._retry_at_ms:
            return
        cluster = self._cluster
        if cluster.controller_id < 0:
            return  # no active controller known yet: asked again at the next InitProducerId
        self._in_flight = True
        self.requests_sent += 1
        self._log.info("asking controller %d for producer ids", cluster.controller_id)
        cluster.send(
            Outbound(
                cluster.controller_id,
                cluster.controller_listener,
                messages.AllocateProducerIdsRequest(
                    broker_id=cluster.node_id, broker_epoch=self._broker_epoch()
                ),
                self._on_reply,
                self._timeout_ms,
            )
        )

    def _on_reply(self, body: Message | None, now_ms: int) -> None:
        self._in_flight = False
        block = self._accepted(body)
        if block is None:
            self._retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self._log.info("producer ids %d to %d from the controller", block.start, block.end - 1)
        self._prefetched = block

    def _accepted(self, body: Message | None) -> IdBlock | None:
        if not isinstance(body, messages.AllocateProducerIdsResponse):
            self._log.warning("AllocateProducerIds to the controller failed (no answer); retrying")
            return None
        if body.error_code:
            known = ErrorCode.lookup(body.error_code)
            name = known.name if isinstance(known, ErrorCode) else str(body.error_code)
            self._log.warning("AllocateProducerIds refused by the controller: %s; retrying", name)
            return None
        block = IdBlock(body.producer_id_start, body.producer_id_len)
        floor = self._current.end if self._current is not None else 0
        if block.start < floor or block.length <= 0 or block.start < 0 or block.end > 2**63 - 1:
            self._log.error(
                "AllocateProducerIds: the controller's block %d+%d is not usable after %d; retrying",
                block.start,
                block.length,
                floor,
            )
            return None
        return block
