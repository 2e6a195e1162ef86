"""The clean-shutdown marker (``.kafka_cleanshutdown``): written at a clean stop after every log
is closed, deleted at start; while it was there, the logs are served without recovery, as Kafka
serves them."""

from __future__ import annotations

import json

from kafka_wire.broker.clean_shutdown import CleanShutdown
from kafka_wire.broker.node import Node
from kafka_wire.logformat.checkpoints import RECOVERY_POINT_CHECKPOINT, parse_partition_checkpoint
from kafka_wire.logformat.clean_shutdown import (
    CLEAN_SHUTDOWN_FILE,
    format_clean_shutdown,
    parse_clean_shutdown,
)
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce, records_of

SEGMENT = "t-0/00000000000000000000.log"


def _five_records() -> Engine:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    for i in range(5):
        produce(client, "t", build_batch([NewRecord(None, str(i).encode())], default_timestamp=engine.now_ms))
    return engine


def _stop(engine: Engine) -> None:
    engine._apply(engine.broker.shutdown(engine.now_ms))
    engine.drain()


def _damage_last_batch(storage: MemoryStorage) -> None:
    storage.files[SEGMENT][-1] ^= 0xFF  # under the last batch's CRC: a header walk passes


def test_a_clean_stop_leaves_the_marker_and_the_start_deletes_it() -> None:
    engine = _five_records()
    storage = engine.storage
    assert storage.size(CLEAN_SHUTDOWN_FILE) is None
    _stop(engine)
    marker = json.loads(bytes(storage.files[CLEAN_SHUTDOWN_FILE]))
    assert marker["version"] == 0 and isinstance(marker["brokerEpoch"], int) and marker["brokerEpoch"] >= 0
    points = parse_partition_checkpoint(bytes(storage.files[RECOVERY_POINT_CHECKPOINT]).decode())
    assert points[("t", 0)] == 5  # closed: everything fsynced
    restarted = Engine(storage=storage)
    assert storage.size(CLEAN_SHUTDOWN_FILE) is None  # a crash from here on is unclean again
    assert len(records_of(fetch(Client(restarted, 1), "t", 0))) == 5
    node = restarted.broker.node
    assert isinstance(node, Node) and node.lifecycle is not None
    assert node.lifecycle.previous_broker_epoch == marker["brokerEpoch"]  # sent at registration


def test_after_a_clean_stop_the_logs_are_not_recovered() -> None:
    engine = _five_records()
    _stop(engine)
    _damage_last_batch(engine.storage)
    whole = bytes(engine.storage.files[SEGMENT])
    restarted = Engine(storage=engine.storage)
    assert restarted.broker.state.partitions["t", 0].log_end_offset == 5
    assert bytes(restarted.storage.files[SEGMENT]) == whole


def test_after_an_unclean_stop_the_unflushed_segment_is_recovered() -> None:
    engine = _five_records()  # never stopped: no marker, nothing fsynced
    _damage_last_batch(engine.storage)
    restarted = Engine(storage=engine.storage)
    assert restarted.broker.state.partitions["t", 0].log_end_offset == 4  # the damaged batch cut


def test_no_marker_while_a_directory_still_awaits_its_recovery() -> None:
    storage = MemoryStorage()
    for path in ("t-0/00000000000000000000.log", "u-0/00000000000000000000.log"):
        storage.files[path] = bytearray()
    storage.dirs |= {"t-0", "u-0"}
    unclean = CleanShutdown.load(storage)
    assert not unclean.found and unclean.start_effects() == []
    unclean.opening(("t", 0), {})
    assert unclean.stop_effects(storage, [("t", 0)], 3) == []  # u-0 was never opened, never recovered
    assert unclean.stop_effects(storage, [("t", 0), ("u", 0)], 3) != []
    storage.files[CLEAN_SHUTDOWN_FILE] = bytearray(format_clean_shutdown(3))
    clean = CleanShutdown.load(storage)
    assert clean.found and clean.broker_epoch == 3
    start = clean.opening(("t", 0), {("t", 0): 2})
    assert start.clean_shutdown and start.recovery_point == 2
    again = clean.opening(("t", 0), {("t", 0): 2})  # re-created since: recovered as any log
    assert not again.clean_shutdown and again.recovery_point == 0
    assert clean.stop_effects(storage, [("t", 0)], 4) != []  # u-0 is as the last clean stop left it
    assert clean.stop_effects(storage, [("u", 0)], 4) == []  # t-0 was opened and is not open now


def test_the_marker_reads_as_kafka_writes_it() -> None:
    assert format_clean_shutdown(17) == b'{"version":0,"brokerEpoch":17}'
    assert parse_clean_shutdown(b'{"version":0,"brokerEpoch":17}') == 17
    for unreadable in (
        b"",
        b"{",
        b"[]",
        b'{"version":1,"brokerEpoch":3}',
        b'{"version":0,"brokerEpoch":true}',
    ):
        assert parse_clean_shutdown(unreadable) == -1
