"""Running ``kafka-wire serve`` as a process: a :class:`~kafka_wire.adapters.broker_server.BrokerServer`
(a single node, or a node of a replicated cluster) until SIGINT or SIGTERM, with one line on stdout
when ready, the fault-injection control protocol when asked, and the exit status.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.data_dir import DataDirError

if TYPE_CHECKING:
    from kafka_wire.adapters.jwks import JwksRefresher
    from kafka_wire.adapters.tls import TlsListener

#: Where the fault-injection control protocol listens (``--control-port``): loopback only.
CONTROL_HOST: Final = "127.0.0.1"


def serve_until_signalled(
    config: BrokerConfig,
    host: str,
    port: int,
    data_dir: Path,
    *,
    advertised_host: str | None = None,
    advertised_port: int | None = None,
    control_port: int | None = None,
    tls: TlsListener | None = None,
) -> int:
    """Run a broker until SIGINT or SIGTERM (``kafka-wire serve``); prints one line when ready.

    Clients are told ``advertised_host:advertised_port`` (by default the bound address). With
    ``control_port``, the fault-injection control protocol listens on 127.0.0.1 there
    (``kafka_wire.adapters.fault_control``). With ``tls`` the listener speaks TLS."""
    return asyncio.run(
        _serve(config, host, port, data_dir, advertised_host, advertised_port, control_port, tls)
    )


async def _serve(
    config: BrokerConfig,
    host: str,
    port: int,
    data_dir: Path,
    advertised_host: str | None,
    advertised_port: int | None,
    control_port: int | None = None,
    tls: TlsListener | None = None,
) -> int:
    if port == 0:
        # Bind first to learn the port, then advertise it.
        probe = await asyncio.start_server(lambda r, w: None, host, 0)
        port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()

    def build() -> BrokerServer:
        return BrokerServer(
            replace(
                config,
                host=advertised_host or host,
                port=advertised_port or port,
                log_dir=config.log_dir or str(data_dir.resolve()),
            ),
            data_dir,
        )

    async def start(server: BrokerServer) -> str:
        bound = await server.start(host, port, tls=tls)
        told = server.config.host, server.config.port
        advertised = "" if told == (host, bound) else f", advertised as {told[0]}:{told[1]}"
        over = "" if tls is None else f" ({tls.settings.listener}, TLS)"
        return f"listening on {host}:{bound}{over}{advertised}"

    return await _run_until_signalled(build, start, data_dir, f"{host}:{port}", control_port)


async def _run_until_signalled(
    build: Callable[[], BrokerServer],
    start: Callable[[BrokerServer], Awaitable[str]],
    data_dir: Path,
    where: str,
    control_port: int | None = None,
) -> int:
    """Build and start a server (``start`` opens its listeners and says where it listens), print
    one line when ready, serve until SIGINT or SIGTERM, stop; the exit status. With
    ``control_port``, the fault-injection control protocol listens on 127.0.0.1 there."""
    from kafka_wire.adapters.collector import Collector

    try:
        server = build()
        key_sets = await _key_sets(server)
        listening = await start(server)
    except _JwksError as exc:
        return _cannot_start(str(exc))
    except DataDirError as exc:
        return _cannot_start(f"{data_dir}: {exc}")
    except OSError as exc:
        return _cannot_start(f"{exc.strerror or exc} ({exc.filename or where})")
    if server.failure is not None:
        await server.stop()
        return _cannot_start(
            f"{server.failure} (data directory {data_dir}: it must be writable, with free space)"
        )
    control = None
    if control_port is not None:
        from kafka_wire.adapters.fault_control import ControlServer  # loaded only when asked for

        control = ControlServer(server)
        try:
            bound = await control.start(CONTROL_HOST, control_port)
        except OSError as exc:
            await server.stop()
            return _cannot_start(f"control port: {exc.strerror or exc} ({CONTROL_HOST}:{control_port})")
        listening += f", fault control on {CONTROL_HOST}:{bound}"
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.stop_requested.set)
    # The collector has been off since ``kafka_wire.cli.main`` began (its _COLLECT_LATER): what the
    # start made is frozen until the first full collection (``Collector``), not left young for the
    # first request to pay for.
    gc.freeze()
    gc.enable()
    collector = Collector(server.quiet_for)
    collector.start()
    print(f"kafka-wire serve: {listening} (data in {data_dir})", flush=True)
    await server.stop_requested.wait()
    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal while stopping: leave at once
        loop.add_signal_handler(sig, os._exit, 1)
    if control is not None:
        await control.stop()
    if key_sets is not None:
        await key_sets.stop()
    await server.stop()
    await collector.stop()
    if server.failure is not None:
        print(f"kafka-wire serve: stopped: {server.failure} (in {data_dir})", file=sys.stderr, flush=True)
        return 1
    print("kafka-wire serve: stopped", flush=True)
    return 0


class _JwksError(Exception):
    """A key set of an OAUTHBEARER listener could not be loaded (the message says which)."""


async def _key_sets(server: BrokerServer) -> JwksRefresher | None:
    """Load the JWKS of the signed-token OAUTHBEARER listeners before listening (their adapter
    loads only for such a listener)."""
    if server.broker.oauth_key_sets is None:
        return None
    from kafka_wire.adapters.jwks import JwksError, start_key_sets

    try:
        return await start_key_sets(server.broker)
    except JwksError as exc:
        raise _JwksError(str(exc)) from None


def _cannot_start(reason: str) -> int:
    print(f"kafka-wire serve: cannot start: {reason}", file=sys.stderr, flush=True)
    return 1


def serve_node_until_signalled(
    config: BrokerConfig,
    data_dir: Path,
    control_port: int | None = None,
    tls: Mapping[str, TlsListener] | None = None,
) -> int:
    """Run a node of a replicated cluster (``BrokerConfig.cluster`` set) until SIGINT or SIGTERM:
    every listener of ``listeners`` is opened (over TLS those ``tls`` names); prints one line
    when ready."""
    return asyncio.run(_serve_node(config, data_dir, control_port, tls or {}))


async def _serve_node(
    config: BrokerConfig, data_dir: Path, control_port: int | None, tls: Mapping[str, TlsListener]
) -> int:
    import secrets  # (and hashlib, hmac) for a cluster node's seed only

    from kafka_wire.broker.node import Node

    settings = config.cluster
    assert settings is not None
    node = Node(config, rng=random.Random(secrets.randbits(128)), logger=logging.getLogger("kafka_wire.node"))

    async def start(server: BrokerServer) -> str:
        bound = await server.start_listeners(settings.listeners, tls=tls)
        hosts = {e.listener: e.host for e in settings.listeners}
        listening = ", ".join(f"{name} {hosts[name]}:{port}" for name, port in bound.items())
        return f"node {config.node_id} ({','.join(sorted(settings.roles))}) listening on {listening}"

    return await _run_until_signalled(
        lambda: BrokerServer(config, data_dir, cluster=node), start, data_dir, "listeners", control_port
    )
