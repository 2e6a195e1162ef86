"""``kafka-wire serve``: run the broker on a TCP port with its data in a directory.

Settings come from a Kafka broker properties file (``--config``, Kafka's ``server.properties``
loads), ``--set KEY=VALUE`` (wins over the file) and ``--host`` / ``--port`` / ``--data-dir``
(win over both). What the properties mean is :mod:`kafka_wire.broker.server_properties`.

With ``controller.quorum.voters`` set the process is a node of a replicated cluster (KRaft mode):
it opens every listener of ``listeners`` (``--host`` / ``--port`` do not apply; ``--data-dir``
does) and stops with a controlled shutdown.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.broker.server_properties import EMPTY_HOST_BINDS, ServerProperties, load_server_properties
from kafka_wire.logformat.properties import parse_properties

if TYPE_CHECKING:
    from kafka_wire.adapters.tls import TlsListener

#: Where a property without ``--config`` or ``--set`` comes from.
DEFAULT_HOST: Final = EMPTY_HOST_BINDS
DEFAULT_PORT: Final = 9092
DEFAULT_DATA_DIR: Final = Path("data")
_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
_log = logging.getLogger("kafka_wire.serve")


class PropertiesFileError(Exception):
    """The properties file cannot be read (one line: the file and why)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "serve",
        help="run a Kafka broker",
        description="Run kafka_wire's broker: real Kafka clients can connect to it.",
    )
    parser.add_argument(
        "--host",
        help=f"address to listen on and advertise (default: the properties' listener, else {DEFAULT_HOST})",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"TCP port; 0 picks a free one (default: the properties' listener, else {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help=f"log directory (default: log.dirs of the properties, else ./{DEFAULT_DATA_DIR})",
    )
    parser.add_argument(
        "--config", type=Path, help="a broker properties file (Kafka's server.properties loads)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker property, e.g. num.partitions=3",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log to stderr (default WARNING)",
    )
    parser.add_argument(
        "--control-port",
        type=int,
        metavar="PORT",
        help="serve the fault-injection control protocol (HTTP/JSON) on 127.0.0.1:PORT "
        "(docs/guide/fault-injection.md); 0 picks a free port",
    )
    parser.set_defaults(handler=run)


def read_properties_file(path: Path) -> dict[str, str]:
    """The properties of a Java properties file (see :mod:`kafka_wire.logformat.properties`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PropertiesFileError(
            f"cannot read --config {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    return parse_properties(text)


def _properties(path: Path | None, pairs: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The properties of ``--config`` then ``--set``, and where each came from."""
    props: dict[str, str] = {}
    origins: dict[str, str] = {}
    if path is not None:
        props = read_properties_file(path)
        origins = dict.fromkeys(props, str(path))
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BrokerConfigError(pair, "expected --set KEY=VALUE")
        props[key.strip()] = value.strip()
        origins[key.strip()] = "--set"
    return props, origins


def describe_error(exc: BrokerConfigError, props: dict[str, str], origins: dict[str, str]) -> str:
    """One line naming where the property came from, the key, its value and the reason."""
    if exc.key in props:
        return f"kafka-wire serve: {origins[exc.key]}: {exc.key}={props[exc.key]}: {exc.reason}"
    return f"kafka-wire serve: {exc.key}: {exc.reason}"


def endpoints(args: argparse.Namespace, loaded: ServerProperties) -> tuple[str, int, str | None, int | None]:
    """Bind host and port, advertised host and port (None: the bound ones): the command line wins
    over the properties, which win over the defaults."""
    bind, told = loaded.bind, loaded.advertised
    host = args.host if args.host is not None else bind.host if bind is not None else DEFAULT_HOST
    port = args.port if args.port is not None else bind.port if bind is not None else DEFAULT_PORT
    advertised_host = args.host if args.host is not None else told.host if told is not None else None
    advertised_port = None if args.port is not None else told.port if told is not None and told.port else None
    return host, port, advertised_host, advertised_port


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=os.environ.get("KAFKA_WIRE_LOG_LEVEL", args.log_level),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    props: dict[str, str] = {}
    origins: dict[str, str] = {}
    try:
        props, origins = _properties(args.config, args.set)
        loaded = load_server_properties(props)
        tls = _tls_listeners(loaded)
    except PropertiesFileError as exc:
        print(f"kafka-wire serve: {exc}", file=sys.stderr)
        return 2
    except BrokerConfigError as exc:
        print(describe_error(exc, props, origins), file=sys.stderr)
        return 2
    for note in loaded.notes:
        _log.log(_LEVELS[note.level], "%s", note.message)
    data_dir = args.data_dir if args.data_dir is not None else Path(loaded.data_dir or DEFAULT_DATA_DIR)
    if loaded.config.cluster is not None:
        if args.host is not None or args.port is not None:
            print(
                "kafka-wire serve: --host and --port do not apply to a cluster node "
                "(controller.quorum.voters is set): its addresses are its listeners",
                file=sys.stderr,
            )
            return 2
        from kafka_wire.cli.serve_process import serve_node_until_signalled

        return serve_node_until_signalled(loaded.config, data_dir, args.control_port, tls)
    host, port, advertised_host, advertised_port = endpoints(args, loaded)
    from kafka_wire.cli.serve_process import serve_until_signalled

    return serve_until_signalled(
        loaded.config,
        host,
        port,
        data_dir,
        advertised_host=advertised_host,
        advertised_port=advertised_port,
        control_port=args.control_port,
        tls=None if loaded.bind is None else tls.get(loaded.bind.listener),
    )


def _tls_listeners(loaded: ServerProperties) -> dict[str, TlsListener]:
    """The TLS context of each TLS listener, built now: a key or certificate that cannot be used
    stops the start with a line naming its property (``kafka_wire.adapters.tls`` loads on demand)."""
    if not loaded.tls:
        return {}
    from kafka_wire.adapters.tls import TlsListener

    return {name: TlsListener.of(settings) for name, settings in loaded.tls.items()}
