"""The ``kafka-wire`` command line: one module per subcommand.

- ``cluster`` (:mod:`~kafka_wire.cli.cluster`): a local replicated cluster of ``serve`` processes.
- ``decode`` (:mod:`~kafka_wire.cli.decode`): size-prefixed frames to JSON lines.
- ``fuzz`` (:mod:`~kafka_wire.cli.fuzz`): the network fuzzer for Kafka-speaking servers.
- ``dump-log`` (:mod:`~kafka_wire.cli.dump_log`): the batches of a segment file or records
  payload, or the entries of an index file.
- ``proxy`` (:mod:`~kafka_wire.cli.proxy`): a Kafka-aware proxy with a filter chain.
- ``serve`` (:mod:`~kafka_wire.cli.serve`): run the broker.
- ``simulate`` (:mod:`~kafka_wire.cli.simulate`): seeded simulations of a cluster with faults.
- ``spark-load`` (:mod:`~kafka_wire.cli.spark_load`): topics into Parquet with Spark.

Each module has ``add_parser(sub)``, which registers its subcommand and sets ``handler``;
:func:`main` parses the arguments and returns the handler's exit status. Subcommand modules
import what they run (the broker, PySpark) only when they run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kafka_wire.cli import cluster, decode, dump_log, fuzz, proxy, serve, simulate, spark_load


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="Sans-IO Apache Kafka protocol toolkit")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (cluster, decode, dump_log, fuzz, proxy, serve, simulate, spark_load):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.handler
    result: int = handler(args)
    return result


__all__ = ["build_parser", "main"]
