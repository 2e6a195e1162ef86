"""OffsetFetch (v0-v7 one group, v8+ many): the committed offsets as Kafka's
``GroupCoordinatorService.fetchOffsets`` / ``fetchAllOffsets`` read them.

* Without ``require_stable`` a fetch is a read of the *committed* state (Kafka's read operation at
  the partition's last committed offset): an offset whose records the high watermark has not
  passed yet is not seen, the value it replaced is (or none), and a KIP-848 member id and epoch
  (v9+) are checked against the members of that state (``persistence.committed_before``).
* With ``require_stable`` (v7+) it reads the latest state (Kafka's write operation without
  records): a partition a transaction holds an offset of answers UNSTABLE_OFFSET_COMMIT, the
  others what was written last; each group's result leaves once everything written to its
  partition before is stored (a ``Persist`` without records). One not stored in time gets
  NOT_COORDINATOR (Kafka's ``handleOffsetFetchException``: clients before 3.9 retry neither
  REQUEST_TIMED_OUT nor COORDINATOR_NOT_AVAILABLE); refusals and member errors come at once.

The answer is sent once every group has its result.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kafka_wire import messages
from kafka_wire.broker.group.effects import client_error
from kafka_wire.broker.group.model import ZERO_UUID, Waiter
from kafka_wire.broker.group.persistence import (
    FetchedGroup,
    FetchedTopic,
    GroupPersistence,
    OffsetFetchAnswer,
    StableFetch,
)
from kafka_wire.broker.group.records import OffsetCommitValue
from kafka_wire.broker.group.runtime import GroupRuntime
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

E = ErrorCode

#: The partitions asked for, per topic: (name, None when a v10 topic id is unknown; id; indexes).
Wanted = list[tuple[str | None, uuid.UUID, list[int]]]

#: The log's errors that a stable fetch not stored in time answers NOT_COORDINATOR for (Kafka's
#: ``handleOffsetFetchException``); any other goes through the coordinator's table.
_FETCH_NOT_COORDINATOR = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT})


class OffsetFetches:
    """OffsetFetch requests, answered at once or once stable (see the module docstring)."""

    def __init__(
        self,
        rt: GroupRuntime,
        persistence: GroupPersistence,
        pending: Callable[[str, str, int], bool] = lambda group, topic, partition: False,
    ) -> None:
        self._rt = rt
        self._persistence = persistence
        #: Whether a transaction holds an offset of (group, topic, partition) (``txn_offsets``).
        self._pending = pending

    def offset_fetch(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.OffsetFetchRequest)
        v = waiter.api_version
        stable = v >= 7 and request.require_stable
        asked: list[tuple[str, Wanted | None, tuple[str | None, int]]] = []
        answer = OffsetFetchAnswer(waiter)
        if v >= 8:
            for g in request.groups:
                wanted: Wanted | None = None
                if g.topics is not None:
                    wanted = [
                        (
                            self._name_for_id(t.topic_id) if v >= 10 else t.name,
                            t.topic_id,
                            list(t.partition_indexes),
                        )
                        for t in g.topics
                    ]
                asked.append((g.group_id, wanted, (g.member_id, g.member_epoch) if v >= 9 else (None, -1)))
        else:
            wanted = None
            if request.topics is not None:
                wanted = [(t.name, ZERO_UUID, list(t.partition_indexes)) for t in request.topics]
                answer.named = [(t.name, list(t.partition_indexes)) for t in request.topics]
            asked.append((request.group_id, wanted, (None, -1)))
        for index, (group_id, wanted, member) in enumerate(asked):
            result = self.fetch_group(group_id, wanted, member, require_stable=stable)
            answer.group_ids.append(group_id)
            answer.results.append(result)
            if stable and result[0] == E.NONE:
                answer.outstanding += 1
                self._persistence.persist(group_id, [], StableFetch(group_id, answer, index))
        if not answer.outstanding:
            self._rt.respond(waiter, _response(answer))

    def fetched(self, write: StableFetch, error_code: int) -> None:
        """A stable fetch's wait ended: with the log's ``error_code`` when it failed."""
        answer = write.answer
        if error_code:
            error = E.NOT_COORDINATOR if error_code in _FETCH_NOT_COORDINATOR else client_error(error_code)
            answer.results[write.index] = (error, [])
        answer.outstanding -= 1
        if answer.outstanding == 0:
            self._rt.respond(answer.waiter, _response(answer))

    def fetch_group(
        self,
        group_id: str,
        topics: Wanted | None,
        member: tuple[str | None, int] = (None, -1),
        *,
        require_stable: bool = False,
    ) -> FetchedGroup:
        """The offsets of ``topics`` (``None``: all) of one group: the committed state, or with
        ``require_stable`` the latest one, where a partition a transaction holds an offset of
        answers UNSTABLE_OFFSET_COMMIT (Kafka: the client retries until the transaction ends).
        ``member`` (v9+: member id and epoch) is checked against a consumer group's members."""
        if not group_id:
            return E.INVALID_GROUP_ID, []
        if (refused := self._rt.refusal(group_id)) is not None:
            return refused, []
        group = self._rt.groups.get(group_id)
        consumer = None if group is None else group.consumer
        offsets: dict[str, dict[int, OffsetCommitValue]] = {} if group is None else group.offsets
        if not require_stable:
            before, consumer_changed, consumer_before = self._persistence.committed_before(group_id)
            if consumer_changed:
                consumer = consumer_before
            if before:
                offsets = _as_committed(offsets, before)
        if consumer is not None:
            member_error = consumer.commit_error(member[0] or "", member[1], None)
            if member_error is not None:
                return member_error, []
        out: list[FetchedTopic] = []
        if topics is None:
            for name in sorted(offsets):
                topic_id = None if self._rt.topic_id_of is None else self._rt.topic_id_of(name)
                partitions = offsets[name]
                out.append(
                    (name, topic_id or ZERO_UUID, [(p, partitions[p], E.NONE) for p in sorted(partitions)])
                )
        else:
            for wanted_name, wanted_id, indexes in topics:
                if wanted_name is None:
                    out.append(("", wanted_id, [(p, None, E.UNKNOWN_TOPIC_ID) for p in indexes]))
                    continue
                known = offsets.get(wanted_name, {})
                out.append((wanted_name, wanted_id, [(p, known.get(p), E.NONE) for p in indexes]))
        if require_stable:
            out = [
                (
                    name,
                    topic_id,
                    [
                        (p, None, E.UNSTABLE_OFFSET_COMMIT)
                        if self._pending(group_id, name, p)
                        else (p, value, p_error)
                        for p, value, p_error in partitions
                    ],
                )
                for name, topic_id, partitions in out
            ]
        return E.NONE, out

    def _name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return None if self._rt.topic_name_of is None else self._rt.topic_name_of(topic_id)


