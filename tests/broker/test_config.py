"""Broker configuration from Kafka's property names, as ``kafka-wire serve`` reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_wire.broker import BrokerConfig, BrokerConfigError
from kafka_wire.serve_cli import _properties


def test_properties_file_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\nnum.partitions=3\nlog.segment.bytes : 1048576\nauto.create.topics.enable false\n"
        "log.dirs=/ignored\n",
        encoding="utf-8",
    )
    props = _properties(path, ["node.id=7", "sasl.users.PLAIN.alice=s3cret=x"])
    config = BrokerConfig.from_properties(props)
    assert (config.num_partitions, config.node_id, config.auto_create_topics) == (3, 7, False)
    assert config.topic_defaults == {"segment.bytes": "1048576"}
    assert config.sasl_users == {"PLAIN": {"alice": "s3cret=x"}}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"num.partitions": "zero"}, "num.partitions"),
        ({"num.partitions": "0"}, "num.partitions"),
        ({"auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
        ({"no.such.property": "1"}, "no.such.property"),
        ({"sasl.users.GSSAPI.bob": "x"}, "sasl.enabled.mechanisms"),
    ],
)
def test_bad_properties_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as failure:
        BrokerConfig.from_properties(props)
    assert failure.value.key == key


def test_a_flag_without_a_value_is_refused() -> None:
    with pytest.raises(BrokerConfigError):
        _properties(None, ["num.partitions"])


def test_offsets_topic_and_group_properties() -> None:
    config = BrokerConfig.from_properties(
        {"group.max.size": "5", "offsets.topic.segment.bytes": "2000000", "offsets.topic.compression.codec": "4"}
    )
    assert (config.group_max_size, config.offsets_topic_segment_bytes, config.offsets_topic_compression_codec) == (
        5,
        2_000_000,
        4,
    )
    defaults = BrokerConfig()  # Kafka's defaults
    assert (defaults.group_max_size, defaults.offsets_topic_segment_bytes, defaults.offsets_topic_compression_codec) == (
        2**31 - 1,
        100 * 1024 * 1024,
        0,
    )
    for key, value in (("group.max.size", "0"), ("offsets.topic.segment.bytes", "10"), ("offsets.topic.compression.codec", "5")):
        with pytest.raises(BrokerConfigError) as failure:
            BrokerConfig.from_properties({key: value})
        assert failure.value.key == key
