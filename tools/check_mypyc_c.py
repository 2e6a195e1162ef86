"""Guard against mypyc's silent slow paths: count generic C-API calls in the hot functions.

mypyc compiles what it understands into direct C and everything else into generic calls
(``PyObject_Vectorcall``, ``CPyObject_GetAttr``, ``PyObject_VectorcallMethod``...), which are
correct but run at interpreter speed. A small source change (an untyped local, a ``BytesWriter``
append of an ``int`` instead of a ``u8``) can turn a hot loop generic without any test noticing.
This script reads the C that ``KAFKA_WIRE_COMPILE=1 python setup.py build_ext`` left under
``build/`` and fails when a hot function holds more generic calls than its budget. Budgets are
today's counts (error constructors and once-per-call lookups included): lower them when the
source improves, never raise them without a measurement.

Usage: ``python tools/check_mypyc_c.py [build-dir]``; exit status 1 on any overrun.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

GENERIC = (
    "PyObject_Vectorcall",
    "PyObject_VectorcallMethod",
    "CPyObject_GetAttr",
    "PyObject_SetAttr",
    "PyObject_GetItem",
    "PyObject_SetItem",
    "PyObject_RichCompare",
    "PyNumber_",
    "PyObject_CallMethod",
)
"""C calls that mean mypyc fell back to the generic object protocol."""

BUDGETS: dict[str, dict[str, dict[str, int]]] = {
    # one shared library for the records group (setup.py's group_name); functions are prefixed
    # with their module
    "__native__native.c": {
        # per record nothing generic: the native Record is built by direct C; the calls build
        # exceptions on error paths
        "_hot_native___V2Records___next_record": {"PyObject_Vectorcall": 13},
        # StopIteration at the end of a batch
        "_hot_native___V2Records_____next__": {"CPyObject_GetAttr": 1},
        "_hot_native___V2Records_____init__": {"PyObject_Vectorcall": 2, "CPyObject_GetAttr": 1},
        # gc.isenabled / disable / enable once per batch
        "_hot_native___decode_records_v2": {"PyObject_Vectorcall": 3, "CPyObject_GetAttr": 3},
        "_hot_native____headers": {"PyObject_Vectorcall": 4},
        "_hot_native____slow_uvarint32": {"PyObject_Vectorcall": 1},
        "_hot_native____slow_uvarint64": {"PyObject_Vectorcall": 1},
        "_hot_native____same_bytes": {},
        # one BytesWriter() and one error; `out += ...` and the offset_deltas lookup
        "_hot_native___encode_records_v2": {"PyObject_Vectorcall": 2, "PyNumber_": 1, "PyObject_GetItem": 1},
        "_hot_native____put_uvarint": {},
        "_hot_native____uvarint_size": {},
        "_record_native___Record_____init__": {},
    },
}

_DEF = re.compile(r"^\S.*\bCPyDef_(\w+)\(.*\{$")
_CALL = re.compile(r"\b(" + "|".join(re.escape(g) for g in GENERIC) + r")\w*\(")


def generic_calls(c_source: str) -> dict[str, Counter[str]]:
    """``{function: Counter(generic call family -> count)}`` for every ``CPyDef_`` function."""
    out: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in c_source.splitlines():
        m = _DEF.match(line)
        if m:
            current = out.setdefault(m.group(1), Counter())
            continue
        if line.startswith("}"):
            current = None
        elif current is not None:
            for call in _CALL.findall(line):
                current[call] += 1
    return out


def check(build_dir: Path) -> list[str]:
    """Every budget overrun (or missing file/function) as one line."""
    problems: list[str] = []
    for name, budgets in BUDGETS.items():
        files = sorted(build_dir.rglob(name))
        if not files:
            problems.append(f"{name}: not found under {build_dir} (build with KAFKA_WIRE_COMPILE=1 first)")
            continue
        found = generic_calls(files[0].read_text())
        for fn, budget in budgets.items():
            if fn not in found:
                problems.append(f"{name}: hot function {fn} not found")
                continue
            for call, n in sorted(found[fn].items()):
                if n > budget.get(call, 0):
                    problems.append(f"{name}: {fn} has {n} x {call} (budget {budget.get(call, 0)})")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    problems = check(Path(args[0] if args else "build"))
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print("mypyc hot functions: no generic calls over budget")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
