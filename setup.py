"""Build hook: compile the mypyc flavour when ``KAFKA_WIRE_COMPILE=1`` (see docs/internals/compiled.md).

Without the variable this installs pure Python. With it, the modules in ``COMPILED`` are compiled
by mypyc (``mypy`` must be importable by the build: ``pip install --no-build-isolation`` from an
environment that has it, or ``python setup.py build_ext --inplace`` for a development tree).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent

#: The records hot loops and ``Record``: one source that also runs as Python (kafka_wire.records.loops).
RECORDS = ["kafka_wire/_compiled/records.py"]
#: The native bases of the compiled message classes.
BASES = ["kafka_wire/codec/native_base.py"]
COMPILED = [
    *RECORDS,
    *BASES,
    # The message codec's mypyc flavour: every generated module (kafka_wire.codegen.mypyc_flavour).
    *sorted(
        p.relative_to(HERE).as_posix()
        for p in (HERE / "kafka_wire" / "messages_native").glob("*.py")
        if p.name != "__init__.py"
    ),
]

ext_modules = []
if os.environ.get("KAFKA_WIRE_COMPILE") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(
        COMPILED,
        opt_level=os.environ.get("KAFKA_WIRE_MYPYC_OPT", "1"),
        multi_file=False,
        # Every module is its own extension, so the C compiler runs in parallel (below) and the
        # guard (tools/check_mypyc_c.py) finds each module's C as build/**/__native_<module>.c.
        separate=True,
    )

setup(
    ext_modules=ext_modules,
    # build_ext compiles separate extensions in parallel on every core (about 110 modules).
    options={"build_ext": {"parallel": os.cpu_count() or 1}} if ext_modules else {},
)
