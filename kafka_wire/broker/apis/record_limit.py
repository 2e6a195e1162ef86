"""Kafka's cap on the metadata records one admin request may create.

A KRaft controller writes what one admin request changes as one batch of metadata records, and
refuses a request that needs more than ``MAX_RECORDS_PER_USER_OP`` (10,000; here
``BrokerConfig.max_records_per_user_op``). The records: a new topic is a TopicRecord, a
ConfigRecord per config it sets and a PartitionRecord per partition; a partition added by
CreatePartitions is a PartitionRecord; a deleted topic is a RemoveTopicRecord. What Kafka
answers when the cap is passed:

* CreateTopics: the whole request fails, every topic it names gets POLICY_VIOLATION with
  :data:`EXCESSIVE_BATCH_MESSAGE` (even validate-only requests: the records are counted first);
* CreatePartitions: the topic whose partitions no longer fit, and every later topic that adds
  partitions, get UNKNOWN_SERVER_ERROR without a message; more than the cap of topics in one
  request fails the whole request as CreateTopics does;
* DeleteTopics: the topics past the cap get UNKNOWN_SERVER_ERROR.

Counting happens before anything is created, so a request over the cap costs no more than reading it.
"""

from __future__ import annotations

from typing import Final

EXCESSIVE_BATCH_MESSAGE: Final = "Unable to perform excessively large batch operation."


def new_topic_records(partitions: int, configs: int) -> int:
    """The metadata records of a new topic with ``partitions`` and ``configs`` set."""
    return 1 + configs + partitions
