"""Record the golden request frames in ``tests/data/captures/`` from the real clients (``make captures``).

A ``RecordingServer`` (``tests/interop/recording_server.py``: kafka_wire's ``ServerConnection``
behind asyncio streams on 127.0.0.1) answers ApiVersions, Metadata, InitProducerId and Produce,
and keeps every request frame byte for byte. Each client the project installs (librdkafka through
confluent-kafka, kafka-python, aiokafka, kafkajs and the Java client 3.9.1 and 4.4.0) is driven through its
``metadata`` step (its admin client listing the cluster and topics), then through its
``produce`` step once per compression codec with the golden workload (``--golden`` in
``tests/interop/clients/driver_common.py``): topic ``t1``, partition 0, three records with keys
``k0..k2``, values ``value-<i>-`` repeated 20 times, header ``h`` = ``x<i>`` and timestamps
1700000000000 + i. A client whose newest Produce version is flexible (v9+) is driven a second time
with the server offering Produce up to v8, for the non-flexible encoding.

Every distinct ApiVersions, Metadata, InitProducerId and Produce frame is written as one line of
hex, named ``<client>-<api>-v<version>[-<codec>][-<n>].hex``, and ``README.md`` beside them is
rewritten with the table of what was recorded and the clients' versions. Stale ``.hex`` files are
deleted; a file whose frame differs from the new one in the correlation id only is left as it was,
so that re-recording with the same clients changes no file (but the gzip frames of the Python
clients, whose gzip header holds the time). Before writing, every Produce frame must carry the three records in one batch.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_wire.messages import ApiKey, ProduceRequest  # noqa: E402
from kafka_wire.records import read_batches  # noqa: E402
from tests.interop.harness import (  # noqa: E402
    ALL_CLIENTS,
    COMPRESSIONS,
    Client,
    DriverOptions,
    JavaClient,
    java_jars,
    run_driver,
)
from tests.interop.recording_server import (  # noqa: E402
    TOPIC_ID,
    RecordingServer,
    Seen,
    advertised_versions,
)

OUT: Final = ROOT / "tests" / "data" / "captures"
TOPIC: Final = "t1"
#: The prefix of each client's files (the package a user installs).
FILE_PREFIX: Final[dict[Client, str]] = {
    "confluent": "confluent-kafka",
    "kafka_python": "kafka-python",
    "aiokafka": "aiokafka",
    "kafkajs": "kafkajs",
    "java": "java",
    "java4": "java4",
}
RECORDED_APIS: Final = (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID, ApiKey.PRODUCE)
#: The newest non-flexible Produce version, offered in the second run of a flexible producer.
LAST_RIGID_PRODUCE: Final = 8
DRIVER_TIMEOUT_S: Final = 20.0
ATTEMPTS: Final = 3


@dataclass(frozen=True)
class Capture:
    name: str
    seen: Seen
    client: Client


def api_name(api_key: int) -> str:
    return "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))


def client_versions() -> dict[Client, str]:
    """Each client's name and version, as the README's table gives them."""
    import confluent_kafka

    kafkajs = json.loads((ROOT / "node_modules" / "kafkajs" / "package.json").read_text())["version"]
    return {
        "confluent": f"confluent-kafka {importlib.metadata.version('confluent-kafka')} "
        f"(librdkafka {confluent_kafka.libversion()[0]})",
        "kafka_python": f"kafka-python {importlib.metadata.version('kafka-python')}",
        "aiokafka": f"aiokafka {importlib.metadata.version('aiokafka')}",
        "kafkajs": f"kafkajs {kafkajs}",
        "java": f"kafka-clients {java_version('java')} (Java)",
        "java4": f"kafka-clients {java_version('java4')} (Java)",
    }


def java_version(client: JavaClient) -> str:
    """The version in kafka-clients' own kafka/kafka-version.properties."""
    kafka_clients = java_jars(client)[0]
    with zipfile.ZipFile(kafka_clients) as jar:
        properties = jar.read("kafka/kafka-version.properties").decode()
    found = re.search(r"^version=(\S+)", properties, re.MULTILINE)
    return found.group(1) if found else "?"


