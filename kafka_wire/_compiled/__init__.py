"""Private: modules that mypyc compiles when ``KAFKA_WIRE_COMPILE=1`` (see ``docs/compiled.md``).

Nothing here is public API and nothing outside the one module that chooses each flavour imports
it: ``kafka_wire.records.loops`` for ``records``. Each module here is plain Python that also
compiles; the chooser uses the built extension when there is one and ``KAFKA_WIRE_PURE`` is unset,
and the same source run as Python otherwise (``kafka_wire.flavour``).
"""
