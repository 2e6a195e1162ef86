"""The deterministic cluster simulator: real engine nodes on a virtual network and clock, with
faults, simulated clients and a checker of Kafka's invariants (``kafka-wire simulate``)."""
