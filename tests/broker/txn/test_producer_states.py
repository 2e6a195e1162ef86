"""A partition's producer state (``broker/txn/producers.py``): which transactional batches join an
open transaction and which must be verified with the coordinator first (KIP-890)."""

from __future__ import annotations

from kafka_wire.broker.txn.producers import ProducerStates


def test_the_next_epochs_first_batch_is_verified_while_the_previous_transactions_marker_is_due() -> None:
    # Transaction version 2: the transaction of epoch 1 ended (its marker, of epoch 2, not written
    # here yet); the producer's next transaction, of epoch 2, sends its first batch here.
    producers = ProducerStates()
    producers.observe(7, 1, 0, 0, 0, 0, 100, transactional=True)
    assert producers.has_open_transaction(7, 1)
    assert not producers.has_open_transaction(7, 2)
    assert producers.start_verification(7, 2, bumps_epoch=True) is not None
    assert producers.start_verification(7, 1, bumps_epoch=True) is None  # its own transaction
    producers.observe_marker(7, 2, 0, 1, 101, commit=True)
    assert not producers.has_open_transaction(7, 2)
