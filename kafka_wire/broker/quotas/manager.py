"""Which quota applies to a request, how fast its entity goes, and how long to throttle it (Kafka's
``ClientQuotaManager`` with its default quota callback).

**Resolution.** For a (user, client id), each quota key (``producer_byte_rate``,
``consumer_byte_rate``, ``request_percentage``, ``controller_mutation_rate``) is looked up in the
quota entities in Kafka's order, the first that sets it winning:

1. ``user=U, client-id=C``    2. ``user=U, client-id=<default>``    3. ``user=U``
4. ``user=<default>, client-id=C``    5. ``user=<default>, client-id=<default>``
6. ``user=<default>``    7. ``client-id=C``    8. ``client-id=<default>``

No match: no quota, nothing is measured. The user is the principal's name (``ANONYMOUS`` without
SASL).

**Sharing.** Requests are measured per *quota entity instance*: the entity that matched, with the
request's own user and client id for the types it names (a default entity gives each user or
client id its own rate, as Kafka's metric tags do). So the clients of one user share a rate
under a ``user=U`` quota, and each client id has its own under ``client-id=<default>``.

Rates unused for an hour are dropped, as Kafka drops an inactive quota sensor, so the rates kept
do not grow with every client id ever seen.

**Throttle time.** A request's bytes are recorded, then the rate over the windows
(:class:`~kafka_wire.broker.quotas.rate.SampledRate`, ``quota.window.num`` windows of
``quota.window.size.seconds``) is compared with the quota; over it, the throttle time is how long
the windows' span must grow for the rate to come back to the quota:
``(rate - quota) / quota * span``, rounded, as Kafka's ``QuotaUtils.throttleTime``.
A request recorded and then not served (a throttled Fetch answered without records) is taken
back (:meth:`QuotaManager.unrecord`), as Kafka's ``unrecordQuotaSensor``.

The manager reads the quota values from the metadata image's
:class:`~kafka_wire.broker.controller.quotas_image.ClientQuotasImage` (:meth:`QuotaManager.attach`),
so a change committed to the metadata log applies to the next request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kafka_wire.broker.controller.quotas_image import CLIENT_ID, USER, ClientQuotasImage, Entity
from kafka_wire.broker.quotas.rate import SampledRate, TokenBucket
from kafka_wire.quick_dataclass import dataclass

#: ``quota.window.num`` and ``quota.window.size.seconds`` (Kafka's defaults).
DEFAULT_WINDOW_NUM: Final = 11
DEFAULT_WINDOW_SIZE_SECONDS: Final = 1

PRINCIPAL_TYPE: Final = "User:"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
#: Nanoseconds of handling to the percentage-seconds of one thread they are (Kafka's
#: ``NanosToPercentagePerSecond``): a rate of them is a percentage of a thread.
NANOS_TO_PERCENTAGE: Final = 100.0 / 1_000_000_000
#: A rate not used for this long is dropped (Kafka expires an inactive quota sensor after an hour).
INACTIVE_RATE_MS: Final = 3_600_000
#: How often the rates are checked for inactive ones.
PURGE_INTERVAL_MS: Final = 60_000


def user_of(principal: str) -> str:
    """The quota user of a principal (``User:alice`` -> ``alice``; none: ``ANONYMOUS``)."""
    if not principal:
        return "ANONYMOUS"
    return principal[len(PRINCIPAL_TYPE) :] if principal.startswith(PRINCIPAL_TYPE) else principal


def candidates(user: str, client_id: str) -> tuple[Entity, ...]:
    """The entities to look a quota up in, most specific first (see the module docstring)."""
    return (
        ((CLIENT_ID, client_id), (USER, user)),
        ((CLIENT_ID, None), (USER, user)),
        ((USER, user),),
        ((CLIENT_ID, client_id), (USER, None)),
        ((CLIENT_ID, None), (USER, None)),
        ((USER, None),),
        ((CLIENT_ID, client_id),),
        ((CLIENT_ID, None),),
    )


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota that applies: its bound and the instance whose rate is measured against it."""

    bound: float
    #: (key, user or "", client id or ""): what shares one rate.
    instance: tuple[str, str, str]


