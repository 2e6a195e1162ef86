"""``kafka-wire serve``: run the broker on a TCP port with its data in a directory."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path

from kafka_wire.broker.config import BrokerConfig, BrokerConfigError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "serve",
        help="run a Kafka broker",
        description="Run kafka_wire's broker: real Kafka clients can connect to it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on and advertise (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9092, help="TCP port (default 9092; 0 picks a free one)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="log directory (default ./data)")
    parser.add_argument("--config", type=Path, help="a broker properties file (Kafka's property names)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a broker property, e.g. num.partitions=3"
    )
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log to stderr (default WARNING)"
    )
    parser.set_defaults(handler=run)


def _properties(path: Path | None, pairs: list[str]) -> dict[str, str]:
    props: dict[str, str] = {}
    if path is not None:
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, value = ([*re.split(r"\s*[=:]\s*|\s+", line, maxsplit=1), ""])[:2]
                props[key] = value
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise BrokerConfigError(pair, "expected KEY=VALUE")
        props[key.strip()] = value.strip()
    return props


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=os.environ.get("KAFKA_WIRE_LOG_LEVEL", args.log_level), format="%(asctime)s %(name)s %(message)s")
    try:
        config = BrokerConfig.from_properties(_properties(args.config, args.set), BrokerConfig(host=args.host))
    except BrokerConfigError as exc:
        print(f"kafka-wire serve: {exc}", file=sys.stderr)
        return 2
    from kafka_wire.adapters.broker_server import serve_until_signalled

    return serve_until_signalled(config, args.host, args.port, args.data_dir)
