"""Private: modules that mypyc compiles when ``KAFKA_WIRE_COMPILE=1`` (see ``docs/internals/compiled.md``).

Nothing here is public API, and nothing outside the module that chooses each flavour imports it:
``kafka_wire.records.loops`` for ``records`` and ``recordwalk`` (C: ``Record`` and the loops that
make records), ``kafka_wire.records.columnar`` for ``columnar`` (C), ``kafka_wire.codec.structs``
for ``base`` (the message classes' bases), and each hot ``kafka_wire.messages.<api>`` module for
its twin in ``messages`` (generated). ``records`` and ``base`` are plain Python that also
compiles; the chooser uses the built extension when there is one and ``KAFKA_WIRE_PURE`` is
unset, and the same source run as Python otherwise (``kafka_wire.flavour``).
"""
