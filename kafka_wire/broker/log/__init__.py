"""A partition's log in Kafka's on-disk format, as pure state machines.

``PartitionLog`` (log.py) appends, reads, keeps retention and compacts; it writes only by
returning storage effects and reads through an injected ``StorageReader``. ``LogConfig``
(config.py) holds the topic-level settings. See docs/internals/log.md.
"""

from kafka_wire.broker.log.config import CONFIG_KEYS, ConfigError, ConfigKey, ConfigType, LogConfig
from kafka_wire.broker.log.log import AppendResult, DeleteRecordsResult, PartitionLog, ReadResult
from kafka_wire.broker.log.validation import AppendOrigin, RecordError

__all__ = [
    "CONFIG_KEYS",
    "AppendOrigin",
    "AppendResult",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "DeleteRecordsResult",
    "LogConfig",
    "PartitionLog",
    "ReadResult",
    "RecordError",
]
