"""Which packages may import which: walks the import statements of the source, transitively (those
run when the code runs: not the ones under ``if TYPE_CHECKING:``)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import kafka_wire

ROOT = Path(kafka_wire.__file__).parent
GENERATED = ("kafka_wire.messages", "kafka_wire._compiled.messages")
"""Generated codecs import only the codec runtime; walking their large modules would only cost time."""


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except what sits under ``if TYPE_CHECKING:`` (never imported when
    the code runs)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


@functools.cache
def _parsed_runtime_nodes(path: Path) -> tuple[ast.AST, ...]:
    """:func:`_runtime_nodes` of the file at ``path`` (parsed once per test session)."""
    return tuple(_runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module ``from ... import`` reads (relative to ``package``)."""
    base = node.module or ""
    if not node.level:
        return base
    anchor = package.split(".")
    return ".".join(anchor[: len(anchor) - node.level + 1] + ([base] if base else []))


@functools.cache
def _imports(name: str, path: Path) -> set[str]:
    """The kafka_wire modules ``path`` imports (``from pkg import mod`` counts ``pkg.mod`` when it is one)."""
    package = _package_of(name, path)
    found: set[str] = set()
    for node in _parsed_runtime_nodes(path):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            found.add(base)
            found.update(
                f"{base}.{alias.name}" for alias in node.names if _module_file(f"{base}.{alias.name}")
            )
    return {m for m in found if m == "kafka_wire" or m.startswith("kafka_wire.")}


@functools.cache
def reachable(package: str) -> dict[str, str]:
    """Every kafka_wire module reachable by imports from ``package``'s modules, with one importer
    each (cached: do not change the answer)."""
    start = [
        ".".join(
            (package, *p.relative_to(ROOT.joinpath(*package.split(".")[1:])).with_suffix("").parts)
        ).removesuffix(".__init__")
        for p in sorted(ROOT.joinpath(*package.split(".")[1:]).rglob("*.py"))
    ]
    seen: dict[str, str] = dict.fromkeys(start, "")
    todo = list(start)
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if path is None or name.startswith(GENERATED):
            continue
        for imported in sorted(_imports(name, path)):
            if imported not in seen:
                seen[imported] = name
                todo.append(imported)
    return seen


def _offenders(package: str, forbidden: str) -> list[str]:
    return [
        f"{m} (imported by {by})"
        for m, by in reachable(package).items()
        if m == forbidden or m.startswith(forbidden + ".")
    ]


def test_spark_imports_no_broker() -> None:
    assert _offenders("kafka_wire.spark", "kafka_wire.broker") == []


def test_logformat_and_client_import_no_broker_or_spark() -> None:
    for package in ("kafka_wire.logformat", "kafka_wire.client"):
        assert _offenders(package, "kafka_wire.broker") == []
        assert _offenders(package, "kafka_wire.spark") == []


def test_the_walk_finds_imports() -> None:
    """The walk is not vacuous: the broker's log reaches logformat and the broker itself."""
    found = reachable("kafka_wire.broker.log")
    assert "kafka_wire.logformat.batch_header" in found
    assert "kafka_wire.broker.effects" in found


