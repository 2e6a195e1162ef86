"""The answer to a TxnOffsetCommit refused as a whole: the error on every partition (Kafka's
``TxnOffsetCommitRequest.getErrorResponse``). Used by the group coordinator's routing and by the
broker's checks before the coordinator sees the request (``txn_offset_commits.py``), without
loading the coordinator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_wire import messages

if TYPE_CHECKING:
    from kafka_wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse


def txn_offset_commit_error(
    request: TxnOffsetCommitRequest, api_version: int, error: int
) -> TxnOffsetCommitResponse:
    """Every partition carries the error (``TxnOffsetCommitRequest.getErrorResponse``)."""
    return messages.TxnOffsetCommitResponse(
        topics=[
            messages.TxnOffsetCommitResponseTopic(
                name=t.name if api_version < 6 else "",
                topic_id=t.topic_id,
                partitions=[
                    messages.TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=error
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
