"""The share coordinator's RPCs on one engine (``apis/share_group_state.py`` over
``share/coordinator.py``): the leader and state epoch checks of Kafka's shard, a read that
writes a newer leader epoch, initialize, delete and the summary; and DeleteGroups of a share group
deleting its share-partitions' state."""

from __future__ import annotations

import uuid

from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateRequestDeleteStateData,
    DeleteShareGroupStateRequestPartitionData,
    DeleteShareGroupStateResponse,
    ErrorCode,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateRequestInitializeStateData,
    InitializeShareGroupStateRequestPartitionData,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateRequestPartitionData,
    ReadShareGroupStateRequestReadStateData,
    ReadShareGroupStateResponse,
    ReadShareGroupStateResponsePartitionResult,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryRequestPartitionData,
    ReadShareGroupStateSummaryRequestReadStateSummaryData,
    ReadShareGroupStateSummaryResponse,
    ShareGroupHeartbeatRequest,
    WriteShareGroupStateRequest,
    WriteShareGroupStateRequestPartitionData,
    WriteShareGroupStateRequestStateBatch,
    WriteShareGroupStateRequestWriteStateData,
    WriteShareGroupStateResponse,
)
from tests.broker.engine import Client
from tests.broker.test_engine_share import acknowledge, fetch, produce_values, setup

E = ErrorCode


def read(
    client: Client, group: str, topic_id: uuid.UUID, leader_epoch: int
) -> ReadShareGroupStateResponsePartitionResult:
    reply = client.request(
        ReadShareGroupStateRequest(
            group_id=group,
            topics=[
                ReadShareGroupStateRequestReadStateData(
                    topic_id=topic_id,
                    partitions=[
                        ReadShareGroupStateRequestPartitionData(partition=0, leader_epoch=leader_epoch)
                    ],
                )
            ],
        ),
        0,
    ).body
    assert isinstance(reply, ReadShareGroupStateResponse)
    return reply.results[0].partitions[0]


def write(
    client: Client, group: str, topic_id: uuid.UUID, state_epoch: int, leader_epoch: int, start: int
) -> int:
    reply = client.request(
        WriteShareGroupStateRequest(
            group_id=group,
            topics=[
                WriteShareGroupStateRequestWriteStateData(
                    topic_id=topic_id,
                    partitions=[
                        WriteShareGroupStateRequestPartitionData(
                            partition=0,
                            state_epoch=state_epoch,
                            leader_epoch=leader_epoch,
                            start_offset=start,
                            state_batches=[
                                WriteShareGroupStateRequestStateBatch(
                                    first_offset=start,
                                    last_offset=start + 1,
                                    delivery_state=0,
                                    delivery_count=2,
                                )
                            ],
                        )
                    ],
                )
            ],
        ),
        1,
    ).body
    assert isinstance(reply, WriteShareGroupStateResponse)
    return reply.results[0].partitions[0].error_code


def test_the_epochs_fence_older_leaders_and_states() -> None:
    engine, client, topic_id = setup(warm=False)
    group = "rpc"
    fresh = read(client, group, topic_id, 3)
    for _ in range(50):  # the first request asks the controller for __share_group_state
        if fresh.error_code == E.NONE:
            break
        engine.advance(100)
        fresh = read(client, group, topic_id, 3)
    assert (fresh.error_code, fresh.start_offset, fresh.state_epoch) == (E.NONE, -1, 0)
    assert write(client, group, topic_id, 0, 2, 5) == E.FENCED_LEADER_EPOCH  # the read wrote epoch 3
    assert write(client, group, topic_id, 0, 3, 5) == E.NONE
    kept = read(client, group, topic_id, 3)
    assert (
        kept.start_offset,
        [(b.first_offset, b.last_offset, b.delivery_count) for b in kept.state_batches],
    ) == (
        5,
        [(5, 6, 2)],
    )
    assert read(client, group, topic_id, 2).error_code == E.FENCED_LEADER_EPOCH
    initialized = client.request(
        InitializeShareGroupStateRequest(
            group_id=group,
            topics=[
                InitializeShareGroupStateRequestInitializeStateData(
                    topic_id=topic_id,
                    partitions=[
                        InitializeShareGroupStateRequestPartitionData(
                            partition=0, state_epoch=1, start_offset=8
                        )
                    ],
                )
            ],
        ),
        0,
    ).body
    assert isinstance(initialized, InitializeShareGroupStateResponse)
    assert initialized.results[0].partitions[0].error_code == E.NONE
    assert write(client, group, topic_id, 0, 4, 9) == E.FENCED_STATE_EPOCH
    summary = client.request(
        ReadShareGroupStateSummaryRequest(
            group_id=group,
            topics=[
                ReadShareGroupStateSummaryRequestReadStateSummaryData(
                    topic_id=topic_id,
                    partitions=[ReadShareGroupStateSummaryRequestPartitionData(partition=0, leader_epoch=-1)],
                )
            ],
        ),
        1,
    ).body
    assert isinstance(summary, ReadShareGroupStateSummaryResponse)
    found = summary.results[0].partitions[0]
    assert (found.error_code, found.state_epoch, found.start_offset) == (E.NONE, 1, 8)
    deleted = client.request(
        DeleteShareGroupStateRequest(
            group_id=group,
            topics=[
                DeleteShareGroupStateRequestDeleteStateData(
                    topic_id=topic_id, partitions=[DeleteShareGroupStateRequestPartitionData(partition=0)]
                )
            ],
        ),
        0,
    ).body
    assert isinstance(deleted, DeleteShareGroupStateResponse)
    assert deleted.results[0].partitions[0].error_code == E.NONE
    assert read(client, group, topic_id, -1).start_offset == -1
    unknown = read(client, group, uuid.uuid4(), 1)
    assert unknown.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_deleting_a_share_group_deletes_its_state() -> None:
    engine, client, topic_id = setup()
    share = engine.broker.state.share
    assert share is not None and share.store is not None
    produce_values(engine, client, [b"a", b"b", b"c"])
    fetch(client, topic_id, 0)
    acknowledge(client, topic_id, 1, [(0, 2, [1])])
    engine.advance(0)
    key = ShareStateKey("sg", topic_id, 0)
    kept = share.store.read(key)
    # kept as Kafka's leader writes it: the start offset before the acknowledgement, 0-2 done
    assert kept is not None and (kept.start_offset, kept.batches) == (0, [(0, 2, 2, 1)])
    client.request(ShareGroupHeartbeatRequest(group_id="sg", member_id="m1", member_epoch=-1), 1)
    fetch(client, topic_id, -1)
    reply = client.request(DeleteGroupsRequest(groups_names=["sg"]), 2).body
    assert isinstance(reply, DeleteGroupsResponse) and reply.results[0].error_code == E.NONE
    assert share.store.read(key) is None