def check_produce(client: Client, codec: str, seen: Seen) -> None:
    """The frame carries the golden records in one batch (a split batch would make poor goldens)."""
    body = seen.body
    assert isinstance(body, ProduceRequest)
    [topic] = body.topic_data
    [partition] = topic.partition_data
    assert partition.records is not None
    batches = list(read_batches(partition.records))
    got = [(r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp) for b in batches for r in b]
    want = [
        (b"k%d" % i, (b"value-%d-" % i) * 20, [("h", b"x%d" % i)], 1_700_000_000_000 + i) for i in range(3)
    ]
    # Produce v13+ names the topic by its id alone.
    named = topic.name == TOPIC or (not topic.name and topic.topic_id == TOPIC_ID)
    if len(batches) != 1 or got != want or not named or partition.index != 0:
        raise NotGolden(f"{client} {codec}: the Produce frame is not the golden workload in one batch: {got}")


def record_run(client: Client, codec: str, produce_max: int | None) -> list[Seen]:
    """One produce run: the non-rejected requests of the recorded APIs, in arrival order.

    A client's timing may split the three records into two batches now and then: such a run is
    tried again, up to ``ATTEMPTS`` times."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _record_run(client, codec, produce_max)
        except NotGolden as exc:
            if attempt == ATTEMPTS:
                raise SystemExit(str(exc)) from None
            print(f"{client} {codec}: {exc}; again", flush=True)
    raise AssertionError("unreachable")


class NotGolden(Exception):
    """A Produce frame that is not the golden workload in one batch."""


def _record_run(client: Client, codec: str, produce_max: int | None) -> list[Seen]:
    overrides: dict[int, tuple[int, int]] = {} if produce_max is None else {ApiKey.PRODUCE: (0, produce_max)}
    with RecordingServer(advertised_versions(overrides), topic=TOPIC) as server:
        run = run_driver(
            client,
            server.address.bootstrap,
            "produce",
            topic=TOPIC,
            count=3,
            timeout_s=DRIVER_TIMEOUT_S,
            options=DriverOptions(compression=codec, golden=True),
        )
        if server.errors:
            raise SystemExit(f"{client} {codec}: server errors {server.errors}\n{run.describe()}")
        run.check()
        seen = [s for s in server.seen if not s.rejected and s.api_key in RECORDED_APIS]
    produces = [s for s in seen if s.api_key == ApiKey.PRODUCE]
    if not produces:
        raise SystemExit(f"{client} {codec}: no Produce request\n{run.describe()}")
    check_produce(client, codec, produces[0])
    # A retried Produce repeats the first; keep the first.
    return [s for s in seen if s.api_key != ApiKey.PRODUCE] + [produces[0]]


def record_metadata(client: Client) -> list[Seen]:
    """The driver's ``metadata`` step (an admin client listing the cluster and its topics)."""
    with RecordingServer(advertised_versions(), topic=TOPIC) as server:
        run = run_driver(
            client, server.address.bootstrap, "metadata", topic=TOPIC, timeout_s=DRIVER_TIMEOUT_S
        )
        if server.errors:
            raise SystemExit(f"{client} metadata: server errors {server.errors}\n{run.describe()}")
        run.check()
        return [s for s in server.seen if not s.rejected and s.api_key in RECORDED_APIS]


def record_client(client: Client) -> list[Capture]:
    prefix = FILE_PREFIX[client]
    #: Distinct frames by base name; frames that differ in their correlation id only (bytes 8 to
    #: 12) are one capture.
    groups: dict[str, dict[bytes, Seen]] = {}

    def keep(seen: Seen, codec: str) -> None:
        base = f"{prefix}-{api_name(seen.api_key).lower()}-v{seen.api_version}"
        if seen.api_key == ApiKey.PRODUCE:
            base += f"-{codec}"
        groups.setdefault(base, {}).setdefault(seen.frame[:8] + seen.frame[12:], seen)

    # The admin client's view first (librdkafka's admin Metadata request carries trailing bytes).
    for seen in record_metadata(client):
        keep(seen, "")
    print(f"{prefix} metadata: recorded", flush=True)
    newest: int | None = None
    for codec in COMPRESSIONS:
        for seen in record_run(client, codec, None):
            keep(seen, codec)
            if seen.api_key == ApiKey.PRODUCE:
                newest = seen.api_version
        print(f"{prefix} {codec}: recorded", flush=True)
    if newest is not None and newest > LAST_RIGID_PRODUCE:
        for codec in COMPRESSIONS:
            for seen in record_run(client, codec, LAST_RIGID_PRODUCE):
                keep(seen, codec)
            print(f"{prefix} {codec} (Produce <= v{LAST_RIGID_PRODUCE}): recorded", flush=True)
    # Numbered by size, then bytes, not by arrival (which varies): a re-recording keeps the names.
    captures = []
    for base, frames in groups.items():
        for n, key in enumerate(sorted(frames, key=lambda k: (len(k), k)), start=1):
            captures.append(Capture(base if n == 1 else f"{base}-{n}", frames[key], client))
    return captures


