"""The project's PEP 517 build backend: setuptools', plus mypy when the compiled flavour is asked for.

``KAFKA_WIRE_COMPILE=1 pip install .`` builds the mypyc flavour (setup.py's ``COMPILED`` list) in
pip's isolated build environment, which therefore needs mypy (it brings mypyc); the pinned version
is the one the project tests with. Without the variable the build is setuptools' own and installs
pure Python.
"""

from __future__ import annotations

import os

# setuptools ships no annotations here (typeshed's types-setuptools is not installed).
from setuptools import build_meta  # type: ignore[import-untyped]
from setuptools.build_meta import *  # type: ignore[import-untyped]  # noqa: F403  (the rest of the backend interface, unchanged)

MYPYC: list[str] = ["mypy==2.4.1"]


def _extra() -> list[str]:
    return MYPYC if os.environ.get("KAFKA_WIRE_COMPILE") == "1" else []


def get_requires_for_build_wheel(config_settings: dict[str, str | list[str]] | None = None) -> list[str]:
    return [*build_meta.get_requires_for_build_wheel(config_settings), *_extra()]


def get_requires_for_build_editable(config_settings: dict[str, str | list[str]] | None = None) -> list[str]:
    return [*build_meta.get_requires_for_build_editable(config_settings), *_extra()]
