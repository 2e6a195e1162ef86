"""Simulated Kafka clients for :mod:`kafka_wire.sim`: Sans-IO state machines on the project's
``ClientConnection`` that create topics, produce, consume by assignment and in a classic group,
and record every send and poll in the shared :class:`~kafka_wire.sim.history.History`.

They implement :class:`kafka_wire.sim.contracts.SimClient` and reach nodes only through the
world's :class:`~kafka_wire.sim.contracts.ClientIO`.
"""
