"""The ``kafka-wire`` command line: one subcommand module each (``decode``, ``dump-log``, ``serve``, ``spark-load``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-wire", description="Sans-IO Apache Kafka protocol toolkit")
    sub = parser.add_subparsers(dest="command", required=True)

    from kafka_wire import decode_cli

    decode_cli.add_parser(sub)

    from kafka_wire.records import dump_log

    dump_log.add_parser(sub)

    from kafka_wire import serve_cli

    serve_cli.add_parser(sub)

    from kafka_wire.spark import load_cli  # imports PySpark only when run

    load_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = args.handler
    result: int = handler(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
