"""A segment's transaction index (``.txnindex``, Kafka's ``TransactionIndex``), read and written
through storage like the other indexes.

The file exists only once the segment holds an ABORT marker of a transaction with data in the
partition (Kafka creates it lazily too). Entries are appended in marker order (their last offsets
increase). A read_committed Fetch collects the entries overlapping ``[fetch offset, upper bound)``
segment by segment until an entry's last stable offset reaches the upper bound (Kafka's
``collectAbortedTxns``: every later aborted transaction starts above it).
"""

from __future__ import annotations

from kafka_wire.broker.log.files import EffectQueue, PendingFile
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.txn_index import ENTRY_SIZE, AbortedTxn, decode_entries, encode_entry


class TxnIndex:
    """One segment's aborted transactions (see the module docstring)."""

    __slots__ = ("_queue", "file", "last_offset", "path")

    def __init__(
        self, queue: EffectQueue, path: str, file: PendingFile | None = None, last_offset: int = -1
    ) -> None:
        self._queue = queue
        self.path = path
        self.file = file
        #: The last offset (marker) of the last entry (-1: none).
        self.last_offset = last_offset

    @classmethod
    def open(cls, queue: EffectQueue, storage: StorageReader, path: str) -> TxnIndex:
        size = storage.size(path)
        if size is None:
            return cls(queue, path)
        file = PendingFile(queue, path, size)
        index = cls(queue, path, file)
        entries = index.entries(storage)
        index.last_offset = entries[-1].last_offset if entries else -1
        return index

    def rename(self, path: str) -> None:
        """The file takes its final name (a compaction's swap)."""
        if self.file is not None:
            self.file.rename(path)
        self.path = path

    def entries(self, storage: StorageReader) -> list[AbortedTxn]:
        if self.file is None or self.file.size < ENTRY_SIZE:
            return []
        try:
            return decode_entries(self.file.read(storage, 0, self.file.size // ENTRY_SIZE * ENTRY_SIZE))
        except DecodeError:
            return []  # a newer format: no aborted transaction is listed rather than a wrong one

    def append(self, txn: AbortedTxn) -> bool:
        """Add an entry (creating the file); False, with nothing written, when its marker is not
        after the last one (the entry is there already: a rebuild after recovery)."""
        if txn.last_offset <= self.last_offset:
            return False
        if self.file is None:
            self.file = PendingFile.create(self._queue, self.path)
        self.file.append(encode_entry(txn))
        self.last_offset = txn.last_offset
        return True

    def collect(
        self, storage: StorageReader, fetch_offset: int, upper_bound: int
    ) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[fetch_offset, upper_bound)``, and whether the search is complete."""
        found: list[AbortedTxn] = []
        for txn in self.entries(storage):
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, storage: StorageReader, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset``."""
        if self.file is None or self.last_offset < offset:
            return
        kept = [t for t in self.entries(storage) if t.last_offset < offset]
        self.file.truncate(len(kept) * ENTRY_SIZE)
        self.last_offset = kept[-1].last_offset if kept else -1
