"""The ``kafka-wire`` command line: one module per subcommand.

- ``cluster`` (:mod:`~kafka_wire.cli.cluster`): a local replicated cluster of ``serve`` processes.
- ``decode`` (:mod:`~kafka_wire.cli.decode`): size-prefixed frames to JSON lines.
- ``fuzz`` (:mod:`~kafka_wire.cli.fuzz`): the network fuzzer for Kafka-speaking servers.
- ``dump-log`` (:mod:`~kafka_wire.cli.dump_log`): the batches of a segment file or records
  payload, or the entries of an index file.
- ``proxy`` (:mod:`~kafka_wire.cli.proxy`): a Kafka-aware proxy with a filter chain.
- ``serve`` (:mod:`~kafka_wire.cli.serve`): run the broker.
- ``simulate`` (:mod:`~kafka_wire.cli.simulate`): seeded simulations of a cluster with faults.
- ``spark-load`` (:mod:`~kafka_wire.cli.spark_load`): topics into Parquet with Spark.

Each module has ``add_parser(sub)``, which registers its subcommand and sets ``handler``;
:func:`main` parses the arguments and returns the handler's exit status. Only the module of the
subcommand named on the command line is imported (all of them for ``--help`` or a name that is
none of them), so ``kafka-wire serve`` never loads the fuzzer, the simulator or the cluster
launcher; subcommand modules import what they run (the broker, PySpark) only when they run.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

#: Subcommand name to the module that registers and runs it.
COMMANDS: Final = {
    "cluster": "kafka_wire.cli.cluster",
    "decode": "kafka_wire.cli.decode",
    "dump-log": "kafka_wire.cli.dump_log",
    "fuzz": "kafka_wire.cli.fuzz",
    "proxy": "kafka_wire.cli.proxy",
    "serve": "kafka_wire.cli.serve",
    "simulate": "kafka_wire.cli.simulate",
    "spark-load": "kafka_wire.cli.spark_load",
}


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing ``shutil`` (and ``bz2``, ``lzma``),
    which argparse's formatter does for every argument a parser is given."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("width", _terminal_columns() - 2)  # argparse's own margin
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (its subcommands' parsers too) that formats with :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``command`` alone (its module is the only one imported), or of every
    subcommand when ``command`` is None or not one of :data:`COMMANDS`."""
    parser = _Parser(prog="kafka-wire", description="Sans-IO Apache Kafka protocol toolkit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        if command in (None, name) or command not in COMMANDS:
            importlib.import_module(module).add_parser(sub)
    return parser


#: Subcommands that start with the cyclic garbage collector off: before it listens ``serve``
#: creates mostly long-lived objects (modules, classes, functions), and the collections they set
#: off (69 young and middle ones on an empty data dir, about 5% of its CPU time) free almost
#: nothing; it turns the collector back on once it listens (``kafka_wire.cli.serve_process``).
_COLLECT_LATER: Final = frozenset({"serve"})


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    collecting = gc.isenabled()
    if collecting and argv and argv[0] in _COLLECT_LATER:
        gc.disable()
    try:
        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(argv)
        handler = args.handler
        result: int = handler(args)
        return result
    finally:
        if collecting:
            gc.enable()


__all__ = ["COMMANDS", "build_parser", "main"]
