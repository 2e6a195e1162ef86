"""How much of ``kafka-wire serve``'s start is the interpreter and the standard library.

Not a test. Three processes are started in turns, ``--starts`` times each, and timed as
``bench_broker.py`` times a start (from ``Popen`` until the port answers an ApiVersions v0
request, the probe of ``tests/e2e/apache_kafka.py``):

* **interpreter**: ``python -c pass`` from ``Popen`` until it exits;
* **standard-library floor**: a child that imports the standard-library modules a started serve
  holds (listed once, by a child that imports ``kafka_wire.cli.serve_process``), then listens with
  ``asyncio`` and answers each request frame with an empty ApiVersions v0 response of its
  correlation id: what any asyncio broker in this interpreter pays before its own code;
* **kafka-wire serve**: ``kafka-wire serve`` on an empty data directory (the flavour is the
  environment's: ``KAFKA_WIRE_PURE=1`` for pure Python).

Medians are printed with what serve adds over the floor. Run:
``.venv/bin/python bench/start_floor.py [--starts 9]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e and tests.interop

from tests.e2e.apache_kafka import answers_api_versions  # noqa: E402
from tests.interop.harness import Address, free_port, stop_process_group  # noqa: E402

_LIST_STDLIB = (
    "import json, sys; import kafka_wire.cli.serve_process; "
    "print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] in sys.stdlib_module_names)))"
)

_FLOOR = r"""
import importlib, json, sys
for name in json.loads(sys.argv[2]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
import asyncio, struct

async def answer(reader, writer):
    while True:
        head = await reader.readexactly(4)
        frame = await reader.readexactly(struct.unpack(">i", head)[0])
        correlation_id = frame[4:8]
        body = correlation_id + struct.pack(">hi", 0, 0)  # error 0, no API keys
        writer.write(struct.pack(">i", len(body)) + body)
        await writer.drain()

async def main():
    server = await asyncio.start_server(answer, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def time_until_answer(command: list[str], address: Address) -> float:
    begin = time.monotonic()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while not answers_api_versions(address, timeout_s=0.5):
            if process.poll() is not None or time.monotonic() - begin > 60:
                raise RuntimeError(f"{command[:3]} did not answer ApiVersions (status {process.poll()})")
            time.sleep(0.002)
        return time.monotonic() - begin
    finally:
        stop_process_group(process)


def time_until_exit(command: list[str]) -> float:
    begin = time.monotonic()
    subprocess.run(command, check=True)
    return time.monotonic() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=9)
    args = parser.parse_args()
    python = sys.executable
    stdlib = subprocess.run([python, "-c", _LIST_STDLIB], check=True, capture_output=True, text=True).stdout
    serve = [str(Path(python).with_name("kafka-wire")), "serve", "--host", "127.0.0.1"]
    times: dict[str, list[float]] = {"interpreter": [], "stdlib floor": [], "kafka-wire serve": []}
    with tempfile.TemporaryDirectory(prefix="start-floor-") as tmp:
        for i in range(args.starts):
            times["interpreter"].append(time_until_exit([python, "-c", "pass"]))
            port = free_port("127.0.0.1")
            floor = [python, "-c", _FLOOR, str(port), stdlib]
            times["stdlib floor"].append(time_until_answer(floor, Address("127.0.0.1", port)))
            port = free_port("127.0.0.1")
            command = [*serve, "--port", str(port), "--data-dir", f"{tmp}/data-{i}"]
            times["kafka-wire serve"].append(time_until_answer(command, Address("127.0.0.1", port)))
    median = {name: statistics.median(t) * 1000 for name, t in times.items()}
    print(f"{len(json.loads(stdlib))} standard-library modules; median of {args.starts} starts each")
    print("| process | start ms (median) | min | max |")
    print("|---|---:|---:|---:|")
    for name, t in times.items():
        print(f"| {name} | {median[name]:.0f} | {min(t) * 1000:.0f} | {max(t) * 1000:.0f} |")
    added = median["kafka-wire serve"] - median["stdlib floor"]
    print(f"kafka-wire serve over the floor: {added:.0f} ms")


if __name__ == "__main__":
    main()
