"""``.kafka_cleanshutdown``: the file a broker leaves in its data directory when it stopped cleanly.

Kafka writes it after every log of the directory is flushed and closed, and deletes it when the
next start has read it: its presence at start says no log needs recovering. Its content is JSON
with a format ``version`` (0) and the ``brokerEpoch`` the broker had when it stopped (KIP-966: a
broker shows by it that its last stop was clean). Only the presence of the file matters to
recovery; a content that cannot be read gives no epoch (-1), as Kafka reads it.
"""

from __future__ import annotations

import json
from typing import Final

CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
CLEAN_SHUTDOWN_VERSION: Final = 0
NO_BROKER_EPOCH: Final = -1
#: Larger files are not ours (the JSON of two numbers takes under 60 bytes).
MAX_CLEAN_SHUTDOWN_BYTES: Final = 4096


def format_clean_shutdown(broker_epoch: int) -> bytes:
    return json.dumps(
        {"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":")
    ).encode("ascii")


def parse_clean_shutdown(data: bytes) -> int:
    """The broker epoch the file holds; :data:`NO_BROKER_EPOCH` when it holds none readable."""
    if len(data) > MAX_CLEAN_SHUTDOWN_BYTES:
        return NO_BROKER_EPOCH
    try:
        content = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return NO_BROKER_EPOCH
    if not isinstance(content, dict) or content.get("version") != CLEAN_SHUTDOWN_VERSION:
        return NO_BROKER_EPOCH
    epoch = content.get("brokerEpoch")
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else NO_BROKER_EPOCH
