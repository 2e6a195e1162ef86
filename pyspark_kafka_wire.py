"""Spark's discovery hook for the ``kafka_wire`` data source.

Spark 4 looks for top-level modules named ``pyspark_*`` when a session first uses a Python data
source and registers each one's ``DefaultSource``. With ``kafka-wire[spark]`` installed,
``spark.read.format("kafka_wire")`` therefore works without ``spark.dataSource.register``.
Without pyarrow (the ``spark`` extra) this module offers nothing, so Spark's lookup of other
sources is not disturbed.
"""

from __future__ import annotations

try:
    from kafka_wire.spark.source import KafkaWireDataSource as DefaultSource
except ImportError:  # the spark extra is not installed
    pass
else:
    __all__ = ["DefaultSource"]
