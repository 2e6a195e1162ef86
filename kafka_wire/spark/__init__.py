"""Kafka data into Spark: logs at rest (segment files) and live clusters, batch and streaming.

Hand-written glue (nothing here is generated). The modules that do not import PySpark work on
their own: :mod:`~kafka_wire.spark.ranges` (topic-partition offset ranges and the options that
select them), :mod:`~kafka_wire.spark.logs` (reading Kafka's on-disk log with
:mod:`kafka_wire.logformat`: a broker's data directory, a backup, copied segment files) and
:mod:`~kafka_wire.spark.live` (synchronous calls for Spark tasks over :mod:`kafka_wire.client`). :mod:`~kafka_wire.spark.source` is the PySpark
data source, found by Spark under the short name ``kafka_wire`` through the top-level module
``pyspark_kafka_wire``; install it with the ``spark`` extra (``pip install 'kafka-wire[spark]'``).

Like the rest of ``adapters``-level code, this package does file and socket I/O; the record
decoding it relies on is :mod:`kafka_wire.records`. It imports nothing from :mod:`kafka_wire.broker`.
"""