def readme(captures: list[Capture], versions: dict[Client, str]) -> str:
    clients = ", ".join(versions[c] for c in ALL_CLIENTS)
    lines = [
        "# Request frames recorded from real Kafka clients",
        "",
        "Generated by `tools/record_captures.py` (`make captures`); do not edit. Each `*.hex` file is",
        "one size-prefixed request frame exactly as a real client sent it to kafka_wire's",
        "`ServerConnection` on 127.0.0.1 (hex text, one line). Produce frames: topic `t1`, partition 0,",
        "3 records with keys `k0..k2`, values `(b'value-%d-' % i) * 20`, header `h`=`x0..x2`,",
        "timestamps 1700000000000+i, one run per compression codec (and, for a client whose newest",
        f"Produce version is flexible, one more with the server offering Produce up to v{LAST_RIGID_PRODUCE});",
        "before those, one run of the client's admin API listing the cluster and its topics. Frames",
        "that differ in their correlation id only are kept once.",
        f"Clients: {clients}.",
        "Tests use them as golden vectors: decode, re-encode, compare byte for byte.",
        "",
        "| file | api | ver | corr | client_id | bytes | client |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in sorted(captures, key=lambda c: c.name):
        s = c.seen
        lines.append(
            f"| {c.name}.hex | {api_name(s.api_key)} | {s.api_version} | {s.correlation_id} | "
            f"{s.client_id} | {len(s.frame)} | {versions[c.client]} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT, help="the captures folder (default: %(default)s)")
    parser.add_argument(
        "--client",
        action="append",
        choices=ALL_CLIENTS,
        help="record only these clients (repeatable; default: all); other files stay",
    )
    ns = parser.parse_args(argv)
    out: Path = ns.out
    chosen: list[Client] = ns.client or list(ALL_CLIENTS)
    start = time.monotonic()
    versions = client_versions()
    captures = [capture for client in chosen for capture in record_client(client)]
    out.mkdir(parents=True, exist_ok=True)
    prefixes = tuple(f"{FILE_PREFIX[c]}-" for c in chosen)
    before = {
        path.stem: bytes.fromhex(path.read_text())
        for path in out.glob("*.hex")
        if path.name.startswith(prefixes)
    }
    for capture in captures:
        frame = capture.seen.frame
        old = before.pop(capture.name, b"")
        # The same frame under another correlation id stays as it was: a re-recording changes nothing.
        if old[:8] + old[12:] != frame[:8] + frame[12:]:
            (out / f"{capture.name}.hex").write_text(frame.hex() + "\n")
    for stale in before:
        (out / f"{stale}.hex").unlink()
    # The README lists every file in the folder (those of clients not re-recorded included).
    kept = [_from_file(path, versions) for path in sorted(out.glob("*.hex"))]
    (out / "README.md").write_text(readme(kept, versions))
    print(f"{len(captures)} frames from {len(chosen)} clients in {time.monotonic() - start:.0f} s -> {out}")
    return 0


def _from_file(path: Path, versions: dict[Client, str]) -> Capture:
    """A capture read back from its file (for the README): its header fields come from the frame."""
    from kafka_wire import decode_request_frame

    frame = bytes.fromhex(path.read_text().strip())
    header = decode_request_frame(frame).header
    client = next(
        c
        for c in sorted(ALL_CLIENTS, key=lambda c: -len(FILE_PREFIX[c]))
        if path.name.startswith(f"{FILE_PREFIX[c]}-")
    )
    seen = Seen(
        0,
        header.request_api_key,
        header.request_api_version,
        header.correlation_id,
        header.client_id,
        None,
        frame=frame,
    )
    return Capture(path.stem, seen, client)


if __name__ == "__main__":
    sys.exit(main())
