"""kafka_wire's Kafka client: metadata, offsets, fetch and produce against a cluster.

The calls are coroutines taking a :class:`kafka_wire.adapters.cluster.Cluster`, which holds the
connections (a :class:`kafka_wire.adapters.asyncio.KafkaClient` per broker, each a Sans-IO
:class:`~kafka_wire.protocol.ClientConnection`), the metadata, the clock and the retry waits:

- :func:`list_offsets` / :func:`offset_bounds`: ListOffsets to each partition's leader;
- :func:`fetch_range`: one partition's ``[start, end)`` with Kafka consumer's rules
  (read_committed, aborted transactions, control batches), the rules being :class:`RangeRead`
  (requests out, responses in, no I/O);
- :func:`produce`: ready-made record batches to partition leaders;
- :func:`partition_for_key`: Kafka's default partitioner.

Every call follows leadership changes (metadata refresh and retry) until ``timeout_ms`` pass
without progress. The Spark data source (:mod:`kafka_wire.spark.live`) wraps these in
synchronous calls for its tasks.
"""

from kafka_wire.client.cluster import DEFAULT_TIMEOUT_MS, ClusterMetadata, parse_bootstrap
from kafka_wire.client.fetch import (
    DEFAULT_PARTITION_MAX_BYTES,
    RangeRead,
    fetch_batches,
    fetch_range,
)
from kafka_wire.client.offsets import list_offsets, offset_bounds
from kafka_wire.client.partitioner import murmur2, partition_for_key
from kafka_wire.client.produce import produce
from kafka_wire.client.types import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    DataLossError,
    KafkaCallError,
    TopicPartition,
)
from kafka_wire.records.aborted import AbortedFilter

__all__ = [
    "DEFAULT_PARTITION_MAX_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "EARLIEST",
    "LATEST",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "AbortedFilter",
    "ClusterMetadata",
    "DataLossError",
    "KafkaCallError",
    "RangeRead",
    "TopicPartition",
    "fetch_batches",
    "fetch_range",
    "list_offsets",
    "murmur2",
    "offset_bounds",
    "parse_bootstrap",
    "partition_for_key",
    "produce",
]
