"""Build hook: compile the mypyc flavour when ``KAFKA_WIRE_COMPILE=1`` (see docs/compiled.md).

Without the variable this installs pure Python. With it, the modules in ``COMPILED`` are compiled
by mypyc (``mypy`` must be importable by the build: ``pip install --no-build-isolation`` from an
environment that has it, or ``python setup.py build_ext --inplace`` for a development tree).
"""

from __future__ import annotations

import os

from setuptools import setup

COMPILED = [
    "kafka_wire/records/_hot_native.py",
    "kafka_wire/records/_record_native.py",
]

ext_modules = []
if os.environ.get("KAFKA_WIRE_COMPILE") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(
        COMPILED,
        opt_level=os.environ.get("KAFKA_WIRE_MYPYC_OPT", "1"),
        multi_file=False,
        separate=False,
        group_name="kafka_wire.records._native",
    )

setup(ext_modules=ext_modules)
