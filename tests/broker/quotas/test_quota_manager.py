"""The quota manager: Kafka's resolution order, per-instance sharing, sampled rates and the
throttle time that brings the rate back to the quota."""

from __future__ import annotations

import pytest

from kafka_wire.broker.config import BrokerConfig, BrokerConfigError
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.quotas_image import ClientQuotasImage
from kafka_wire.broker.quotas.manager import QuotaManager, user_of
from kafka_wire.broker.quotas.rate import SampledRate
from kafka_wire.messages import ClientQuotaRecord, ClientQuotaRecordEntityData
from tests.broker.engine import Engine

KEY = "producer_byte_rate"


def image(*quotas: tuple[dict[str, str | None], float]) -> ClientQuotasImage:
    values = ClientQuotasImage()
    for entity, value in quotas:
        values.replay(
            ClientQuotaRecord(
                entity=[ClientQuotaRecordEntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                key=KEY,
                value=value,
                remove=False,
            ),
            DeltaBuilder(),
        )
    return values


ORDER: list[dict[str, str | None]] = [
    {"user": "u", "client-id": "c"},
    {"user": "u", "client-id": None},
    {"user": "u"},
    {"user": None, "client-id": "c"},
    {"user": None, "client-id": None},
    {"user": None},
    {"client-id": "c"},
    {"client-id": None},
]


@pytest.mark.parametrize("winner", range(len(ORDER)))
def test_the_most_specific_quota_wins(winner: int) -> None:
    # Every entity from the winner down has a quota; the winner's applies.
    manager = QuotaManager(
        values=image(*[(entity, float(i + 1)) for i, entity in enumerate(ORDER) if i >= winner])
    )
    quota = manager.quota(KEY, "u", "c")
    assert quota is not None and quota.bound == winner + 1
    assert manager.quota("consumer_byte_rate", "u", "c") is None


def test_instances_share_as_kafka_metric_tags() -> None:
    manager = QuotaManager(values=image(({"user": "u"}, 10.0), ({"client-id": None}, 5.0)))
    a, b = manager.quota(KEY, "u", "c1"), manager.quota(KEY, "u", "c2")
    assert a is not None and b is not None and a.instance == b.instance == (KEY, "u", "")  # one user: shared
    x, y = manager.quota(KEY, "v", "c1"), manager.quota(KEY, "v", "c2")
    assert x is not None and y is not None and x.instance != y.instance  # a default: one rate per client id


def test_user_of_principal() -> None:
    assert user_of("User:alice") == "alice"
    assert user_of("User:ANONYMOUS") == user_of("") == "ANONYMOUS"


def test_rate_spreads_a_first_burst_over_the_windows() -> None:
    rate = SampledRate(11, 1000, now_ms=0)
    rate.record(10_000, 0)
    assert rate.span_ms(0) == 10_000  # at least samples - 1 whole windows
    assert rate.measure(0) == pytest.approx(1000.0)
    assert rate.measure(10_500) == pytest.approx(10_000 / 10.5)
    assert rate.measure(11_000) == 0.0  # the window is older than 11 windows: purged


def test_throttle_time_brings_the_rate_back_to_the_quota() -> None:
    manager = QuotaManager(values=image(({"client-id": "c"}, 1000.0)))
    assert manager.record(KEY, "u", "c", 5_000, 0) == 0  # 500 B/s over 10 s
    throttle = manager.record(KEY, "u", "c", 15_000, 100)  # 20,000 B over 10.1 s
    assert throttle == 9_900  # (1980.2 - 1000) / 1000 * 10,100 ms
    # The span was padded to 10 windows; at 10 s it is the real 10 s, and the rate still over.
    assert manager.record(KEY, "u", "c", 0, 100 + throttle) == 10_000
    assert manager.record(KEY, "u", "c", 0, 11_000) == 0  # the first window has expired
    assert manager.record(KEY, "u", "other", 10**9, 100) == 0  # no quota for it


def test_unrecord_takes_back() -> None:
    manager = QuotaManager(values=image(({"client-id": "c"}, 1000.0)))
    assert manager.record(KEY, "u", "c", 50_000, 0) > 0
    manager.unrecord(KEY, "u", "c", 50_000, 0)
    assert manager.record(KEY, "u", "c", 1_000, 0) == 0


def test_a_steady_producer_at_the_quota_converges() -> None:
    """A client that waits out each throttle time gets the quota's rate over a long run (the first
    windows let a first burst of up to ``samples - 1`` windows' worth through, as Kafka's do: over
    a minute that is still about 11% over the quota; over five, under 2%)."""
    manager = QuotaManager(values=image(({"client-id": "c"}, 100_000.0)))
    now, sent = 0, 0
    while now < 300_000:
        sent += 16_384
        throttle = manager.record(KEY, "u", "c", 16_384, now)
        now += max(throttle, 5)
    assert sent * 1000 / now == pytest.approx(100_000, rel=0.02)


def test_an_idle_rate_is_dropped_after_an_hour() -> None:
    manager = QuotaManager(values=image(({"client-id": None}, 1000.0)))
    for n in range(100):
        manager.record(KEY, "u", f"c{n}", 10, 0)
    assert len(manager._rates) == 100
    manager.record(KEY, "u", "late", 10, 3_600_000)
    assert list(manager._rates) == [(KEY, "", "late")]


def test_the_window_properties_reach_the_quota_manager() -> None:
    config = BrokerConfig.from_properties({"quota.window.num": "5", "quota.window.size.seconds": "2"})
    assert (config.quota_window_num, config.quota_window_size_seconds) == (5, 2)
    quotas = Engine(config).broker.state.quotas
    assert (quotas.window_num, quotas.window_ms) == (5, 2000)
    for bad in ({"quota.window.num": "1"}, {"quota.window.size.seconds": "0"}):
        with pytest.raises(BrokerConfigError) as failure:
            BrokerConfig.from_properties(bad)
        assert failure.value.key == next(iter(bad))
