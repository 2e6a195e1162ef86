"""The engine's side of the driver contract: its states, the writes in flight and what waits for them.

Each engine call that changes what is stored returns its storage effects first, as one *batch*.
The driver applies the batches in the order they were returned (each one's effects in order) and
reports each batch's outcome in that order: ``Broker.storage_applied`` or, at its first failed
effect, ``Broker.storage_failed`` (then it applies nothing more). Between the call and the report
it may feed the engine any other input: the engine goes on serving, and what it builds meanwhile
waits for the writes it depends on (:class:`StoragePipeline`):

- an answer leaves once every batch returned up to its own call is applied, except an answer made
  from the cluster metadata alone (:data:`METADATA_ANSWERS`: Metadata, DescribeCluster, ...),
  which waits only for the batches that changed the metadata (files outside partition
  directories, and ``__cluster_metadata``): a topic's partitions are created in slices while
  other connections read the metadata; and a Fetch answer, which shows the metadata and the
  partitions it carries only: it waits for the batches that changed the metadata and for those
  that wrote in the directories of its partitions (as Kafka's fetch reads a log whatever another
  partition is writing). So the first consumer of a broker, whose FindCoordinator creates
  ``__consumer_offsets`` (50 partitions created in slices, each slice's files made durable),
  reads the records it fetches meanwhile;
- answers on one connection leave in the order they were built, and a connection whose answers
  wait is not read further until they leave (one request at a time, as Kafka mutes a channel);
- what a cluster node sends other nodes leaves once every batch returned before it is applied.

So nothing is acknowledged, and no record, offset or committed state is shown, before the write
holding it succeeded; a failed write fails every answer still waiting (the broker stops).

The contract's states (starting, serving, writing, stopping, stopped) are one machine,
``kafka_wire.broker.driver_contract``, which the pipeline moves as calls end and outcomes come.

Memory: the logs keep the bytes of batches in flight (``WriteProgress``), and a job (a request in
slices, ``kafka_wire.broker.work``) takes steps only while at most :data:`JOB_BATCHES_IN_FLIGHT`
batches are in flight, so a slow disk slows the job, not the other connections, and what waits
for the disk stays bounded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, cast

from kafka_wire.broker.channels import Answer
from kafka_wire.broker.driver_contract import DriverContract
from kafka_wire.broker.effects import Effect, Rename, StorageEffect, WriteProgress
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC
from kafka_wire.broker.state import Spliced
from kafka_wire.logformat.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from kafka_wire.logformat.names import parse_partition_dir
from kafka_wire.messages import ApiKey

if TYPE_CHECKING:  # the Fetch classes load with the first Fetch, not at start
    from kafka_wire.messages import FetchResponse

#: Answers made from the cluster metadata (and the broker's configuration) alone: they wait only
#: for the batches that changed the metadata.
METADATA_ANSWERS: Final = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.METADATA,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.FIND_COORDINATOR,
    }
)

JOB_BATCHES_IN_FLIGHT: Final = 1
"""A job takes steps only while at most this many batches are in flight: its next slice is
computed while the last one is written, and no further ahead."""


#: Files of the data directory that hold no cluster metadata: the replica manager's checkpoints
#: (written as ``NAME.tmp``, then renamed), rewritten as partitions open.
_CHECKPOINTS: Final = frozenset(
    {
        RECOVERY_POINT_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    }
)


def _tops(effects: list[StorageEffect]) -> set[str]:
    """The entries of the data directory that ``effects`` write in (partition directories, files)."""
    return {
        path.partition("/")[0]
        for effect in effects
        for path in ((effect.source, effect.target) if isinstance(effect, Rename) else (effect.path,))
    }


def changes_metadata(effects: list[StorageEffect]) -> bool:
    """Whether ``effects`` write the cluster metadata: anything outside the partition directories
    but the checkpoint files (``meta.properties``, the metadata file of an old single node being
    imported) or in ``__cluster_metadata-0``."""
    return _writes_metadata(_tops(effects))


def _writes_metadata(tops: Iterable[str]) -> bool:
    for top in tops:
        if top.removesuffix(".tmp") in _CHECKPOINTS:
            continue
        parsed = parse_partition_dir(top)
        if parsed is None or parsed[0] == CLUSTER_METADATA_TOPIC:
            return True
    return False


def fetched_directories(body: object, topic_name: Callable[[uuid.UUID], str | None]) -> list[str]:
    """The partition directories a Fetch answer's ``body`` shows (by topic name, or from v13 by
    topic id through ``topic_name``: an id it does not know shows no stored data)."""
    response = cast("FetchResponse", body.body if isinstance(body, Spliced) else body)
    directories = []
    for topic in getattr(response, "responses", ()):  # not a FetchResponse: an error answer
        name = topic.topic or topic_name(topic.topic_id)
        if name:
            directories += [f"{name}-{partition.partition_index}" for partition in topic.partitions]
    return directories


class StoragePipeline:
    """The batches in flight and the answers and node messages waiting for them (see the module
    docstring); it reports the end of each call and each outcome to the contract's ``driver``."""

    def __init__(self, progress: WriteProgress, driver: DriverContract) -> None:
        self.progress = progress
        self._driver = driver
        #: The last batch that changed the metadata.
        self._metadata_batch = 0
        #: Answers waiting, with the batch each waits for, in the order they were built.
        self._answers: list[tuple[int, Answer]] = []
        #: Per connection, the batch its last waiting answer waits for.
        self._after: dict[int, int] = {}
        #: Messages to other nodes, with the batch they wait for (in order; never decreasing).
        self._node: list[tuple[int, list[Effect]]] = []
        #: While batches are in flight: the last one that wrote in each partition directory (or
        #: other entry of the data directory), what a Fetch answer waits for.
        self._wrote: dict[str, int] = {}
        #: A topic's name by its id (the broker sets it once its state exists).
        self.topic_name: Callable[[uuid.UUID], str | None] = lambda _topic_id: None

    @property
    def in_flight(self) -> int:
        """Batches handed out whose outcome is not reported yet."""
        return self.progress.in_flight

    def holds_answers_for(self, conn_id: int) -> bool:
        """Whether answers of ``conn_id`` wait for writes: its next request is not read until they
        leave (as Kafka mutes a channel until its answer is sent)."""
        return conn_id in self._after

    @property
    def jobs_may_step(self) -> bool:
        return self.progress.in_flight <= JOB_BATCHES_IN_FLIGHT

    def end_call(
        self, storage: list[StorageEffect], answers: list[Answer], node: list[Effect]
    ) -> tuple[list[Answer], list[Effect]]:
        """A call ends with ``storage`` (its batch, possibly empty), the ``answers`` it built and
        its ``node`` messages: what may leave now; the rest waits for its batches."""
        progress = self.progress
        if storage:
            batch = progress.hand_out()
            tops = _tops(storage)
            if _writes_metadata(tops):
                self._metadata_batch = batch
            wrote = self._wrote
            for top in tops:
                wrote[top] = batch
        self._driver.call_ended(progress.in_flight)
        latest, applied = progress.handed_out, progress.applied
        ready: list[Answer] = []
        for answer in answers:
            api_key = answer.request.api_key
            if api_key in METADATA_ANSWERS:
                after = self._metadata_batch
            elif api_key == ApiKey.FETCH and latest > applied:
                wrote = self._wrote
                directories = fetched_directories(answer.body, self.topic_name)
                after = max([self._metadata_batch, *(wrote.get(d, 0) for d in directories)])
            else:
                after = latest
            after = max(after, self._after.get(answer.conn_id, 0))
            if after <= applied:
                ready.append(answer)
            else:
                self._answers.append((after, answer))
                self._after[answer.conn_id] = after
        if latest <= applied:
            return ready, node
        if node:
            self._node.append((latest, node))
        return ready, []

    def applied(self) -> tuple[list[Answer], list[Effect]]:
        """The oldest batch in flight was applied: the answers and node messages that may leave."""
        self.progress.apply_one()
        self._driver.applied(self.progress.in_flight)
        applied = self.progress.applied
        ready = [answer for after, answer in self._answers if after <= applied]
        if ready:
            self._answers = [(after, answer) for after, answer in self._answers if after > applied]
            self._after = {conn: after for conn, after in self._after.items() if after > applied}
        node: list[Effect] = []
        while self._node and self._node[0][0] <= applied:
            node += self._node.pop(0)[1]
        if self._wrote and self.progress.in_flight == 0:
            self._wrote.clear()
        return ready, node

    def failed(self, reason: str) -> list[Answer]:
        """The oldest batch in flight failed, for ``reason`` (the driver applies nothing more): the
        answers that waited, to be failed; the node messages are dropped."""
        self._driver.failed(reason)
        answers = [answer for _, answer in self._answers]
        self._answers, self._after, self._node = [], {}, []
        self._wrote.clear()
        return answers
