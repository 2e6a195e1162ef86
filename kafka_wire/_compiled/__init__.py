"""Private: the modules that mypyc compiles (docs/compiled.md). Nothing outside ``kafka_wire.codec``,
the generated message modules and the records package imports from here: each public module
chooses its compiled twin once, where it imports it (:mod:`kafka_wire.flavour`)."""
