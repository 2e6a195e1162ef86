"""What may differ in the configs both brokers list (CreateTopics v5+, DescribeConfigs).

The topic configs kafka-wire does not implement are not listed by it (:data:`UNLISTED_TOPIC_CONFIGS`,
a deliberate difference: docs/reference/kafka-differences.md); a test that lists every config
checks that this set is exactly what is missing. Documentation is Kafka's own prose.
"""

from __future__ import annotations

from typing import Any, Final

from tests.differential.compare import Rule, Side, ignored, text

#: Topic configs of Kafka 4.4 that kafka-wire neither implements nor lists (nor accepts).
UNLISTED_TOPIC_CONFIGS: Final = tuple(
    f"*configs[name={name!r}]"
    for name in (
        # tiered storage (KIP-405): kafka-wire keeps every segment on local disk
        "remote.storage.enable",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.copy.lag.bytes",
        "remote.copy.lag.ms",
        "local.retention.ms",
        "local.retention.bytes",
        # replication quotas
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
        # share groups' dead-letter queues (KIP-1191)
        "errors.deadletterqueue.group.enable",
        # a decompression cap per batch (kafka-wire's is the broker's, not a topic config)
        "max.decompressed.message.bytes",
    )
)


def _elr_source(value: Any, side: Side) -> Any:
    """Kafka 4 with eligible leader replicas (KIP-966) keeps ``min.insync.replicas`` as a
    cluster-level dynamic default written when the cluster is formatted (source 3); kafka-wire
    reads it from its properties (4) or its default (5)."""
    return "<cluster default>" if value in (3, 4, 5) else value


#: What differs in the configs both list.
LISTED_RULES: Final = (
    Rule("*.documentation", text, "Kafka's documentation is its own prose"),
    Rule("*configs[name='min.insync.replicas'].config_source", _elr_source, _elr_source.__doc__ or ""),
    Rule("*configs[name='min.insync.replicas'].synonyms", ignored, _elr_source.__doc__ or ""),
)
#: The rules of every comparison of topic configs: the listed ones compared, the others not.
TOPIC_CONFIG_RULES: Final = (
    *(
        Rule(pattern, ignored, "a topic config kafka-wire does not implement")
        for pattern in UNLISTED_TOPIC_CONFIGS
    ),
    *LISTED_RULES,
)
