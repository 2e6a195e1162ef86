"""Metadata request/response encode and decode throughput: kafka_wire against kio and kafka-python.

Run: ``python bench/bench_metadata.py`` (``make bench``). kafka_wire is timed in both flavours in
the same run: ``compiled`` (the mypyc modules of ``kafka_wire._compiled.messages``, when built with
``make compile``) and ``pure`` (a child process of the same script with ``KAFKA_WIRE_PURE=1``:
the compiled flavour's classes are native classes); the compiled column says "not built" otherwise.
One fixed cluster description (200 topics x
10 partitions x 3 replicas, 5 brokers, topic names of about 20 characters, seeded) is built as a
MetadataRequest and a MetadataResponse at v1 and v12 by each library. The script first checks that
the three encodings are byte-identical and that each library decodes the common bytes and encodes
them back unchanged (it stops with an error otherwise), then times every path timeit-style with the
cyclic GC on and prints the median MB/s (1 MB = 10**6 bytes of message body) of the repeats.

``--gc frozen`` calls ``gc.freeze()`` once the inputs are built (the collector then skips every
long-lived object: modules, inputs) and ``--gc off`` disables it while timing: decode speed depends
heavily on how many objects a full collection has to walk, and these show by how much (kafka_wire
pauses the collector itself while it decodes 4 KiB or more, see ``kafka_wire.codec.runtime``, so its
figures move little between the modes; the peers' move a lot). The load average is printed before
and after: on a shared machine, compare ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import json
import os
import platform
import random
import statistics
import sys
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import version as dist_version
from typing import Any

from kafka.protocol.metadata import MetadataRequest as KpRequest  # type: ignore[import-untyped]
from kafka.protocol.metadata import MetadataResponse as KpResponse
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from pure_child import pure_figures

from kafka_wire.messages import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

VERSIONS = (1, 12)
NO_OPERATIONS = -(1 << 31)  # Kafka's "authorized operations not requested"


# ---------------------------------------------------------------------------------------------
# The cluster every library describes


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str


@dataclass(frozen=True)
class Partition:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[Partition, ...]


@dataclass(frozen=True)
class Cluster:
    cluster_id: str
    controller_id: int
    brokers: tuple[Broker, ...]
    topics: tuple[Topic, ...]


def make_cluster(topics: int = 200, partitions: int = 10, replicas: int = 3, brokers: int = 5) -> Cluster:
    rng = random.Random(20240611)
    domains = ("orders", "payments", "billing", "inventory", "shipping", "users", "audit", "search")
    kinds = ("events", "commands", "changelog", "snapshots", "retry", "dlq")
    topic_list = []
    for i in range(topics):
        name = f"{rng.choice(domains)}.{rng.choice(kinds)}-{i:04d}"
        name = (name + ".v2")[:24] if len(name) < 20 else name  # about 20 characters
        parts = []
        for p in range(partitions):
            nodes = tuple(rng.sample(range(1, brokers + 1), replicas))
            isr = nodes if rng.random() < 0.9 else nodes[:-1]
            parts.append(Partition(p, nodes[0], rng.randrange(0, 40), nodes, isr))
        topic_list.append(Topic(name, uuid.UUID(int=rng.getrandbits(128)), tuple(parts)))
    broker_list = tuple(
        Broker(n, f"broker-{n}.kafka.prod.internal", 9092, f"use1-az{(n - 1) % 3 + 1}")
        for n in range(1, brokers + 1)
    )
    return Cluster("Xh2mK8nQTe-3bGc1UwLz9A", 2, broker_list, tuple(topic_list))


# ---------------------------------------------------------------------------------------------
# The same messages in each library


def ours_response(c: Cluster, version: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in c.brokers
        ],
        cluster_id=c.cluster_id if version >= 2 else None,
        controller_id=c.controller_id,
        topics=[
            MetadataResponseTopic(
                name=t.name,
                topic_id=t.topic_id if version >= 10 else uuid.UUID(int=0),
                partitions=[
                    MetadataResponsePartition(
                        partition_index=p.index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch if version >= 7 else -1,
                        replica_nodes=list(p.replicas),
                        isr_nodes=list(p.isr),
                    )
                    for p in t.partitions
                ],
            )
            for t in c.topics
        ],
    )


def ours_request(c: Cluster, version: int) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequestTopic(name=t.name) for t in c.topics])


def kio_module(version: int, kind: str) -> Any:
    return import_module(f"kio.schema.metadata.v{version}.{kind}")


def kio_response(c: Cluster, version: int) -> Any:
    m = kio_module(version, "response")
    extra: dict[str, Any] = {}
    if version >= 2:
        extra["cluster_id"] = c.cluster_id
    if version >= 3:
        extra["throttle_time"] = datetime.timedelta(0)
    topics = []
    for t in c.topics:
        topic_extra: dict[str, Any] = {}
        if version >= 10:
            topic_extra["topic_id"] = t.topic_id
        if version >= 8:
            topic_extra["topic_authorized_operations"] = NO_OPERATIONS
        partitions = []
        for p in t.partitions:
            partition_extra: dict[str, Any] = {}
            if version >= 7:
                partition_extra["leader_epoch"] = p.leader_epoch
            if version >= 5:
                partition_extra["offline_replicas"] = ()
            partitions.append(
                m.MetadataResponsePartition(
                    error_code=KioErrorCode.none,
                    partition_index=p.index,
                    leader_id=p.leader,
                    replica_nodes=p.replicas,
                    isr_nodes=p.isr,
                    **partition_extra,
                )
            )
        topics.append(
            m.MetadataResponseTopic(
                error_code=KioErrorCode.none,
                name=t.name,
                is_internal=False,
                partitions=tuple(partitions),
                **topic_extra,
            )
        )
    brokers = tuple(
        m.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack) for b in c.brokers
    )
    return m.MetadataResponse(brokers=brokers, controller_id=c.controller_id, topics=tuple(topics), **extra)


def kio_request(c: Cluster, version: int) -> Any:
    m = kio_module(version, "request")
    if version >= 10:
        topics = tuple(m.MetadataRequestTopic(topic_id=None, name=t.name) for t in c.topics)
        return m.MetadataRequest(
            topics=topics, allow_auto_topic_creation=True, include_topic_authorized_operations=False
        )
    return m.MetadataRequest(topics=tuple(m.MetadataRequestTopic(name=t.name) for t in c.topics))


def kp_response(c: Cluster, version: int) -> Any:
    broker_cls, topic_cls = KpResponse.MetadataResponseBroker, KpResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    return KpResponse(
        version=version,
        throttle_time_ms=0,
        brokers=[broker_cls(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack) for b in c.brokers],
        cluster_id=c.cluster_id if version >= 2 else None,
        controller_id=c.controller_id,
        topics=[
            topic_cls(
                error_code=0,
                name=t.name,
                topic_id=t.topic_id if version >= 10 else None,
                is_internal=False,
                partitions=[
                    partition_cls(
                        error_code=0,
                        partition_index=p.index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch if version >= 7 else -1,
                        replica_nodes=list(p.replicas),
                        isr_nodes=list(p.isr),
                        offline_replicas=[],
                    )
                    for p in t.partitions
                ],
                authorized_operations=None,  # kafka-python's bitfield: None is -2**31
            )
            for t in c.topics
        ],
    )


def kp_request(c: Cluster, version: int) -> Any:
    topic_cls = KpRequest.MetadataRequestTopic
    return KpRequest(
        version=version,
        topics=[topic_cls(topic_id=None, name=t.name) for t in c.topics],
        allow_auto_topic_creation=True,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


# ---------------------------------------------------------------------------------------------
# Encoders and decoders, one call each


@dataclass(frozen=True)
class Codec:
    encode: Callable[[], bytes]
    decode: Callable[[bytes], Any]
    reencode: Callable[[Any], bytes]


def kio_encode(obj: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(obj))(out, obj)
    return out.getvalue()


def kio_decoder(cls: type[Any]) -> Callable[[bytes], Any]:
    read = entity_reader(cls)

    def decode(data: bytes) -> Any:
        obj, size = read(data, 0)
        if size != len(data):
            raise SystemExit(f"kio read {size} of {len(data)} bytes")
        return obj

    return decode


LIBS = ("kafka_wire", "kio", "kafka-python")
#: kafka_wire's flavour in this process: the compiled one when it is built, else pure Python. The
#: compiled flavour's classes are native classes, so the pure flavour is timed in a child process
#: started with ``KAFKA_WIRE_PURE=1`` (same script, ``--only-pure``), within the same run.
OURS = "compiled" if MetadataResponse._native_decoders else "pure"


def codec(lib: str, c: Cluster, kind: str, version: int) -> Codec:
    """One library's message for ``kind`` at ``version``, with its encode and decode calls."""
    if lib == "kafka_wire":
        ours: MetadataRequest | MetadataResponse
        ours_cls: Any
        if kind == "request":
            ours, ours_cls = ours_request(c, version), MetadataRequest
        else:
            ours, ours_cls = ours_response(c, version), MetadataResponse
        return Codec(
            lambda: ours.encode(version), lambda b: ours_cls.decode(b, version), lambda m: m.encode(version)
        )
    if lib == "kio":
        kio_obj = kio_request(c, version) if kind == "request" else kio_response(c, version)
        return Codec(lambda: kio_encode(kio_obj), kio_decoder(type(kio_obj)), kio_encode)
    kp, kp_cls = (
        (kp_request(c, version), KpRequest) if kind == "request" else (kp_response(c, version), KpResponse)
    )
    return Codec(kp.encode, lambda b: kp_cls.decode(b, version=version), lambda m: m.encode())


