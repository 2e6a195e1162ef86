"""Which packages may import which: walks the import statements of the source, transitively (those
run when the code runs: not the ones under ``if TYPE_CHECKING:``)."""

from __future__ import annotations

import ast
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


def _imports(name: str, path: Path) -> set[str]:
    """The kafka_wire modules ``path`` imports (``from pkg import mod`` counts ``pkg.mod`` when it is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(
                f"{base}.{alias.name}" for alias in node.names if _module_file(f"{base}.{alias.name}")
            )
    return {m for m in found if m == "kafka_wire" or m.startswith("kafka_wire.")}


def reachable(package: str) -> dict[str, str]:
    """Every kafka_wire module reachable by imports from ``package``'s modules, with one importer each."""
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