def _as_committed(
    offsets: dict[str, dict[int, OffsetCommitValue]],
    before: dict[tuple[str, int], OffsetCommitValue | None],
) -> dict[str, dict[int, OffsetCommitValue]]:
    """``offsets`` with the values uncommitted writes replaced put back (None: there was none)."""
    committed = {topic: dict(partitions) for topic, partitions in offsets.items()}
    for (topic, partition), value in before.items():
        if value is not None:
            committed.setdefault(topic, {})[partition] = value
        elif topic in committed:
            committed[topic].pop(partition, None)
            if not committed[topic]:
                del committed[topic]
    return committed


def _response(answer: OffsetFetchAnswer) -> messages.OffsetFetchResponse:
    """The OffsetFetch answer at the request's version, from each group's result."""
    v = answer.waiter.api_version
    if v >= 8:
        return messages.OffsetFetchResponse(
            groups=[
                messages.OffsetFetchResponseGroup(
                    group_id=group_id,
                    error_code=error,
                    topics=[
                        messages.OffsetFetchResponseTopics(
                            topic_id=topic_id if v >= 10 else ZERO_UUID,
                            name=name if v < 10 else "",
                            partitions=[
                                messages.OffsetFetchResponsePartitions(
                                    partition_index=p,
                                    committed_offset=-1 if value is None else value.offset,
                                    committed_leader_epoch=-1 if value is None else value.leader_epoch,
                                    metadata="" if value is None else value.metadata,
                                    error_code=p_error,
                                )
                                for p, value, p_error in partitions
                            ],
                        )
                        for name, topic_id, partitions in found
                    ],
                )
                for group_id, (error, found) in zip(answer.group_ids, answer.results, strict=True)
            ]
        )
    ((error, found),) = answer.results
    if error != E.NONE and v < 2:
        # v0-v1 have no group-level error: every asked-for partition carries it.
        found = [
            (name, ZERO_UUID, [(p, None, error) for p in indexes]) for name, indexes in answer.named or []
        ]
    return messages.OffsetFetchResponse(
        error_code=error if v >= 2 else E.NONE,
        topics=[
            messages.OffsetFetchResponseTopic(
                name=name,
                partitions=[
                    messages.OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=-1 if value is None else value.offset,
                        committed_leader_epoch=-1 if value is None or v < 5 else value.leader_epoch,
                        metadata="" if value is None else value.metadata,
                        error_code=p_error,
                    )
                    for p, value, p_error in partitions
                ],
            )
            for name, _, partitions in found
        ],
    )