def check(name: str, libs: dict[str, Codec]) -> bytes:
    """All libraries encode the same bytes, and each decodes them and encodes them back unchanged."""
    encoded = {lib: codec.encode() for lib, codec in libs.items()}
    reference = encoded["kafka_wire"]
    for lib, data in encoded.items():
        if data != reference:
            at = next((i for i, (a, b) in enumerate(zip(data, reference, strict=False)) if a != b), None)
            raise SystemExit(
                f"{name}: {lib} encodes {len(data)} bytes, kafka_wire {len(reference)}; first diff at {at}"
            )
    for lib, codec in libs.items():
        if codec.reencode(codec.decode(reference)) != reference:
            raise SystemExit(f"{name}: {lib} does not decode and re-encode the common bytes unchanged")
    return reference


# ---------------------------------------------------------------------------------------------
# Timing


def median_seconds(fn: Callable[[], object], repeat: int, target: float, gc_on: bool) -> float:
    """Median seconds per call over ``repeat`` runs of a loop sized to take about ``target`` s."""
    # timeit turns the cyclic GC off while timing unless the setup turns it back on.
    timer = timeit.Timer(fn, setup="gc.enable()" if gc_on else "pass")
    number, _ = timer.autorange()
    one = timer.timeit(number) / number
    number = max(1, round(target / one))
    return statistics.median(t / number for t in timer.repeat(repeat=repeat, number=number))


