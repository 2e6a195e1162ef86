"""ListPartitionReassignments.

Behaviour: in a cluster the request goes to the active controller, and its answer is relayed
(``forward``). A single node runs no reassignment: the answer lists none (topics named, known or
not, are left out, as Kafka leaves out those with no reassignment in progress).
"""

from __future__ import annotations

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse


def handle(
    ctx: Context, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse | Message | Forwarded:
    if ctx.state.cluster is not None:
        return forward(ctx, ctx.state.cluster, request)
    return ListPartitionReassignmentsResponse(error_message=None)
