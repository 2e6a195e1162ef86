"""Forwarding admin requests to the active controller.

The metadata belongs to the controller quorum (on a single node too: its own one-voter quorum,
reached in-process): a broker sends CreateTopics, DeleteTopics, CreatePartitions,
IncrementalAlterConfigs, AlterConfigs, ElectLeaders, Alter/ListPartitionReassignments and
DescribeQuorum to the active controller as the same request
(Kafka wraps them in an Envelope; what is relayed is the same) and answers with the controller's
reply, at the version the client sent it (as Kafka's Envelope carries the client's request). The
request is held as a :class:`Forwarded` until then:

- no active controller known: NOT_CONTROLLER at once (clients retry it after a metadata refresh);
- the request failed (connection lost, node gone, ``timeout_ms`` passed, reply None):
  REQUEST_TIMED_OUT, as Kafka's ``ForwardingManager`` answers a forwarded request that timed out.

Error answers have the shape of the request (one result per topic, resource or partition asked
for, or the response's top-level error where it has one): :data:`kafka_wire.broker.error_answers.ERROR_ANSWERS` builds them, each
from Kafka's ``getErrorResponse`` of that request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kafka_wire.broker.cluster_view import ClusterView, Outbound
from kafka_wire.broker.error_answers import ERROR_ANSWERS
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

#: Kafka's broker-to-controller channel gives a forwarded request ``request.timeout.ms`` (30 s).
FORWARD_TIMEOUT_MS: Final = 30_000

NOT_CONTROLLER_MESSAGE: Final = "No active controller is known to this broker."
TIMED_OUT_MESSAGE: Final = "The controller did not answer the forwarded request in time."


class Forwarded:
    """A request sent to the active controller, answered with its reply (a Waiting)."""

    def __init__(
        self, request: Message, error_answer: Callable[[Message, int, str], Message], deadline_ms: int
    ) -> None:
        self.deadline_ms = deadline_ms
        self._request = request
        self._error_answer = error_answer
        self._reply: Message | None = None

    def on_reply(self, body: Message | None, now_ms: int) -> None:
        if self._reply is None:
            self._reply = (
                body
                if body is not None
                else self._error_answer(self._request, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE)
            )

    def poll(self, now_ms: int) -> Message | None:
        if self._reply is None and now_ms >= self.deadline_ms:
            self.on_reply(None, now_ms)
        return self._reply


def forward(ctx: Context, view: ClusterView, request: Message) -> Message | Forwarded:
    """Send ``request`` to the active controller; its answer comes through the returned Waiting."""
    error_answer = ERROR_ANSWERS[ctx.request.api_key]
    controller = view.controller_id
    if controller < 0:
        return error_answer(request, ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)
    held = Forwarded(request, error_answer, ctx.now_ms + FORWARD_TIMEOUT_MS)
    view.send(
        Outbound(
            controller, view.controller_listener, request, held.on_reply, FORWARD_TIMEOUT_MS, ctx.api_version
        )
    )
    return held


def handle(ctx: Context, request: Message) -> Message | Forwarded:
    """The handler of every API the broker forwards whole (``apis.FORWARDED``)."""
    return forward(ctx, ctx.state.cluster, request)
