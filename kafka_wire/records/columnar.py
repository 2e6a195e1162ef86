"""Record batches straight into Arrow: Spark's Kafka schema, one column buffer per field.

Hand-written. :func:`decode_arrow` reads one records payload (a Fetch partition's ``records``, a
segment file's bytes) or several, of any magic and codec, into a ``pyarrow.RecordBatch`` with
the columns of Spark's Kafka source::

    key binary, value binary, topic string, partition int32, offset int64,
    timestamp timestamp[us, UTC], timestampType int32,
    headers list<struct<key: string, value: binary>>   (null for a record without headers)

Per batch, Python reads the header, decides whether the batch is wanted (control batches,
aborted transactions, the offset range) and decompresses it; the records themselves are walked
by ``Columns`` (the C extension ``kafka_wire._compiled.columnar`` when built, else its pure twin
:mod:`kafka_wire.records.columnar_pure`), which appends every wanted field to growing buffers:
no Python object per record, each key, value and header copied once. The C ``Columns`` exports
its buffers as one struct array through Arrow's C data interface (one pyarrow call imports it);
the pure twin's are wrapped by ``pyarrow.Array.from_buffers``; neither copies them again.
Columns not asked for are not materialised. Legacy (magic 0/1) messages, one batch view each
already, go through their records.

pyarrow is an optional dependency (``pip install 'kafka-wire[arrow]'``); this module imports
without it and the calls raise :class:`ImportError` naming the extra.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.errors import CorruptBatchError
from kafka_wire.flavour import compiled_module
from kafka_wire.records.aborted import AbortedFilter, aborted_pairs
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.config import ReadConfig
from kafka_wire.records.legacy import LegacyBatch
from kafka_wire.records.reader import RecordsReader
from kafka_wire.records.record import BufferLike

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_wire.records.columnar_pure import Columns
else:
    _ext = compiled_module("kafka_wire._compiled.columnar")
    if _ext is None:
        from kafka_wire.records.columnar_pure import Columns
    else:
        Columns = _ext.Columns

COMPILED: Final[bool] = Columns.__module__ == "kafka_wire._compiled.columnar"
"""Whether the C extension does the per-record work (else the pure-Python twin)."""

KAFKA_COLUMNS: Final = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
)
"""Spark's Kafka source columns, in its order (``headers`` only with ``includeHeaders``)."""
NO_HEADERS: Final = KAFKA_COLUMNS[:-1]

_INT64_MAX: Final = (1 << 63) - 1
_SCHEMAS: dict[tuple[str, ...], Any] = {}
"""The schema of each column list asked for so far (a few: Spark asks for one or two)."""
#: The C ``Columns.export`` letter of each column.
_LETTERS: Final = dict(zip(KAFKA_COLUMNS, "kvtposyh", strict=True))


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise ImportError(
            "columnar decoding needs pyarrow: pip install 'kafka-wire[arrow]'", name="pyarrow"
        ) from None
    return pyarrow


