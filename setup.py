"""Build hook: compile the mypyc flavour when ``KAFKA_WIRE_COMPILE=1`` (see docs/internals/compiled.md).

Without the variable this installs pure Python. With it, the modules in ``COMPILED`` are compiled
by mypyc (``mypy`` must be importable by the build: ``pip install --no-build-isolation`` from an
environment that has it, or ``python setup.py build_ext --inplace`` for a development tree).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent

#: The records hot loops and ``Record``: one source that also runs as Python (kafka_wire.records.loops).
RECORDS = ["kafka_wire/_compiled/records.py"]
#: The message classes' bases: one source that also runs as Python (kafka_wire.codec.structs).
BASES = ["kafka_wire/_compiled/base.py"]
#: The message codec's mypyc flavour: the hot message modules only (kafka_wire.codegen.generate's
#: COMPILED_MODULES), generated into kafka_wire/_compiled/messages.
MESSAGES = sorted(
    p.relative_to(HERE).as_posix()
    for p in (HERE / "kafka_wire" / "_compiled" / "messages").glob("*.py")
    if p.name != "__init__.py"
)
COMPILED = [*RECORDS, *BASES, *MESSAGES]
#: Columnar decoding into Arrow buffers: a small C extension (no mypyc) of a few files sharing
#: columnar.h, whose pure-Python twin is kafka_wire/records/columnar_pure.py
#: (kafka_wire.records.columnar chooses).
COLUMNAR = Extension(
    "kafka_wire._compiled.columnar",
    sorted(str(p.relative_to(HERE)) for p in (HERE / "kafka_wire" / "_compiled" / "columnar").glob("*.c")),
    depends=["kafka_wire/_compiled/columnar/columnar.h"],
    extra_compile_args=["-O2", "-std=c11", "-Wall", "-fvisibility=hidden"],
)

#: Record and the per-record walks that make records: a small C extension (no mypyc) of a few
#: files sharing recordwalk.h, whose pure twin is kafka_wire/_compiled/records.py run as Python
#: (kafka_wire.records.loops chooses).
RECORDWALK = Extension(
    "kafka_wire._compiled.recordwalk",
    sorted(str(p.relative_to(HERE)) for p in (HERE / "kafka_wire" / "_compiled" / "recordwalk").glob("*.c")),
    depends=["kafka_wire/_compiled/recordwalk/recordwalk.h"],
    extra_compile_args=["-O2", "-std=c11", "-Wall", "-fvisibility=hidden"],
    # libdeflate's CRC-32 (legacy messages): 16 ns for a 140-byte message where zlib's takes 130.
    libraries=["deflate"],
)

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
    ext_modules += [COLUMNAR, RECORDWALK]

setup(
    ext_modules=ext_modules,
    # build_ext compiles separate extensions in parallel on every core.
    options={"build_ext": {"parallel": os.cpu_count() or 1}} if ext_modules else {},
)
