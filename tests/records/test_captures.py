"""Real client Produce frames (tests/data/captures/*-produce-*.hex) decode to the records the
clients sent (the golden workload of tools/record_captures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_wire.records import RecordBatch, RecordsReader, validate_batch
from tests.conftest import CAPTURES
from tests.interop.recording_server import TOPIC_ID
from tests.records.helpers import produce_records

FRAMES = sorted(CAPTURES.glob("*-produce-v*.hex"))


def test_captures_present() -> None:
    # Five codecs from each of six clients (the Java client twice: 3.9.1 and 4.4), and again at
    # Produce v8 from the four whose newest version is flexible (tests/codec/test_golden.py checks
    # the count per client).
    assert len(FRAMES) == 50
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert len([p for p in FRAMES if _codec(p) == codec]) == 10


def _codec(path: Path) -> str:
    return path.stem.rsplit("-", 1)[1]


@pytest.mark.parametrize("path", FRAMES, ids=lambda p: p.stem)
def test_capture_decodes_to_sent_records(path: Path) -> None:
    frame = bytes.fromhex(path.read_text().strip())
    [(topic, partition, records)] = produce_records(frame)
    # Produce v13+ names the topic by its id alone (the recording server's TOPIC_ID).
    assert (topic, partition) == (str(TOPIC_ID) if "-produce-v13-" in path.name else "t1", 0)
    reader = RecordsReader(records)
    batches = list(reader)
    assert reader.truncated_tail == 0 and reader.position == len(records)
    assert len(batches) == 1
    batch = batches[0]
    assert isinstance(batch, RecordBatch)
    assert batch.magic == 2 and batch.is_valid()
    assert batch.compression == _codec(path)
    assert (batch.base_offset, batch.record_count, batch.last_offset) == (0, 3, 2)
    assert not batch.is_control and not batch.is_transactional
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    want = [
        (i, 1_700_000_000_000 + i, b"k%d" % i, (b"value-%d-" % i) * 20, [("h", b"x%d" % i)]) for i in range(3)
    ]
    assert got == want
    # the broker-side header check accepts what real producers send
    assert validate_batch(records, require_dense=True).record_count == 3
