"""The pure flavour's figures for a benchmark that runs the compiled one in its own process.

The compiled flavour's message classes are native classes, so the pure flavour cannot be timed
beside them: the benchmark runs itself again with ``KAFKA_WIRE_PURE=1`` and ``--only-pure``, and
that child prints its figures as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def pure_figures(script: str, args: list[str]) -> Any:
    """What ``script --only-pure *args`` prints last, run with ``KAFKA_WIRE_PURE=1``, decoded."""
    done = subprocess.run(
        [sys.executable, script, "--only-pure", *args],
        env={**os.environ, "KAFKA_WIRE_PURE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
