"""kafka-python and aiokafka record classes, imported with their import-time deprecation warnings muted.

(kafka-python reads its JSON schemas with ``importlib.resources.read_text``, deprecated in 3.11;
the suite turns warnings into errors.)
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    # the peers ship no type information: every import below is untyped
    from aiokafka.record.default_records import (  # type: ignore[import-untyped]
        DefaultRecordBatchBuilder as AioBuilder,
    )
    from aiokafka.record.legacy_records import (  # type: ignore[import-untyped]
        LegacyRecordBatchBuilder as AioLegacyBuilder,
    )
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords  # type: ignore[import-untyped]
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder  # type: ignore[import-untyped]
    from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder  # type: ignore[import-untyped]
    from kafka.record.memory_records import MemoryRecords as KpMemoryRecords  # type: ignore[import-untyped]
    from kafka.record.memory_records import MemoryRecordsBuilder as KpMemoryRecordsBuilder

__all__ = [
    "AioBuilder",
    "AioLegacyBuilder",
    "AioMemoryRecords",
    "KpBuilder",
    "KpLegacyBuilder",
    "KpMemoryRecords",
    "KpMemoryRecordsBuilder",
]