def arrow_schema(columns: Sequence[str] = KAFKA_COLUMNS) -> pa.Schema:
    """The Arrow schema of :func:`decode_arrow`'s output for ``columns`` (Spark's Kafka types)."""
    pa = _pyarrow()
    types = {
        "key": pa.binary(),
        "value": pa.binary(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestampType": pa.int32(),
        "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
    }
    return pa.schema([(name, types[name]) for name in _checked(columns)])


def _checked(columns: Sequence[str]) -> list[str]:
    unknown = [c for c in columns if c not in KAFKA_COLUMNS]
    if unknown or len(set(columns)) != len(columns):
        raise ValueError(
            f"columns must be distinct names among {', '.join(KAFKA_COLUMNS)} (got {', '.join(columns)})"
        )
    return list(columns)


class ArrowDecoder:
    """Collects the records of one topic-partition's batches as Arrow columns.

    Feed it payloads (:meth:`add`) or batches already read (:meth:`add_batch`); :meth:`take`
    returns the rows collected so far as a ``pyarrow.RecordBatch`` and starts anew. Records
    outside ``[start_offset, end_offset)`` are dropped (a batch that straddles the range is
    walked, only its rows outside are left out). Control batches are left out unless
    ``include_control``; their records' key and value are the control key and value.
    """

    def __init__(
        self,
        *,
        topic: str = "",
        partition: int = -1,
        columns: Sequence[str] = KAFKA_COLUMNS,
        start_offset: int | None = None,
        end_offset: int | None = None,
        include_control: bool = False,
        config: ReadConfig | None = None,
    ) -> None:
        self._pa = _pyarrow()
        key = tuple(columns)
        known = _SCHEMAS.get(key)
        if known is None:  # pyarrow's type factories cost ~100 us when their code is not in cache
            known = _SCHEMAS[key] = arrow_schema(columns)
        self.columns = list(key)
        self.schema: pa.Schema = known
        self.topic = topic
        self.partition = partition
        self.start_offset = -1 - _INT64_MAX if start_offset is None else start_offset
        self.end_offset = _INT64_MAX if end_offset is None else end_offset
        self.include_control = include_control
        self.config = config
        self._layout = "".join(_LETTERS[name] for name in self.columns)
        self._columns = self._new()

    def _new(self) -> Columns:
        c = self.columns
        return Columns("key" in c, "value" in c, "headers" in c, 1000 if "timestamp" in c else 1)

    @property
    def rows(self) -> int:
        """Rows collected since the last :meth:`take`."""
        return len(self._columns)

    def add(
        self,
        payload: BufferLike,
        *,
        read_committed: bool = False,
        aborted_transactions: Iterable[Any] | None = None,
    ) -> int:
        """Decode the complete batches of ``payload`` (a trailing partial batch is skipped, as by
        :func:`~kafka_wire.records.read_batches`); returns the offset after the last batch read
        (-1 when there was none).

        With ``read_committed``, a transactional batch of a producer listed in
        ``aborted_transactions`` (Fetch's ``(producer_id, first_offset)`` pairs, or objects with
        those attributes) is left out from that transaction's first offset up to the producer's
        ABORT marker, as Kafka's consumer does.
        """
        aborted = AbortedFilter(aborted_pairs(aborted_transactions or ())) if read_committed else None
        next_offset = -1
        for batch in RecordsReader(payload, self.config):
            next_offset = batch.next_offset
            if aborted is not None and aborted.skips(batch) and not batch.is_control:
                continue
            self.add_batch(batch)
        return next_offset

    def add_batch(self, batch: RecordBatch[Any] | LegacyBatch[Any]) -> None:
        """Append the records of one batch (control batches only with ``include_control``)."""
        if isinstance(batch, LegacyBatch):
            self._add_legacy(batch)
            return
        if batch.is_control and not self.include_control:
            return
        if (
            batch.base_offset + batch.last_offset_delta < self.start_offset
            or batch.base_offset >= self.end_offset
        ):
            return
        data, _, pos, end, shift, log_append_time = batch._source()
        try:
            pos = self._columns.v2(
                data,
                pos,
                end,
                batch.record_count,
                batch.base_offset,
                batch.base_timestamp,
                log_append_time,
                int(batch.timestamp_type),
                self.start_offset,
                self.end_offset,
            )
        except ValueError as e:
            if len(e.args) != 2:
                raise
            reason, at = e.args
            raise batch._failure(CorruptBatchError(reason, offset=at), shift) from None
        if pos != end:
            raise batch._left_over(pos, end, shift)

    def _add_legacy(self, batch: LegacyBatch[Any]) -> None:
        if batch.last_offset < self.start_offset:  # every record of a wrapper is at or below it
            return
        ts_type = int(batch.timestamp_type)
        lo, hi = self.start_offset, self.end_offset
        record = self._columns.record
        for r in batch:
            if lo <= r.offset < hi:
                record(r.offset, r.timestamp, ts_type, r.key, r.value, r.headers)

    def take(self) -> pa.RecordBatch:
        """The rows collected since the last call, as one ``pyarrow.RecordBatch``."""
        pa = self._pa
        columns = self._columns
        self._columns = self._new()
        export = getattr(columns, "export", None)
        if export is not None:  # C: one struct array through Arrow's C data interface, one call
            address = export(self._layout, self.topic.encode(), self.partition)
            return pa.RecordBatch._import_from_c(address, self.schema)
        chunk = columns.finish()  # the pure twin: Arrow arrays
        rows = len(chunk)
        arrays: dict[str, Any] = {}
        for name in self.columns:
            if name == "key":
                arrays[name] = chunk.keys
            elif name == "value":
                arrays[name] = chunk.values
            elif name == "topic":
                arrays[name] = pa.repeat(pa.scalar(self.topic, pa.string()), rows)
            elif name == "partition":
                arrays[name] = pa.repeat(pa.scalar(self.partition, pa.int32()), rows)
            elif name == "offset":
                arrays[name] = chunk.offsets
            elif name == "timestamp":
                arrays[name] = chunk.timestamps.view(self.schema.field(name).type)
            elif name == "timestampType":
                arrays[name] = chunk.ts_types
            else:
                arrays[name] = _header_lists(pa, chunk, self.schema.field(name).type)
        return pa.RecordBatch.from_arrays(list(arrays.values()), schema=self.schema)


def _header_lists(pa: Any, chunk: Any, kind: Any) -> Any:
    """The headers column of a pure ``Columns`` chunk: a list per row, null where it has none."""
    import pyarrow.compute as pc

    counts = chunk.header_counts
    ends = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum_checked(counts)])
    empty = pc.equal(counts, 0)
    nulls = int(pc.sum(empty.cast(pa.int64())).as_py() or 0)
    pairs = pa.StructArray.from_arrays([chunk.header_keys, chunk.header_values], names=["key", "value"])
    return pa.Array.from_buffers(
        kind,
        len(counts),
        [pc.invert(empty).buffers()[1] if nulls else None, ends.buffers()[1]],
        null_count=nulls,
        children=[pairs],
    )


