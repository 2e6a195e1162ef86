"""What a started ``kafka-wire serve`` has imported: no generated message module of an API it was
never sent, none of the other subcommands' machinery, and none of what it loads on first use only
(the group coordinator, the SASL mechanisms, the protocol's client side; issue 27: start-up pays
only for what a client uses).

The serve runs in a subprocess as ``kafka-wire serve`` runs (``kafka_wire.cli.main``, from its
first import); a thread of that process waits until the port accepts, lists the ``kafka_wire``
modules in ``sys.modules``, sends one ApiVersions request written by hand (so that the probe itself
loads no message module) and lists them again once the answer is in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafka_wire.messages import catalog
from tests.interop.harness import free_port

_PROBE = r"""
import json, os, signal, socket, struct, sys, threading, time

from kafka_wire.cli import main

PORT = int(sys.argv[1])


def loaded():
    return sorted(name for name in sys.modules if name.startswith(("kafka_wire", *ELSEWHERE)))


ELSEWHERE = tuple(json.loads(sys.argv[3]))


def receive(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("the broker closed the connection")
        data += chunk
    return data


def watch():
    deadline = time.monotonic() + 60
    while True:
        try:
            # The address as bytes: a str goes through the idna codec, which serve does not load.
            conn = socket.create_connection((b"127.0.0.1", PORT), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                os._exit(3)
            time.sleep(0.005)
    listening = loaded()
    # ApiVersions (key 18) v0: size, api key, version, correlation id 7, null client id.
    conn.sendall(struct.pack(">ihhih", 10, 18, 0, 7, -1))
    size = struct.unpack(">i", receive(conn, 4))[0]
    correlation_id, error_code = struct.unpack(">ih", receive(conn, size)[:6])
    report = {"listening": listening, "answered": loaded(), "answer": [correlation_id, error_code]}
    print(json.dumps(report), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


threading.Thread(target=watch, daemon=True).start()
sys.exit(main(["serve", "--host", "127.0.0.1", "--port", str(PORT), "--data-dir", sys.argv[2]]))
"""

#: Packages that ``serve`` has no use for until a test or another subcommand asks.
_NOT_ON_SERVE_PATH = (
    "kafka_wire.netfuzz",
    "kafka_wire.sim",
    "kafka_wire.spark",
    "kafka_wire.testing",
    "kafka_wire.codegen",
    "kafka_wire.cli.cluster",
    "kafka_wire.cli.fuzz",
    "kafka_wire.cli.simulate",
    "kafka_wire.cli.spark_load",
)

#: What ``serve`` loads on first use only: the group coordinator (the first group request or a
#: ``__consumer_offsets`` partition led here), the share-partition machine (the first
#: share-partition or acknowledgement), the share groups' admin (a share-group offsets
#: request, or with the group coordinator), the coordinators' ACL checks (the first coordinator
#: request), the SASL mechanisms with ``hashlib`` and ``hmac``
#: (users configured), the client side of the protocol (a link to another node), ``shutil`` (a
#: directory deleted), the ``idna`` codec (a listener's host given by name, not as an address);
#: the ``crc32c`` package's ``__init__`` (it reads its distribution metadata) never: its extension
#: loads alone.
_ON_FIRST_USE = (
    "kafka_wire.broker.group.service",
    "kafka_wire.broker.group.model",
    "kafka_wire.broker.group.consumer_groups",
    "kafka_wire.broker.group.share_partition",
    "kafka_wire.broker.share.admin",
    "kafka_wire.broker.share.admin_rpcs",
    "kafka_wire.broker.share.describe",
    "kafka_wire.broker.security.coordinator_checks",
    "kafka_wire.protocol.sasl.plain",
    "kafka_wire.protocol.sasl.scram",
    "kafka_wire.protocol.sasl.oauthbearer",
    "kafka_wire.protocol.client",
    "kafka_wire.protocol.client_config",
    "kafka_wire.protocol.client_requests",
    "kafka_wire.protocol.client_sasl",
    "kafka_wire.protocol.client_versions",
    "crc32c",
    "importlib.metadata",
    "shutil",
    "hashlib",
    "hmac",
    "encodings.idna",
)
#: Names outside ``kafka_wire`` that the probe reports when loaded.
_ELSEWHERE = ["crc32c", "importlib.metadata", "shutil", "hashlib", "hmac", "encodings.idna"]


#: The APIs a one-voter node sends its own controller while it starts (registration, heartbeats, a
#: block of producer ids): their classes are in use before any client connects.
_SENT_BY_THE_NODE = {"broker_registration", "broker_heartbeat", "allocate_producer_ids"}


#: The metadata records a one-voter node's start writes: the other record classes load with their
#: first record (``broker/controller/records.RECORD_TYPES``; the images route records by class name).
_RECORDS_A_START_WRITES = {
    "register_broker_record",
    "broker_registration_change_record",
    "feature_level_record",
    "producer_ids_record",
}


def _api_modules() -> set[str]:
    """The generated modules holding a request or response class: their last name part."""
    return {cls.__module__.rpartition(".")[2] for info in catalog() for cls in (info.request, info.response)}


def _message_modules(modules: list[str]) -> set[str]:
    prefixes = ("kafka_wire.messages.", "kafka_wire._compiled.messages.")
    return {name.rpartition(".")[2] for name in modules if name.startswith(prefixes)}


def test_started_serve_loads_only_the_message_modules_of_apis_it_was_sent(tmp_path: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(port), str(tmp_path / "data"), json.dumps(_ELSEWHERE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
    assert report["answer"] == [7, 0]  # the ApiVersions answer, NONE
    api = _api_modules()
    assert "api_versions" in api
    assert _message_modules(report["listening"]) & api <= _SENT_BY_THE_NODE
    assert (_message_modules(report["answered"]) & api) - _SENT_BY_THE_NODE == {"api_versions"}
    elsewhere = [m for m in report["answered"] if m.startswith(_NOT_ON_SERVE_PATH)]
    assert elsewhere == []
    assert [m for m in report["answered"] if m in _ON_FIRST_USE] == []
    records = {m for m in _message_modules(report["answered"]) if m.endswith("_record")}
    assert records <= _RECORDS_A_START_WRITES
