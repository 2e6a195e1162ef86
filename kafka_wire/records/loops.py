"""The per-record loops and ``Record``, in the flavour this process runs: chosen once, here.

The loops have one source, ``kafka_wire/_compiled/records.py``, which runs as Python and also
compiles with mypyc (``KAFKA_WIRE_COMPILE=1``, see ``docs/internals/compiled.md``). This module
takes its compiled extension when it is built, loads and ``KAFKA_WIRE_PURE`` is unset, and the same
source run by the interpreter otherwise. ``Record`` and the loops that make records (the v2
decoders and ``legacy_record``) come, in the compiled flavour, from the C extension
``kafka_wire/_compiled/recordwalk/`` instead (same interface, checks, errors and output: a native
class whose fields are object slots, and records made without a call into Python). This module is
the only importer of those private modules, and everything in ``kafka_wire.records`` takes the
loops and ``Record`` from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.flavour import compiled_module, source_module

if TYPE_CHECKING:
    from kafka_wire._compiled import records as _impl
    from kafka_wire._compiled import records as _walk
else:
    _NAME = "kafka_wire._compiled.records"
    _impl = compiled_module(_NAME) or source_module(_NAME)
    _walk = (compiled_module("kafka_wire._compiled.recordwalk") if _impl.COMPILED else None) or _impl

COMPILED: Final[bool] = _impl.COMPILED
"""Whether the compiled flavour is in use (``Record`` is then a native class)."""

Record = _walk.Record
decode_records_v2 = _walk.decode_records_v2
iterate_records_v2 = _walk.iterate_records_v2
legacy_record = _walk.legacy_record
encode_legacy_plain: Final[Callable[..., bytes | None] | None] = getattr(_walk, "encode_legacy_plain", None)
"""Compiled only (else ``None``): an uncompressed legacy message set of plain records in one call,
or ``None`` for input it does not take (``legacy.build_message_set`` then writes it)."""
bind_views: Final[Callable[[type, type, type], None] | None] = getattr(_walk, "bind_views", None)
"""Compiled only (else ``None``): tells :data:`batches` where ``RecordsReader``, ``RecordBatch``
and ``LegacyBatch`` keep their slots (``reader.py`` calls it once, at import)."""
batches: Final[Callable[[Any], Iterator[Any]] | None] = getattr(_walk, "batches", None)
"""Compiled only (else ``None``): a reader's batches with their views made in C, the common case
only (anything else is the reader's own ``__next__``)."""
v2_iter: Final[Any] = getattr(_walk, "v2_iter", None)
"""Compiled only (else ``None``): ``RecordBatch.__iter__`` in C for the common case (an uncompressed
batch of a ``bytes`` payload), the class's ``_iterate`` for everything else."""
summarize_records_v2: Final[Callable[..., tuple[int, int | None, int | None, int, int, int]] | None] = (
    getattr(_walk, "summarize_records_v2", None)
)
"""Compiled only (else ``None``): every record of a v2 batch checked as ``decode_records_v2`` checks
it, none made; ``(end position, lowest timestamp, highest timestamp, first offset gap, first
keyless record, key and value bytes)`` (see ``recordwalk/v2.c``)."""
legacy_iter: Final[Any] = getattr(_walk, "legacy_iter", None)
"""Compiled only (else ``None``): ``LegacyBatch.__iter__`` in C for a plain message, the class's
``_iterate`` for everything else."""
EMPTY_HEADERS: Final = _impl.EMPTY_HEADERS
GC_PAUSE_MIN_RECORDS: Final = _impl.GC_PAUSE_MIN_RECORDS
LegacyMessage = _impl.LegacyMessage
decode_legacy_message = _impl.decode_legacy_message
decode_legacy_message_set = _impl.decode_legacy_message_set
encode_legacy_message = _impl.encode_legacy_message
encode_records_v2 = _impl.encode_records_v2
read_uvarint32 = _impl.read_uvarint32
read_uvarint64 = _impl.read_uvarint64
record_fields = _impl.record_fields
uvarint_bytes = _impl.uvarint_bytes
varint_bytes = _impl.varint_bytes
