"""DescribeTransactions and ListTransactions: what the coordinator tells admin clients (Kafka's
``handleDescribeTransactions`` and ``listTransactionStates``).

DescribeTransactions: an empty id is INVALID_REQUEST, an id not served here NOT_COORDINATOR (or
COORDINATOR_LOAD_IN_PROGRESS), an unknown or expiring (Dead) one TRANSACTIONAL_ID_NOT_FOUND;
otherwise the producer id and epoch, state, timeout, start time and partitions.

ListTransactions: COORDINATOR_LOAD_IN_PROGRESS while any partition loads; the filters combine:
states (names Kafka does not know are listed back in ``unknown_state_filters``), producer ids,
``duration_filter`` (v1: open longer than that many ms) and ``transactional_id_pattern`` (v2: a
regular expression the whole id must match; one that does not compile is
INVALID_REGULAR_EXPRESSION). Dead transactions are never listed. Python's ``re`` stands in for
Java's regular expressions: patterns using syntax only one of them knows may differ.
"""

from __future__ import annotations

import re

from kafka_wire import messages
from kafka_wire.broker.txn.runtime import TxnRuntime
from kafka_wire.broker.txn.states import TxnState
from kafka_wire.messages import ErrorCode


def describe(rt: TxnRuntime, transactional_id: str) -> messages.DescribeTransactionsResponseTransactionState:
    state = messages.DescribeTransactionsResponseTransactionState(transactional_id=transactional_id)
    if not transactional_id:
        state.error_code = ErrorCode.INVALID_REQUEST
        return state
    error, _, md = rt.lookup(transactional_id)
    if error:
        state.error_code = error
    elif md is None or md.state is TxnState.DEAD:
        state.error_code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(md.partitions):
            by_topic.setdefault(topic, []).append(partition)
        state.producer_id = md.producer_id
        state.producer_epoch = md.producer_epoch
        state.transaction_state = md.state.name_in_kafka
        state.transaction_timeout_ms = md.timeout_ms
        state.transaction_start_time_ms = md.start_ms
        state.topics = [
            messages.DescribeTransactionsResponseTopicData(topic=t, partitions=p) for t, p in by_topic.items()
        ]
    return state


def list_transactions(
    rt: TxnRuntime, request: messages.ListTransactionsRequest
) -> messages.ListTransactionsResponse:
    if rt.loading:
        return messages.ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    response = messages.ListTransactionsResponse()
    states: set[TxnState] = set()
    for name in request.state_filters:
        state = TxnState.from_name(name)
        if state is None:
            response.unknown_state_filters.append(name)
        else:
            states.add(state)
    pattern = None
    if request.transactional_id_pattern:
        try:
            pattern = re.compile(request.transactional_id_pattern)
        except re.error:
            return messages.ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
    producer_ids = set(request.producer_id_filters)
    for _, md in rt.served():
        if (
            md.state is TxnState.DEAD
            or (producer_ids and md.producer_id not in producer_ids)
            or (request.state_filters and md.state not in states)
            or (request.duration_filter >= 0 and rt.now - md.start_ms <= request.duration_filter)
            or (pattern is not None and pattern.fullmatch(md.transactional_id) is None)
        ):
            continue
        response.transaction_states.append(
            messages.ListTransactionsResponseTransactionState(
                transactional_id=md.transactional_id,
                producer_id=md.producer_id,
                transaction_state=md.state.name_in_kafka,
            )
        )
    return response