def test_the_simulator_drives_the_engine_without_adapters() -> None:
    """kafka_wire.sim is core: the engine on a virtual network, never the asyncio driver."""
    assert _offenders("kafka_wire.sim", "kafka_wire.adapters") == []
    assert _offenders("kafka_wire.sim", "kafka_wire.cli") == []
    io_modules = {"socket", "asyncio", "threading", "time", "os", "subprocess", "multiprocessing", "secrets"}
    for path in sorted((ROOT / "sim").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not names & io_modules, f"{path.name} imports {sorted(names & io_modules)}"


# -- the core does no I/O --------------------------------------------------------------------------

CORE = ("codec", "records", "protocol", "broker", "netfuzz", "sim", "logformat")
"""The packages that never do I/O (``adapters/``, ``cli/`` and ``spark/`` do it for them)."""
IO_MODULES = frozenset(
    {
        # sockets and the network
        "socket", "ssl", "select", "selectors", "asyncio", "http", "urllib",
        # files and the process
        "os", "io", "pathlib", "shutil", "tempfile", "glob", "mmap", "fcntl", "signal", "subprocess",
        # clocks
        "time", "datetime", "sched",
        # threads and processes
        "threading", "_thread", "concurrent", "multiprocessing", "queue",
        # randomness drawn from the operating system
        "secrets",
    }
)  # fmt: skip
"""Modules the core imports from nowhere, not even inside a function."""
SEEDED_ONLY = {"random": frozenset({"Random"}), "uuid": frozenset({"UUID", "SafeUUID"})}
"""Modules the core may use for their types only: a seeded ``random.Random`` passed in, never the
module-level generator (``random.random()``, ``from random import choice``) nor ``uuid.uuid4()``
(the operating system's randomness)."""
LOADERS = {"kafka_wire.flavour": "picks the compiled or pure module at import (KAFKA_WIRE_PURE, files)"}
"""Modules the core reaches that may do I/O, and why: they run only while modules load."""


def _io_uses(path: Path) -> list[str]:
    """The I/O ``path`` imports or calls, as ``line: what`` in line order (imports under
    ``if TYPE_CHECKING:`` do not count; imports inside functions do)."""
    found: list[tuple[int, str]] = []
    for node in _parsed_runtime_nodes(path):
        names: list[tuple[str, str | None]] = []
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            allowed = SEEDED_ONLY.get(node.value.id)
            if allowed is not None and node.attr not in allowed:
                found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        for module, name in names:
            top = module.split(".")[0]
            allowed = SEEDED_ONLY.get(top)
            if top in IO_MODULES or (allowed is not None and name is not None and name not in allowed):
                found.append((getattr(node, "lineno", 0), module + (f" import {name}" if name else "")))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_core_does_no_io() -> None:
    """No module of a core package, nor any kafka_wire module it imports (transitively), imports
    an I/O module or uses the module-level random generator."""
    modules: dict[str, str] = {}
    for package in CORE:
        modules.update(reachable(f"kafka_wire.{package}"))
    offenders = []
    for name in sorted(modules):
        path = _module_file(name)
        if path is None or name.startswith(GENERATED) or name in LOADERS:
            continue
        offenders += [f"{name}:{use}" for use in _io_uses(path)]
    assert offenders == []
    assert "kafka_wire.broker.broker" in modules and "kafka_wire.testing.memory_storage" in modules


def test_the_core_imports_no_adapter_cli_or_spark() -> None:
    for package in CORE:
        for outside in ("kafka_wire.adapters", "kafka_wire.cli", "kafka_wire.spark"):
            assert _offenders(f"kafka_wire.{package}", outside) == [], package


def test_the_io_check_finds_io(tmp_path: Path) -> None:
    """Not vacuous: each kind of use is found."""
    source = tmp_path / "m.py"
    source.write_text(
        "import random, uuid\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import socket\n"
        "def f(r: random.Random) -> uuid.UUID:\n    import time\n    from os import path\n"
        "    from random import choice\n    return uuid.uuid4() if random.random() else uuid.UUID(int=0)\n",
        encoding="utf-8",
    )
    assert _io_uses(source) == [
        "6: time",
        "7: os import path",
        "8: random import choice",
        "9: random.random",
        "9: uuid.uuid4",
    ]


# -- no import cycles --------------------------------------------------------------------------------


def _module_level_nodes(tree: ast.Module) -> list[ast.AST]:
    """The statements that run when the module is imported: the module body, with what sits in
    its ``if`` / ``try`` / ``with`` blocks and class bodies; not function bodies (they run later)
    nor ``if TYPE_CHECKING:`` blocks (they never run)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        out.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef, ast.ExceptHandler)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _module_level_imports(name: str, path: Path) -> set[str]:
    """The kafka_wire modules importing ``name`` runs: what its module-level import statements
    name (``from pkg import mod``: ``pkg.mod``; ``from pkg import value``: ``pkg``) and the
    packages above them (whose ``__init__`` runs first), less ``name``'s own packages (already
    being imported when ``name`` runs)."""
    package = _package_of(name, path)
    named: set[str] = set()
    for node in _module_level_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                named.add(sub if _module_file(sub) else base)
    found: set[str] = set()
    for module in named:
        parts = module.split(".")
        for i in range(2, len(parts) + 1):
            target = ".".join(parts[:i])
            if target.startswith("kafka_wire.") and not (name + ".").startswith(target + "."):
                found.add(target)
    return {m for m in found if _module_file(m) is not None}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_module_level_import_cycle() -> None:
    """No two kafka_wire modules import each other, directly or through others, when they load.

    Checked: module-level imports (including the packages above each imported module). Not
    checked: imports inside functions (a deferred import is how a cycle is broken on purpose, as
    ``codec.runtime`` loads ``codec.interp`` only to report an error) and under
    ``if TYPE_CHECKING:``. Generated codecs are left out: they import only the codec runtime.
    """
    graph = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = ".".join(("kafka_wire", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        if not name.startswith(GENERATED):
            graph[name] = _module_level_imports(name, path)
    assert "kafka_wire.broker.node_parts" in graph["kafka_wire.broker.node"]
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
