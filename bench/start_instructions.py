"""Start-up cost that machine load does not move: the instructions ``kafka-wire serve`` executes
from exec until its port accepts a connection, counted by ``valgrind --tool=callgrind``.

Not a test. The serve runs in a child interpreter as the console script runs it
(``kafka_wire.cli.main``) on an empty data directory and leaves with ``os._exit(0)`` as soon as
its listening socket's ``listen`` returns (the port accepts connections from then on). An earlier
version had a thread connect every 5 ms until a connection succeeded: under callgrind a start
lasts 10-30 s of wall time, and those thousands of attempts added some 20 million instructions,
more the more loaded the machine. The flavour is the environment's
(``KAFKA_WIRE_PURE=1`` for pure Python); the ``kafka_wire`` imported is the first on ``sys.path``
in a child started from an empty folder (``PYTHONPATH`` can put another checkout first). Bytecode
is compiled first, as ``make run`` does.
Wall-clock starts are in ``bench/bench_broker.py``; this count is for comparing two builds on a
machine that is not idle.

Run: ``.venv/bin/python bench/start_instructions.py`` (needs ``valgrind``; about 40 s of CPU).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_wire.adapters.ports import free_port

_RUN_UNTIL_ACCEPTING = r"""
import os, socket, sys

from kafka_wire.cli import main

_listen = socket.socket.listen


def listen_then_leave(sock, backlog):
    _listen(sock, backlog)  # the port accepts connections from here on
    os._exit(0)


socket.socket.listen = listen_then_leave
main(["serve", "--host", "127.0.0.1", "--port", sys.argv[1], "--data-dir", sys.argv[2]])
"""


def instructions(command: list[str], cwd: str) -> int:
    """Instructions ``command`` executes under callgrind (its ``I refs`` total), run in ``cwd``."""
    with tempfile.TemporaryDirectory(prefix="start-instructions-") as tmp:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.out", *command],
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
        )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from valgrind: {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="start-instructions-run-") as run:
        # From an empty folder: ``-c`` puts the working directory first on the child's path.
        found = subprocess.run(
            [sys.executable, "-c", "import kafka_wire; print(kafka_wire.__file__)"],
            capture_output=True,
            text=True,
            check=True,
            cwd=run,
        )
        package = Path(found.stdout.strip()).parent
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        serve = instructions(
            [sys.executable, "-c", _RUN_UNTIL_ACCEPTING, str(free_port()), f"{run}/data"], run
        )
        bare = instructions([sys.executable, "-c", "pass"], run)
    print(f"kafka_wire from {package}")
    print(f"serve, exec until accepting: {serve:,} instructions")
    print(f"python -c pass:              {bare:,} instructions")


if __name__ == "__main__":
    main()
