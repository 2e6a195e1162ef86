"""The controller mutation quota of one request (KIP-599; Kafka's ``ControllerMutationQuotaManager``
with its strict and permissive quotas).

``controller_mutation_rate`` bounds the partitions a (user, client id) creates or deletes per
second: CreateTopics counts each new topic's partitions, CreatePartitions the partitions added,
DeleteTopics the deleted topic's partitions. The rate is Kafka's token bucket
(:class:`~kafka_wire.broker.quotas.rate.TokenBucket`): ``quota`` credits per second, a burst of
``quota * controller.quota.window.num * controller.quota.window.size.seconds`` (Kafka's windows of
controller mutation quotas, 11 of 1 s by default), one credit per partition. The quota
that applies is found in the usual order (:mod:`.manager`), and its instance shares one bucket.

- **Strict** (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): before each topic the
  bucket is checked; already below zero, the topic is refused with THROTTLING_QUOTA_EXCEEDED and
  the throttle time is how long the bucket takes to refill to zero (``-tokens / quota`` s);
  else the topic's partitions are taken, even if that leaves the bucket below zero.
- **Permissive** (older versions, which do not know the error): every topic is taken; a bucket
  left below zero gives the throttle time only.

The answer's ``throttle_time_ms`` is the last throttle time, less the time since it was
measured (Kafka's ``AbstractControllerMutationQuota.throttleTime``).
"""

from __future__ import annotations

import math
from typing import Final

from kafka_wire.broker.quotas.manager import CONTROLLER_MUTATION_RATE, Quota, QuotaManager, user_of
from kafka_wire.messages import ApiKey

#: The first version of each API that is refused with THROTTLING_QUOTA_EXCEEDED (strict).
STRICT_SINCE: Final[dict[int, int]] = {
    ApiKey.CREATE_TOPICS: 6,
    ApiKey.CREATE_PARTITIONS: 3,
    ApiKey.DELETE_TOPICS: 5,
}
#: Kafka's message of THROTTLING_QUOTA_EXCEEDED (``Errors.THROTTLING_QUOTA_EXCEEDED``).
THROTTLED_MESSAGE: Final = "The throttling quota has been exceeded."


class MutationQuota:
    """One request's account of its partition mutations (pure: time is ``now_ms``)."""

    def __init__(self, manager: QuotaManager, quota: Quota, *, strict: bool) -> None:
        self._manager = manager
        self._quota = quota
        self.strict = strict
        self._throttle_ms = 0
        self._measured_ms = 0

    def admit(self, partitions: int, now_ms: int) -> bool:
        """Take ``partitions`` mutations; False: refused (strict, the bucket is below zero)."""
        bound = self._quota.bound
        bucket = self._manager.bucket(self._quota, now_ms)
        if self.strict:
            tokens = bucket.measure(bound, now_ms)
            if tokens < 0:
                self._violated(tokens, now_ms)
                return False
            bucket.record(partitions, bound, now_ms)
            return True
        bucket.record(partitions, bound, now_ms)
        if bucket.tokens < 0:
            self._violated(bucket.tokens, now_ms)
        return True

    def _violated(self, tokens: float, now_ms: int) -> None:
        self._throttle_ms = math.floor(-tokens / self._quota.bound * 1000 + 0.5)  # Java's Math.round
        self._measured_ms = now_ms

    def throttle_ms(self, now_ms: int) -> int:
        """The throttle time left at ``now_ms`` (0: none)."""
        return max(0, self._throttle_ms - (now_ms - self._measured_ms))


def mutation_quota(
    manager: QuotaManager, principal: str, client_id: str, api_key: int, version: int
) -> MutationQuota | None:
    """The mutation quota of a CreateTopics, CreatePartitions or DeleteTopics request, or None when
    no ``controller_mutation_rate`` applies to its (user, client id)."""
    if not manager.active:
        return None
    quota = manager.quota(CONTROLLER_MUTATION_RATE, user_of(principal), client_id)
    if quota is None:
        return None
    return MutationQuota(manager, quota, strict=version >= STRICT_SINCE[api_key])
