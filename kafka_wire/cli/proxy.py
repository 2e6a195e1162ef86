"""``kafka-wire proxy``: a Kafka-aware proxy in front of a cluster.

One listening port per upstream broker: the bootstrap upstreams get ``--listen``'s port and the
ones after it (or the ``--ports`` given); every broker a response names later gets the next free
port as it appears. Clients see only the proxy's addresses. Filters come from ``--filter NAME[:K=V,...]``
(repeatable, in chain order) or a JSON file (``--filters FILE``: a list of objects with a
``filter`` name and options); :mod:`kafka_wire.proxy.builtin` describes them.

It prints one line per port (``kafka-wire proxy: 127.0.0.1:9192 -> broker:9092``) and runs until
interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import ssl
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_wire.proxy.filters import Filter

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "proxy",
        help="run a Kafka-aware proxy with filters",
        description="Relay Kafka clients to upstream brokers, rewriting broker addresses, through a filter chain.",
    )
    parser.add_argument("--upstream", required=True, help="bootstrap brokers, HOST:PORT[,HOST:PORT...]")
    parser.add_argument(
        "--listen", default="127.0.0.1:9192", help="HOST:PORT of the first proxy port (PORT 0: free ports)"
    )
    parser.add_argument("--ports", help="explicit proxy ports for the upstreams, P1[,P2...]")
    parser.add_argument("--advertise-host", help="host clients reach the proxy by (default: the listen host)")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="NAME[:K=V,...]",
        help="add a filter to the chain (repeatable): log, tenant, policy, encrypt, faults",
    )
    parser.add_argument("--filters", type=Path, help='a JSON file: a list of {"filter": NAME, options...}')
    parser.add_argument("--client-tls", nargs=2, metavar=("CERT", "KEY"), help="TLS on the proxy's ports")
    parser.add_argument(
        "--upstream-tls", metavar="CA", help="TLS towards the upstream, trusting CA ('-': system)"
    )
    parser.add_argument("--log-level", choices=sorted(_LEVELS), default="warning")
    parser.set_defaults(handler=run)


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def parse_filter(spec: str) -> tuple[str, dict[str, str]]:
    """``name:k=v,k2=v2`` -> (name, options)."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"filter option {item!r} is not KEY=VALUE")
        options[key.strip()] = value.strip()
    return name.strip(), options


def build_filters(
    specs: Sequence[str], file: Path | None, sink_for: Callable[[str], Callable[[str], None]]
) -> list[Filter]:
    from kafka_wire.proxy.builtin import make_filter

    entries = [parse_filter(s) for s in specs]
    if file is not None:
        for item in json.loads(file.read_text(encoding="utf-8")):
            options = {k: str(v) for k, v in item.items() if k != "filter"}
            entries.append((str(item["filter"]), options))
    return [make_filter(name, options, sink_for, os.urandom) for name, options in entries]


def _file_sink(path: str) -> Callable[[str], None]:
    if path == "-":
        return lambda line: print(line, flush=True)
    out = open(path, "a", encoding="utf-8")

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return write


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=_LEVELS[args.log_level], format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        upstreams = [parse_address(u) for u in args.upstream.split(",") if u.strip()]
        host, first_port = parse_address(args.listen)
        ports = [int(p) for p in args.ports.split(",")] if args.ports else []
        filters = build_filters(args.filter, args.filters, _file_sink)
    except (ValueError, OSError, KeyError, TypeError) as exc:
        print(f"kafka-wire proxy: {exc}", file=sys.stderr)
        return 2
    client_ssl = upstream_ssl = None
    if args.client_tls:
        client_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        client_ssl.load_cert_chain(*args.client_tls)
    if args.upstream_tls:
        upstream_ssl = ssl.create_default_context(
            cafile=None if args.upstream_tls == "-" else args.upstream_tls
        )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            _serve(
                upstreams,
                host,
                first_port,
                ports,
                args.advertise_host or host,
                filters,
                client_ssl,
                upstream_ssl,
            )
        )
    return 0


async def _serve(
    upstreams: list[tuple[str, int]],
    host: str,
    first_port: int,
    ports: list[int],
    advertised: str,
    filters: list[Filter],
    client_ssl: ssl.SSLContext | None,
    upstream_ssl: ssl.SSLContext | None,
) -> None:
    from kafka_wire.adapters.proxy_server import ProxyServer
    from kafka_wire.proxy.proxy import Proxy, ProxyConfig

    listen = [ports[i] if i < len(ports) else None for i in range(len(upstreams))]
    if not ports and first_port:
        listen = [first_port + i for i in range(len(upstreams))]
    server = ProxyServer(
        lambda allocate: Proxy(
            [(h, p, port) for (h, p), port in zip(upstreams, listen, strict=True)],
            filters,
            ProxyConfig(advertised_host=advertised),
            allocate,
        ),
        host=host,
        first_port=first_port + len(upstreams) if first_port else 0,
        client_ssl=client_ssl,
        upstream_ssl=upstream_ssl,
    )
    await server.start()
    for route in server.routes:
        print(
            f"kafka-wire proxy: {advertised}:{route.port} -> {route.upstream_host}:{route.upstream_port}",
            flush=True,
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()