def decode_arrow(
    payloads: BufferLike | Iterable[BufferLike],
    *,
    topic: str = "",
    partition: int = -1,
    columns: Sequence[str] = KAFKA_COLUMNS,
    start_offset: int | None = None,
    end_offset: int | None = None,
    read_committed: bool = False,
    aborted_transactions: Iterable[Any] | None = None,
    include_control: bool = False,
    config: ReadConfig | None = None,
) -> pa.RecordBatch:
    """Every record of ``payloads`` (one records payload, or an iterable of them, read in order)
    as one ``pyarrow.RecordBatch`` in Spark's Kafka schema, restricted to ``columns``.

    ``topic`` and ``partition`` fill their columns. See :class:`ArrowDecoder` for the offset
    range, control batches and aborted transactions (``aborted_transactions`` applies to every
    payload given). Corrupt input raises a :class:`~kafka_wire.errors.DecodeError`.
    """
    decoder = ArrowDecoder(
        topic=topic,
        partition=partition,
        columns=columns,
        start_offset=start_offset,
        end_offset=end_offset,
        include_control=include_control,
        config=config,
    )
    items = [payloads] if isinstance(payloads, bytes | bytearray | memoryview) else payloads
    aborted = list(aborted_transactions or ())
    for payload in items:
        decoder.add(payload, read_committed=read_committed, aborted_transactions=aborted)
    return decoder.take()


__all__ = [
    "COMPILED",
    "KAFKA_COLUMNS",
    "NO_HEADERS",
    "ArrowDecoder",
    "Columns",
    "arrow_schema",
    "decode_arrow",
]
