"""Which partition of an internal topic holds a coordinator's key, as Kafka places it.

A group id lives in partition ``abs(hash) % n`` of ``__consumer_offsets``, a transactional id in
that of ``__transaction_state`` (Java's ``String.hashCode``; ``n`` the topic's partition count).
Apart from the records' layouts (``group.records``, ``txn.records``) so that routing a request
loads neither.
"""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, wrapping at 32 bits, signed)."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group, as Kafka computes it (``abs(hash) % n``)."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of a transactional id (Kafka's ``partitionFor``)."""
    return partition_for_group(transactional_id, num_partitions)
