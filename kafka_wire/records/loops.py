"""The per-record loops and ``Record``, in the flavour this process runs: chosen once, here.

The loops have one source, ``kafka_wire/_compiled/records.py``, which runs as Python and also
compiles with mypyc (``KAFKA_WIRE_COMPILE=1``, see ``docs/compiled.md``). This module takes its
compiled extension when it is built, loads and ``KAFKA_WIRE_PURE`` is unset, and the same source
run by the interpreter otherwise; it is the only importer of that private module, and everything
in ``kafka_wire.records`` takes the loops and ``Record`` from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire.flavour import compiled_module, source_module

if TYPE_CHECKING:
    from kafka_wire._compiled import records as _impl
else:
    _NAME = "kafka_wire._compiled.records"
    _impl = compiled_module(_NAME) or source_module(_NAME)

COMPILED: Final[bool] = _impl.COMPILED
"""Whether the compiled extension is in use (its ``Record`` is then a native class)."""

Record = _impl.Record
EMPTY_HEADERS: Final = _impl.EMPTY_HEADERS
GC_PAUSE_MIN_RECORDS: Final = _impl.GC_PAUSE_MIN_RECORDS
LegacyMessage = _impl.LegacyMessage
decode_legacy_message = _impl.decode_legacy_message
decode_legacy_message_set = _impl.decode_legacy_message_set
decode_records_v2 = _impl.decode_records_v2
encode_legacy_message = _impl.encode_legacy_message
encode_records_v2 = _impl.encode_records_v2
iterate_records_v2 = _impl.iterate_records_v2
legacy_record = _impl.legacy_record
read_uvarint32 = _impl.read_uvarint32
read_uvarint64 = _impl.read_uvarint64
record_fields = _impl.record_fields
uvarint_bytes = _impl.uvarint_bytes
varint_bytes = _impl.varint_bytes
