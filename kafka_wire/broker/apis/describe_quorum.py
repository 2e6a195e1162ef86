"""DescribeQuorum (on a broker listener).

Behaviour: in a cluster the request goes to the active controller, and its answer is relayed
(``forward``), as Kafka's brokers do. A single node is its own one-voter quorum: the answer names
this node as leader in epoch 1 and as the only voter, caught up now, with a log end offset and
high watermark of 0 (it keeps its metadata in ``kafka-wire-metadata.json``, not in a
``__cluster_metadata`` log), no observers, and (v2) this node with its listener. A request for
anything but ``__cluster_metadata`` partition 0, alone, is UNKNOWN_TOPIC_OR_PARTITION for each
partition named, as Kafka's raft client answers it.
Error messages are left empty where Kafka's raft client sets none (its generated default).
Version notes: timestamps from v1, ``replica_directory_id`` and ``nodes`` from v2.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartitionData,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopicData,
    ErrorCode,
)

METADATA_TOPIC: Final = "__cluster_metadata"
#: The epoch a lone voter elects itself in.
SINGLE_NODE_EPOCH: Final = 1
#: The listener name a single node reports for itself.
SINGLE_NODE_LISTENER: Final = "PLAINTEXT"


def handle(ctx: Context, request: DescribeQuorumRequest) -> DescribeQuorumResponse | Message | Forwarded:
    if ctx.state.cluster is not None:
        return forward(ctx, ctx.state.cluster, request)
    topics = request.topics
    if not (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == 0
    ):
        return unknown_partitions(request)
    config = ctx.state.config
    voter = DescribeQuorumResponseReplicaState(
        replica_id=config.node_id,
        log_end_offset=0,
        last_fetch_timestamp=ctx.now_ms,
        last_caught_up_timestamp=ctx.now_ms,
    )
    return DescribeQuorumResponse(
        topics=[
            DescribeQuorumResponseTopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    DescribeQuorumResponsePartitionData(
                        partition_index=0,
                        leader_id=config.node_id,
                        leader_epoch=SINGLE_NODE_EPOCH,
                        high_watermark=0,
                        current_voters=[voter],
                    )
                ],
            )
        ],
        nodes=[
            DescribeQuorumResponseNode(
                node_id=config.node_id,
                listeners=[
                    DescribeQuorumResponseListener(
                        name=ctx.listener or SINGLE_NODE_LISTENER, host=config.host, port=config.port
                    )
                ],
            )
        ],
    )


def unknown_partitions(request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    """UNKNOWN_TOPIC_OR_PARTITION for every partition of ``request`` (Kafka's partition-level error)."""
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return DescribeQuorumResponse(
        topics=[
            DescribeQuorumResponseTopicData(
                topic_name=t.topic_name,
                partitions=[
                    DescribeQuorumResponsePartitionData(
                        partition_index=p.partition_index, error_code=code, error_message=code.description
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