def decode_call(codec: Codec, data: bytes) -> Callable[[], object]:
    return lambda: codec.decode(data)


def fmt_ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def time_rows(cluster: Cluster, plan: list[tuple[str, int]], libs: tuple[str, ...], args: argparse.Namespace,
              ) -> dict[str, dict[str, float]]:  # fmt: skip
    """MB/s of every path for each library in ``libs`` (kafka_wire under the name of its flavour)."""
    rows: dict[str, dict[str, float]] = {}
    for kind, v in plan:
        name = f"Metadata{kind.capitalize()} v{v}"
        data = check(name, {lib: codec(lib, cluster, kind, v) for lib in LIBS})
        if libs != (OURS,):
            print(
                f"{name}: {len(data):,} bytes, byte-identical in kafka_wire, kio and kafka-python; all decode it"
            )
        # Time one library at a time with only its own message alive, so that no library's full
        # collections walk the others' inputs.
        for lib in libs:
            gc.collect()
            subject = codec("kafka_wire" if lib == OURS else lib, cluster, kind, v)
            if args.gc == "frozen":
                gc.freeze()  # long-lived objects (modules, the input) move out of the collector's sight
            for op, fn in (("decode", decode_call(subject, data)), ("encode", subject.encode)):
                seconds = median_seconds(fn, args.repeat, args.target, args.gc != "off")
                rows.setdefault(f"{name} {op}", {})[lib] = len(data) / seconds / 1e6
            if args.gc == "frozen":
                gc.unfreeze()
            del subject, fn
    return rows


def pure_rows(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The pure flavour's rows, timed by this script in a child process with ``KAFKA_WIRE_PURE=1``."""
    rows: dict[str, dict[str, float]] = pure_figures(
        __file__, ["--repeat", str(args.repeat), "--target", str(args.target), "--gc", args.gc]
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per path (median reported)")
    parser.add_argument("--target", type=float, default=0.25, help="seconds per timed run")
    parser.add_argument(
        "--gc",
        choices=("on", "frozen", "off"),
        default="on",
        help="cyclic GC on (default); on after gc.freeze() of everything built before timing; or off",
    )
    parser.add_argument("--only-pure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    cluster = make_cluster()
    plan = [(kind, v) for kind in ("request", "response") for v in VERSIONS]
    if args.only_pure:
        if OURS != "pure":
            raise SystemExit("--only-pure needs KAFKA_WIRE_PURE=1")
        print(json.dumps(time_rows(cluster, plan, ("pure",), args)))
        return 0
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}, "
        f"kafka_wire {dist_version('kafka-wire')}, kio {dist_version('kio')}, "
        f"kafka-python {dist_version('kafka-python')}; GC {args.gc}; median of {args.repeat}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"input: {len(cluster.topics)} topics x {len(cluster.topics[0].partitions)} partitions x "
        f"{len(cluster.topics[0].partitions[0].replicas)} replicas, {len(cluster.brokers)} brokers"
    )
    print(f"kafka_wire compiled flavour: {'in use' if OURS == 'compiled' else 'NOT BUILT (make compile)'}")
    rows = time_rows(cluster, plan, (OURS, *LIBS[1:]), args)
    if OURS == "compiled":
        for path, pure in pure_rows(args).items():
            rows[path].update(pure)

    header = (
        "path",
        "compiled MB/s",
        "pure MB/s",
        "kio MB/s",
        "kafka-python MB/s",
        "compiled/kio",
        "compiled/kafka-python",
        "pure/kio",
        "pure/kafka-python",
        "compiled/pure",
    )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    order = [f"Metadata{kind.capitalize()} v{v} {op}" for op in ("decode", "encode") for kind, v in plan]
    for path in order:
        s = rows[path]
        pu, ki, kp = s["pure"], s["kio"], s["kafka-python"]
        co = s.get("compiled")
        cells = [f"{co:.1f}" if co else "not built", f"{pu:.1f}", f"{ki:.1f}", f"{kp:.1f}"]
        cells += [fmt_ratio(co, ki), fmt_ratio(co, kp)] if co else ["-", "-"]
        cells += [fmt_ratio(pu, ki), fmt_ratio(pu, kp), fmt_ratio(co, pu) if co else "-"]
        print(f"| {path} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
