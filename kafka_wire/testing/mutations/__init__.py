"""The mutation kinds of :mod:`kafka_wire.testing.mutator`, one module per level: ``wire``
(tokens of an encoding), ``values`` (fields of a message), ``records`` (record batches),
``frames`` (headers and frames), ``byte_level`` (the fallback); ``primitives`` holds what they share.

Each kind is one small function in a table of its module, called with the :class:`Mutator`
(whose ``rng`` draws every choice) and what it mutates.
"""
