"""KIP-932 share groups on the partition leader: share sessions (``sessions``) and the
share-partitions of every group with their acquisition-lock timers (``manager``), which the
ShareFetch and ShareAcknowledge handlers (``kafka_wire.broker.apis.share_fetch``,
``share_acknowledge``) work on. Membership is the group coordinator's
(``kafka_wire.broker.group.share_groups``); the in-flight records of one share-partition are
``kafka_wire.broker.group.share_partition.SharePartition``."""