class QuotaManager:
    """Rates per quota entity instance and the throttle times they give (pure: time is
    ``now_ms``)."""

    def __init__(
        self,
        *,
        window_num: int = DEFAULT_WINDOW_NUM,
        window_size_seconds: int = DEFAULT_WINDOW_SIZE_SECONDS,
        values: ClientQuotasImage | None = None,
        mutation_windows: tuple[int, int] = (DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS),
    ) -> None:
        self.window_num = window_num
        self.window_ms = window_size_seconds * 1000
        #: ``controller.quota.window.num`` and ``.size.seconds`` (in ms): the token buckets' burst.
        self._mutation_windows = (mutation_windows[0], mutation_windows[1] * 1000)
        self._values = values if values is not None else ClientQuotasImage()
        self._rates: dict[tuple[str, str, str], SampledRate] = {}
        #: ``controller_mutation_rate``'s token buckets, per quota instance.
        self._buckets: dict[tuple[str, str, str], TokenBucket] = {}
        #: When each rate was last recorded to.
        self._used: dict[tuple[str, str, str], int] = {}
        self._next_purge_ms: int | None = None

    def attach(self, values: ClientQuotasImage) -> None:
        """Read quota values from ``values`` (the node's metadata image) from now on."""
        self._values = values

    @property
    def values(self) -> ClientQuotasImage:
        """The quota values in force."""
        return self._values

    @property
    def active(self) -> bool:
        """Whether any quota is set (else nothing needs measuring)."""
        return bool(self._values.quotas)

    def quota(self, key: str, user: str, client_id: str) -> Quota | None:
        """The quota ``key`` that applies to (user, client id), or None."""
        quotas: Mapping[Entity, Mapping[str, float]] = self._values.quotas
        if not quotas:
            return None
        for entity in candidates(user, client_id):
            values = quotas.get(entity)
            if values is not None and key in values:
                types = dict(entity)
                return Quota(
                    values[key],
                    (key, user if USER in types else "", client_id if CLIENT_ID in types else ""),
                )
        return None

    def _touch(self, quota: Quota, now_ms: int) -> None:
        """Mark the quota instance used now; drop the rates unused for an hour."""
        if self._next_purge_ms is None or now_ms >= self._next_purge_ms:
            self._next_purge_ms = now_ms + PURGE_INTERVAL_MS
            for instance in [i for i, used in self._used.items() if now_ms - used >= INACTIVE_RATE_MS]:
                del self._used[instance]
                self._rates.pop(instance, None)
                self._buckets.pop(instance, None)
        self._used[quota.instance] = now_ms

    def _rate(self, quota: Quota, now_ms: int) -> SampledRate:
        self._touch(quota, now_ms)
        rate = self._rates.get(quota.instance)
        if rate is None:
            rate = self._rates[quota.instance] = SampledRate(self.window_num, self.window_ms, now_ms)
        return rate

    def bucket(self, quota: Quota, now_ms: int) -> TokenBucket:
        """The token bucket of a ``controller_mutation_rate`` quota instance."""
        self._touch(quota, now_ms)
        bucket = self._buckets.get(quota.instance)
        if bucket is None:
            samples, window_ms = self._mutation_windows
            bucket = self._buckets[quota.instance] = TokenBucket(samples, window_ms, quota.bound, now_ms)
        return bucket

    def record_request_time(self, user: str, client_id: str, time_ns: int, now_ms: int) -> None:
        """Record ``time_ns`` spent handling (user, client id)'s requests against
        ``request_percentage``, without a throttle (Kafka records its network threads' time so:
        the next answer's throttle time counts it)."""
        quota = self.quota(REQUEST_PERCENTAGE, user, client_id)
        if quota is not None:
            self._rate(quota, now_ms).record(time_ns * NANOS_TO_PERCENTAGE, now_ms)

    def request_throttle(self, user: str, client_id: str, now_ms: int) -> int:
        """The ``request_percentage`` throttle time of an answer to (user, client id) now,
        bounded by one window (Kafka's ``ClientRequestQuotaManager``); 0: within it or none."""
        quota = self.quota(REQUEST_PERCENTAGE, user, client_id)
        if quota is None:
            return 0
        rate = self._rate(quota, now_ms)
        measured = rate.measure(now_ms)
        if measured <= quota.bound:
            return 0
        return min(self.window_ms, round((measured - quota.bound) / quota.bound * rate.span_ms(now_ms)))

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` (bytes) for (user, client id) against quota ``key``; the throttle time
        in ms (0: within the quota, or no quota)."""
        quota = self.quota(key, user, client_id)
        if quota is None:
            return 0
        rate = self._rate(quota, now_ms)
        rate.record(value, now_ms)
        measured = rate.measure(now_ms)
        if measured <= quota.bound:
            return 0
        return round((measured - quota.bound) / quota.bound * rate.span_ms(now_ms))

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded ``value`` (a throttled Fetch answered without its records)."""
        quota = self.quota(key, user, client_id)
        if quota is not None:
            self._rate(quota, now_ms).record(-value, now_ms)

    def max_value_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most a request may carry under quota ``key`` (Kafka bounds a Fetch's ``max_bytes``
        by it): the quota over the span of the windows but the current one; None: no quota."""
        quota = self.quota(key, user, client_id)
        if quota is None:
            return None
        return quota.bound * (self.window_num - 1) * self.window_ms / 1000
