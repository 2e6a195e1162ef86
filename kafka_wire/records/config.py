"""Reader configuration: integrity checks and caps, all on by default."""

from __future__ import annotations

from typing import Final

from kafka_wire.quick_dataclass import dataclass

DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024
"""Cap on what one compressed batch (or legacy wrapper) may inflate to. Kafka's defaults are
``message.max.bytes`` ~1 MiB per batch and ``fetch.max.bytes`` 50 MiB per fetch; 64 MiB of
records out of one batch is far past normal data and well short of exhausting memory."""

DEFAULT_MAX_BATCH_BYTES: Final = 0x7FFFFFFF
"""Cap on a batch's declared size. Kafka's consumer reads with ``Integer.MAX_VALUE`` here; a
declared size allocates nothing in this reader (a batch longer than the input is a truncated
tail), so the default only rejects sizes the int32 field cannot hold."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadConfig:
    """How records payloads are read.

    ``verify_crc``: check each batch's CRC (CRC-32C for v2, CRC-32 for legacy messages and the
    inner messages of legacy wrappers); switch off only for trusted input.
    ``max_decompressed_bytes``: cap per compressed batch or wrapper (``LimitExceededError``).
    ``max_batch_bytes``: cap on a batch's declared size field (``LimitExceededError``).
    ``strict_inner_magic``: require a legacy wrapper's inner messages to carry the wrapper's
    magic (Kafka's broker-side validation does; its consumer does not, so off by default).
    """

    verify_crc: bool = True
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    strict_inner_magic: bool = False

    def __post_init__(self) -> None:
        if self.max_decompressed_bytes < 0:
            raise ValueError("max_decompressed_bytes must be >= 0")
        if self.max_batch_bytes < 14:
            raise ValueError("max_batch_bytes must be >= 14 (the smallest legacy message)")


DEFAULT_READ_CONFIG: Final = ReadConfig()
