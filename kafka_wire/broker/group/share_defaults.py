"""Kafka 4.x defaults of the share-group broker properties: apart from ``share_partition``, so that
the broker's share configuration (``share.manager.ShareConfig``, built at start) does not load the
share-partition machine before the first share-partition is made."""

from __future__ import annotations

from typing import Final

DEFAULT_LOCK_DURATION_MS: Final = 30_000
DEFAULT_DELIVERY_LIMIT: Final = 5
DEFAULT_MAX_IN_FLIGHT: Final = 2000
