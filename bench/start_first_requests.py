"""Start-up of ``kafka-wire serve`` in CPU time, and the first requests after it.

Not a test. Each of ``--starts`` fresh starts (empty data dir, bytecode compiled first) runs the
serve in a child interpreter as ``kafka-wire serve`` runs (``kafka_wire.cli.main``); a thread of
that child notes its CPU time (user + sys, ``getrusage``) and its own clock once the port first
accepts. The script then sends, on one connection: Metadata v12 (every topic), CreateTopics v5
(one partition), Metadata until the partition has a leader, Produce v9 (acks=-1, one batch of one
record) and Metadata again, timing each round trip: what a client's first requests pay for the
modules and handlers a start no longer loads before it listens. Medians over the starts.

``PYTHONPATH`` chooses the ``kafka_wire`` (another checkout first), ``KAFKA_WIRE_PURE=1`` the pure
flavour. Run: ``.venv/bin/python bench/start_first_requests.py [--starts 7]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e (the raw Kafka connection of the stall test)

from kafka_wire.messages import MetadataRequest, MetadataResponse  # noqa: E402
from kafka_wire.records import NewRecord, build_batch  # noqa: E402
from tests.e2e.test_stall import KafkaSocket, create_topic, produce  # noqa: E402
from tests.interop.harness import Address, free_port, stop_process_group  # noqa: E402

_CHILD = r"""
import os, resource, socket, sys, threading, time

from kafka_wire.cli import main


def note_when_accepting(port):
    while True:
        try:
            socket.create_connection((b"127.0.0.1", port), timeout=5).close()  # bytes: no idna codec
            break
        except OSError:
            time.sleep(0.001)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"accepting cpu_ms={(usage.ru_utime + usage.ru_stime) * 1000:.1f}", file=sys.stderr, flush=True)


threading.Thread(target=note_when_accepting, args=(int(sys.argv[1]),), daemon=True).start()
sys.exit(main(["serve", "--host", "127.0.0.1", "--port", sys.argv[1], "--data-dir", sys.argv[2]]))
"""

STEPS = ("metadata", "create_topics", "produce", "metadata_again")


def one_start(workdir: Path) -> tuple[float, dict[str, float]]:
    """CPU ms of the serve at accepting, and the round trips (ms) of the first requests."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(port), str(workdir / "data")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=workdir,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        if not line.startswith("accepting"):
            raise RuntimeError(f"the serve did not start: {line}")
        cpu_ms = float(line.split("cpu_ms=")[1])
        times: dict[str, float] = {}
        with KafkaSocket(Address("127.0.0.1", port)) as conn:
            begin = time.perf_counter()
            conn.request(MetadataRequest(topics=None), 12, MetadataResponse)
            times["metadata"] = (time.perf_counter() - begin) * 1000
            begin = time.perf_counter()
            create_topic(conn, "first", 1)
            times["create_topics"] = (time.perf_counter() - begin) * 1000
            deadline = time.monotonic() + 30
            while True:
                answer = conn.request(MetadataRequest(topics=None), 12, MetadataResponse)
                if any(
                    t.name == "first" and t.partitions and t.partitions[0].leader_id >= 0
                    for t in answer.topics
                ):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("topic 'first' has no leader after 30 s")
                time.sleep(0.005)
            batch = build_batch([NewRecord(b"k", b"v")], default_timestamp=int(time.time() * 1000))
            begin = time.perf_counter()
            reply = produce(conn, "first", [batch])
            times["produce"] = (time.perf_counter() - begin) * 1000
            assert reply.responses[0].partition_responses[0].error_code == 0, reply
            begin = time.perf_counter()
            conn.request(MetadataRequest(topics=None), 12, MetadataResponse)
            times["metadata_again"] = (time.perf_counter() - begin) * 1000
        return cpu_ms, times
    finally:
        stop_process_group(process)


def main() -> None:
    parser = argparse.ArgumentParser(description="kafka-wire serve: CPU time to accepting, first requests")
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    found = subprocess.run(
        [sys.executable, "-c", "import kafka_wire; print(kafka_wire.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    package = Path(found.stdout.strip()).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    cpus: list[float] = []
    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    for i in range(args.starts):
        with tempfile.TemporaryDirectory(prefix=f"start-first-{i}-") as tmp:
            cpu_ms, times = one_start(Path(tmp))
        cpus.append(cpu_ms)
        for step in STEPS:
            steps[step].append(times[step])
    print(f"kafka_wire from {package}; median of {args.starts} starts")
    print(f"CPU time (user+sys) from exec to accepting: {statistics.median(cpus):.0f} ms")
    for step in STEPS:
        print(f"first {step}: {statistics.median(steps[step]):.1f} ms")


if __name__ == "__main__":
    main()
