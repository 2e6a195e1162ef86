"""Broker configuration: one frozen dataclass, readable from Kafka's property names.

:meth:`BrokerConfig.from_properties` reads the properties the engine acts on: the fields' own
(``PROPERTY_OF``) and the broker properties that set topic defaults (Kafka's synonym table,
:mod:`kafka_wire.broker.topic_synonyms`: ``log.retention.hours``, ``message.max.bytes`` …). Other
keys are left to the caller (the SASL listeners' settings need the listeners, so
:mod:`kafka_wire.broker.sasl_config` reads them there):
:func:`kafka_wire.broker.server_properties.load_server_properties` reads what the server needs
(listeners, the log directory) and reports the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields, replace
from typing import Final

from kafka_wire.broker.cluster_settings import (
    STANDALONE_CONTROLLER_LISTENER,
    STANDALONE_LISTENER,
    ClusterSettings,
    Voter,
)
from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.broker.config_properties import PROPERTY_OF
from kafka_wire.broker.fetch_sessions import DEFAULT_FETCH_SESSION_EVICTION_MS, DEFAULT_MAX_FETCH_SESSIONS
from kafka_wire.broker.group.config import CONSUMER_ASSIGNORS, MIGRATION_POLICIES
from kafka_wire.broker.group_settings import group_settings_problem
from kafka_wire.broker.log.config import CONFIG_KEYS, MIN_SEGMENT_BYTES, ConfigError, LogConfig
from kafka_wire.broker.sasl_config import PASSWORD_MECHANISMS, ListenerSasl
from kafka_wire.broker.topic_synonyms import TOPIC_CONFIG_OF, TopicDefault, topic_defaults
from kafka_wire.broker.work import DEFAULT_MAX_WORK_BYTES_PER_CALL
from kafka_wire.errors import KafkaWireError
from kafka_wire.protocol.frames import DEFAULT_MAX_FRAME_BYTES
from kafka_wire.quick_dataclass import dataclass

#: Java's ``Integer.MAX_VALUE``: Kafka's "no limit" default (``group.max.size``, connection counts).
INT32_MAX: Final = 2**31 - 1

DEFAULT_MAX_RECORDS_PER_USER_OP: Final = 10_000
"""Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP`` (the most records one controller batch holds)."""


class BrokerConfigError(KafkaWireError):
    """A broker configuration value is invalid; ``key`` names the property."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    #: ``node.id``
    node_id: int = 1
    #: The advertised listener clients are told to connect to (``advertised.listeners``).
    host: str = "127.0.0.1"
    port: int = 9092
    #: ``cluster.id``: None takes the data directory's (``meta.properties``), or makes a new random
    #: one for a new directory; set, a directory of another cluster is refused.
    cluster_id: str | None = None
    #: ``broker.rack``
    rack: str | None = None
    #: The data directory's absolute path (``log.dirs``), as DescribeLogDirs reports it; set by
    #: the driver (the engine never looks at the file system).
    log_dir: str = ""
    #: ``auto.create.topics.enable`` (Kafka's default: true), with ``num.partitions``.
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    #: ``delete.topic.enable``
    delete_topic_enable: bool = True
    #: Broker properties that set topic defaults, by Kafka's broker name and as given
    #: (``{"log.retention.hours": "24", "message.max.bytes": "2097152"}``); :attr:`topic_defaults`
    #: resolves them by Kafka's synonym table.
    topic_default_properties: Mapping[str, str] = field(default_factory=dict)
    #: ``offsets.topic.num.partitions`` (Kafka: 50) and ``offsets.retention.minutes`` (7 days) in ms.
    #: The partition count only applies when the broker creates ``__consumer_offsets``; an
    #: existing topic keeps its own count, which places the groups.
    offsets_topic_num_partitions: int = 50
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    #: ``offsets.topic.segment.bytes`` (Kafka: 100 MiB): ``segment.bytes`` of ``__consumer_offsets``.
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    #: ``offsets.topic.compression.codec`` (Kafka: 0, none; 1 gzip, 2 snappy, 3 lz4, 4 zstd): how
    #: the group coordinator compresses the batches it writes.
    offsets_topic_compression_codec: int = 0
    #: ``offsets.topic.replication.factor`` (Kafka: 3): the replicas of ``__consumer_offsets``
    #: when a cluster creates it (a single node makes it with one).
    offsets_topic_replication_factor: int = 3
    #: ``offsets.commit.timeout.ms`` (Kafka: 5 s): how long a group write waits for its
    #: replication in a cluster before its request gets COORDINATOR_NOT_AVAILABLE.
    offsets_commit_timeout_ms: int = 5000
    #: ``group.initial.rebalance.delay.ms`` and the session timeout bounds.
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    #: ``group.max.size``: members one classic group may hold (Kafka: no limit); joins beyond it
    #: get GROUP_MAX_SIZE_REACHED.
    group_max_size: int = INT32_MAX
    #: KIP-848 consumer groups: ``group.consumer.session.timeout.ms``,
    #: ``group.consumer.heartbeat.interval.ms``, ``group.consumer.assignors`` (comma-separated:
    #: ``uniform``, ``range``; the first is the default), ``group.consumer.max.size`` and
    #: ``group.consumer.migration.policy`` (see ``kafka_wire.broker.group.config``); the session
    #: timeout and the heartbeat interval lie within their ``min``/``max`` properties, and the
    #: interval is shorter than the session timeout (Kafka's ``GroupCoordinatorConfig`` rules).
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    #: ``group.consumer.min/max.assignment.interval.ms`` (0 and 15 s): bounds of the group config
    #: ``consumer.assignment.interval.ms`` (as the ``min``/``max`` settings of each group type below).
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    group_consumer_assignors: str = "uniform,range"
    group_consumer_max_size: int = INT32_MAX
    group_consumer_migration_policy: str = "bidirectional"
    #: KIP-932 share groups (``kafka_wire.broker.group.share_groups``, ``kafka_wire.broker.share``):
    #: ``group.share.session.timeout.ms``, ``group.share.heartbeat.interval.ms``,
    #: ``group.share.max.size``, the acquisition lock (``group.share.record.lock.duration.ms``),
    #: the deliveries before a record is archived (``group.share.delivery.count.limit``), the
    #: in-flight records of a share-partition (``group.share.partition.max.record.locks``) and the
    #: share sessions a broker keeps (``max.share.session.cache.size``); Kafka 4.4's defaults.
    group_share_session_timeout_ms: int = 45_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_max_size: int = 200
    group_share_record_lock_duration_ms: int = 30_000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2000
    max_share_session_cache_size: int = 1000
    #: The bounds of the share group configs (``group.share.min/max.*``, Kafka 4.4's defaults).
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4000
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    #: KIP-1071 streams groups (not served: the group configs ``streams.*`` are checked on these,
    #: ``group.streams.*``, Kafka 4.4's defaults).
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_max_standby_replicas: int = 2
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000
    group_streams_min_task_offset_interval_ms: int = 15_000
    group_streams_max_warmup_replicas: int = 20
    #: ``share.coordinator.state.topic.num.partitions`` (50), ``.replication.factor`` (3),
    #: ``.min.isr`` (2) and ``.segment.bytes`` (100 MiB): ``__share_group_state``, where the
    #: share-partitions' state is kept, when the broker creates it (a single node: one replica).
    share_coordinator_state_topic_num_partitions: int = 50
    share_coordinator_state_topic_replication_factor: int = 3
    share_coordinator_state_topic_min_isr: int = 2
    share_coordinator_state_topic_segment_bytes: int = 100 * 1024 * 1024
    # -- transactions (the transaction coordinator, ``kafka_wire.broker.txn``) --
    #: ``transaction.state.log.num.partitions`` (Kafka: 50), ``.replication.factor`` (3),
    #: ``.min.isr`` (2) and ``.segment.bytes`` (100 MiB): ``__transaction_state`` when the broker
    #: creates it (a single node makes it with one replica and min ISR 1).
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    #: ``transaction.max.timeout.ms`` (15 minutes): InitProducerId asking for more gets
    #: INVALID_TRANSACTION_TIMEOUT.
    transaction_max_timeout_ms: int = 900_000
    #: ``transactional.id.expiration.ms`` (7 days).
    transactional_id_expiration_ms: int = 604_800_000
    #: ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s) and
    #: ``transaction.remove.expired.transaction.cleanup.interval.ms`` (1 hour).
    transaction_abort_timed_out_interval_ms: int = 10_000
    transaction_remove_expired_interval_ms: int = 3_600_000
    #: ``transaction.partition.verification.enable`` (KIP-890 part 1): a partition leader asks the
    #: coordinator before it appends a transaction's first batch.
    transaction_partition_verification_enable: bool = True
    #: ``kafka.wire.bootstrap.transaction.version``, kafka_wire's own (Kafka sets it when it formats
    #: the storage, ``--feature transaction.version=N``): the ``transaction.version`` feature level a
    #: new cluster finalizes (2: an epoch bump at every transaction end, KIP-890).
    bootstrap_transaction_version: int = 2
    #: ``socket.request.max.bytes``
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: ``fetch.max.bytes`` on the broker (55 MiB): the cap on one Fetch response.
    fetch_max_bytes: int = 57_671_680
    #: Answer Fetch with file regions the driver sends with ``sendfile`` (stored batches are never
    #: copied through Python); off, the records are read into the response.
    zero_copy_fetch: bool = True
    #: ``max.incremental.fetch.session.cache.slots``, and ``min.incremental.fetch.session.eviction.ms``:
    #: how long a session must be unused before a new one may evict it (Kafka: 2 minutes).
    fetch_session_cache_slots: int = DEFAULT_MAX_FETCH_SESSIONS
    fetch_session_eviction_ms: int = DEFAULT_FETCH_SESSION_EVICTION_MS
    # -- connections (Kafka's socket server settings) --
    #: ``max.connections``: connections open at once; over it a new connection is closed at once.
    max_connections: int = INT32_MAX
    #: ``max.connections.per.ip``, and ``max.connections.per.ip.overrides`` (``"host:100,127.0.0.1:200"``):
    #: connections open at once from one address; over it a new connection is closed at once.
    #: Overrides are matched against the peer's address as text (the engine resolves no names).
    max_connections_per_ip: int = INT32_MAX
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    #: ``max.connection.creation.rate`` (KIP-612): new connections per second on each client
    #: listener and over them all; over it the driver's acceptor waits (``adapters/acceptor.py``).
    max_connection_creation_rate: int = INT32_MAX
    #: ``connections.max.idle.ms`` (Kafka: 10 minutes): a connection with no bytes received or sent
    #: for that long is closed (not while the broker owes it a response); negative: never, as in Kafka.
    connections_max_idle_ms: int = 600_000
    #: ``kafka.wire.request.receive.timeout.ms``, kafka_wire's own (Kafka has none): a connection
    #: that has begun sending a request and not finished it within this time is closed, so half-sent
    #: frames cannot hold memory. The default is a client's ``request.timeout.ms`` (30 s): by then
    #: the client has given up on that request anyway.
    request_receive_timeout_ms: int = 30_000
    #: ``queued.max.requests`` (Kafka: 500): when this many requests are held unanswered (Fetch
    #: long polls, JoinGroup...), no connection's further requests are read until some are answered.
    queued_max_requests: int = 500
    #: ``quota.window.num`` (Kafka: 11): client quota rates are measured over this many windows.
    quota_window_num: int = 11
    #: ``quota.window.size.seconds`` (Kafka: 1): the length of each client quota window.
    quota_window_size_seconds: int = 1
    #: ``controller.quota.window.num`` and ``controller.quota.window.size.seconds`` (Kafka: 11 and
    #: 1): the windows of ``controller_mutation_rate`` quotas (their token bucket holds
    #: ``num * size`` seconds of the quota).
    controller_quota_window_num: int = 11
    controller_quota_window_size_seconds: int = 1
    #: ``connection.failed.authentication.delay.ms`` (Kafka: 100): a failed SASL authentication is
    #: answered, and its connection closed, this much later.
    failed_authentication_delay_ms: int = 100
    #: ``connections.max.reauth.ms`` (Kafka: 0, off): with SASL, an authenticated session lasts
    #: this long; clients learn it from SaslAuthenticate v1+ and re-authenticate in time (KIP-368),
    #: and a connection whose session ended without re-authentication is closed.
    connections_max_reauth_ms: int = 0
    #: ``log.retention.check.interval.ms``: how often retention and compaction run.
    retention_check_interval_ms: int = 300_000
    #: ``kafka.wire.max.records.per.user.op``: Kafka's cap on the metadata records one admin request
    #: may create (the KRaft controller's ``MAX_RECORDS_PER_USER_OP``, 10,000, a constant in Kafka,
    #: so kafka_wire's own property): a topic takes one record, one per config it sets and one per
    #: partition, so it is also the cap on the partitions one CreateTopics or CreatePartitions
    #: request may create and the topics one DeleteTopics may delete.
    max_records_per_user_op: int = DEFAULT_MAX_RECORDS_PER_USER_OP
    #: ``kafka.wire.max.work.bytes.per.call``, kafka_wire's own (Kafka has none): work one engine
    #: call may do before a request in progress yields to other connections (see
    #: ``kafka_wire.broker.work``).
    max_work_bytes_per_call: int = DEFAULT_MAX_WORK_BYTES_PER_CALL
    #: The SASL listeners by name (``listener.security.protocol.map`` maps them to
    #: SASL_PLAINTEXT or SASL_SSL): their mechanisms and PLAIN users (``sasl.enabled.mechanisms`` and the
    #: JAAS entries, read by :func:`kafka_wire.broker.sasl_config.listener_sasl`). A single node's
    #: one listener is :data:`STANDALONE_LISTENER`. A listener not here is PLAINTEXT.
    sasl_listeners: Mapping[str, ListenerSasl] = field(default_factory=dict)
    #: SASL users, by mechanism (``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512``) then user to
    #: password: ``sasl.users.<MECHANISM>.<user>``, kafka_wire's own shortcut, kept for existing
    #: setups. A SASL listener without ``sasl.enabled.mechanisms`` serves these mechanisms, its
    #: PLAIN users are these, and these SCRAM users log in beside those of the metadata.
    sasl_users: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: ``authorizer.class.name``: Kafka's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``
    #: turns ACL authorization on (``kafka_wire.broker.security``); empty: every request allowed.
    authorizer_class_name: str = ""
    #: ``super.users``: principals (``User:admin;User:ops``) allowed everything.
    super_users: str = ""
    #: ``allow.everyone.if.no.acl.found``: a resource without any ACL is open to everyone.
    allow_everyone_if_no_acl_found: bool = False
    #: ``delegation.token.secret.key`` (or its old name ``delegation.token.master.key``): the key
    #: of the tokens' HMACs; empty: delegation tokens are disabled. Every node needs the same.
    delegation_token_secret_key: str = field(default="", repr=False)
    #: ``delegation.token.max.lifetime.ms`` (7 days), ``delegation.token.expiry.time.ms`` (1 day)
    #: and ``delegation.token.expiry.check.interval.ms`` (1 hour).
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3_600_000
    delegation_token_expiry_time_ms: int = 24 * 3_600_000
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    # -- replication (read in cluster mode; a single node has no replicas to manage) --
    #: ``replica.lag.time.max.ms``: a follower that has not caught up for this long leaves the ISR.
    replica_lag_time_max_ms: int = 30_000
    #: ``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``, ``replica.fetch.max.bytes``
    #: (per partition) and ``replica.fetch.response.max.bytes``: the followers' Fetch requests.
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1_048_576
    replica_fetch_response_max_bytes: int = 10_485_760
    #: ``broker.session.timeout.ms``: a broker whose heartbeats stop this long is fenced.
    broker_session_timeout_ms: int = 9000
    #: ``broker.heartbeat.interval.ms``
    broker_heartbeat_interval_ms: int = 2000
    #: ``controller.quorum.election.timeout.ms``, ``controller.quorum.fetch.timeout.ms``,
    #: ``controller.quorum.request.timeout.ms``, ``controller.quorum.election.backoff.max.ms``.
    quorum_election_timeout_ms: int = 1000
    quorum_fetch_timeout_ms: int = 2000
    quorum_request_timeout_ms: int = 2000
    quorum_election_backoff_max_ms: int = 1000
    #: ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB).
    metadata_snapshot_bytes: int = 20 * 1024 * 1024
    #: ``auto.leader.rebalance.enable`` and ``leader.imbalance.check.interval.seconds`` (in ms here).
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    #: ``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``: the node's links to other nodes.
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    #: ``controlled.shutdown.enable``, and how long a broker waits for the controller to let it go
    #: (kafka_wire's bound on Kafka's wait, which has none but the process manager's patience).
    controlled_shutdown_enable: bool = True
    controlled_shutdown_timeout_ms: int = 30_000
    #: The cluster this node belongs to (KRaft mode), or None: a node that is a cluster of its own
    #: (one voter, no controller listener: :func:`standalone` makes its settings).
    cluster: ClusterSettings | None = None

    def __post_init__(self) -> None:
        if self.authorizer_class_name not in ("", STANDARD_AUTHORIZER):
            raise BrokerConfigError("authorizer.class.name", f"only {STANDARD_AUTHORIZER} is served")
        assignors = [a.strip() for a in self.group_consumer_assignors.split(",") if a.strip()]
        if not assignors or any(a not in CONSUMER_ASSIGNORS for a in assignors):
            raise BrokerConfigError(
                PROPERTY_OF["group_consumer_assignors"], f"known assignors: {', '.join(CONSUMER_ASSIGNORS)}"
            )
        if self.group_consumer_migration_policy not in MIGRATION_POLICIES:
            raise BrokerConfigError(
                PROPERTY_OF["group_consumer_migration_policy"], f"one of {', '.join(MIGRATION_POLICIES)}"
            )
        for name in (
            "num_partitions",
            "offsets_topic_num_partitions",
            "default_replication_factor",
            "group_max_size",
            "group_consumer_session_timeout_ms",
            "group_consumer_min_session_timeout_ms",
            "group_consumer_max_session_timeout_ms",
            "group_consumer_heartbeat_interval_ms",
            "group_consumer_min_heartbeat_interval_ms",
            "group_consumer_max_heartbeat_interval_ms",
            "group_consumer_max_size",
            "group_share_session_timeout_ms",
            "group_share_heartbeat_interval_ms",
            "group_share_max_size",
            "group_share_record_lock_duration_ms",
            "group_share_delivery_count_limit",
            "group_share_partition_max_record_locks",
            "max_share_session_cache_size",
            "share_coordinator_state_topic_num_partitions",
            "share_coordinator_state_topic_min_isr",
            "offsets_retention_ms",
            "offsets_commit_timeout_ms",
            "request_receive_timeout_ms",
            "queued_max_requests",
            "quota_window_size_seconds",
            "controller_quota_window_num",
            "controller_quota_window_size_seconds",
        ):
            if getattr(self, name) < 1:
                raise BrokerConfigError(PROPERTY_OF[name], "must be at least 1")
        for name in (
            "replica_lag_time_max_ms",
            "replica_fetch_max_bytes",
            "replica_fetch_response_max_bytes",
            "broker_session_timeout_ms",
            "broker_heartbeat_interval_ms",
            "quorum_election_timeout_ms",
            "quorum_fetch_timeout_ms",
            "quorum_request_timeout_ms",
            "metadata_snapshot_bytes",
            "leader_imbalance_check_interval_ms",
            "delegation_token_max_lifetime_ms",
            "delegation_token_expiry_time_ms",
            "delegation_token_expiry_check_interval_ms",
        ):
            if getattr(self, name) < 1:
                raise BrokerConfigError(PROPERTY_OF[name], "must be at least 1")
        for name in (
            "replica_fetch_wait_max_ms",
            "replica_fetch_min_bytes",
            "quorum_election_backoff_max_ms",
        ):
            if getattr(self, name) < 0:
                raise BrokerConfigError(PROPERTY_OF[name], "must not be negative")
        if self.quota_window_num < 2:  # Kafka's atLeast(1); a rate needs two windows here
            raise BrokerConfigError("quota.window.num", "must be at least 2")
        problem = group_settings_problem(self)
        if problem is not None:
            raise BrokerConfigError(*problem)
        if not 0 <= self.reconnect_backoff_ms <= self.reconnect_backoff_max_ms:
            raise BrokerConfigError("reconnect.backoff.ms", "must be between 0 and reconnect.backoff.max.ms")
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise BrokerConfigError(
                "broker.heartbeat.interval.ms", "must be less than broker.session.timeout.ms"
            )
        for name in (
            "max_records_per_user_op",
            "max_work_bytes_per_call",
            "transaction_state_log_num_partitions",
            "transaction_state_log_min_isr",
            "transaction_max_timeout_ms",
            "transactional_id_expiration_ms",
            "transaction_abort_timed_out_interval_ms",
            "transaction_remove_expired_interval_ms",
        ):
            if getattr(self, name) < 1:
                raise BrokerConfigError(PROPERTY_OF[name], "must be at least 1")
        if not 1 <= self.transaction_state_log_replication_factor <= 32767:
            raise BrokerConfigError(
                PROPERTY_OF["transaction_state_log_replication_factor"], "must be between 1 and 32767"
            )
        if not 1 <= self.share_coordinator_state_topic_replication_factor <= 32767:
            raise BrokerConfigError(
                PROPERTY_OF["share_coordinator_state_topic_replication_factor"], "must be between 1 and 32767"
            )
        if self.share_coordinator_state_topic_segment_bytes < MIN_SEGMENT_BYTES:
            raise BrokerConfigError(
                PROPERTY_OF["share_coordinator_state_topic_segment_bytes"],
                f"must be at least {MIN_SEGMENT_BYTES}",
            )
        if self.transaction_state_log_segment_bytes < MIN_SEGMENT_BYTES:
            raise BrokerConfigError(
                PROPERTY_OF["transaction_state_log_segment_bytes"], f"must be at least {MIN_SEGMENT_BYTES}"
            )
        if not 0 <= self.bootstrap_transaction_version <= 2:
            raise BrokerConfigError(PROPERTY_OF["bootstrap_transaction_version"], "must be 0, 1 or 2")
        if self.node_id < 0:
            raise BrokerConfigError("node.id", "must not be negative")
        if self.offsets_topic_segment_bytes < MIN_SEGMENT_BYTES:  # the topic's own segment.bytes minimum
            raise BrokerConfigError(
                PROPERTY_OF["offsets_topic_segment_bytes"], f"must be at least {MIN_SEGMENT_BYTES}"
            )
        if not 1 <= self.offsets_topic_replication_factor <= 32767:
            raise BrokerConfigError(
                PROPERTY_OF["offsets_topic_replication_factor"],
                f"{self.offsets_topic_replication_factor} is not between 1 and 32767",
            )
        if not 0 <= self.offsets_topic_compression_codec <= 4:
            raise BrokerConfigError(
                PROPERTY_OF["offsets_topic_compression_codec"], "must be 0 (none) to 4 (zstd)"
            )
        for name in (
            "fetch_session_cache_slots",
            "fetch_session_eviction_ms",
            "max_connections",
            "max_connections_per_ip",
            "max_connection_creation_rate",
            "failed_authentication_delay_ms",
            "connections_max_reauth_ms",
        ):
            if getattr(self, name) < 0:
                raise BrokerConfigError(PROPERTY_OF[name], "must not be negative")
        for host, limit in self.max_connections_per_ip_overrides.items():
            if not host or limit < 0:
                raise BrokerConfigError("max.connections.per.ip.overrides", f"bad override {host}:{limit}")
        if not 0 <= self.port <= 65535:
            raise BrokerConfigError("advertised.listeners", f"port {self.port} is not a TCP port")
        for mechanism in self.sasl_users:
            if mechanism not in SASL_MECHANISMS:
                raise BrokerConfigError("sasl.enabled.mechanisms", f"unknown mechanism {mechanism!r}")
        for key in self.topic_default_properties:
            if key not in TOPIC_CONFIG_OF:
                raise BrokerConfigError(key, "not a broker property that sets a topic default")
        defaults = self.resolved_topic_defaults()
        try:
            LogConfig.from_properties({topic: d.value for topic, d in defaults.items()})
        except ConfigError as exc:
            source = defaults[exc.key].source if exc.key in defaults else exc.key
            raise BrokerConfigError(source, exc.reason) from None

    def resolved_topic_defaults(self) -> dict[str, TopicDefault]:
        """Per topic config set at broker level: its value and the broker property it came from."""
        try:
            return topic_defaults(self.topic_default_properties, CONFIG_KEYS)
        except ConfigError as exc:
            raise BrokerConfigError(exc.key, exc.reason) from None

    @property
    def authorizer_enabled(self) -> bool:
        return self.authorizer_class_name == STANDARD_AUTHORIZER

    @property
    def super_user_set(self) -> frozenset[str]:
        """``super.users`` as a set of principals."""
        return frozenset(u.strip() for u in self.super_users.split(";") if u.strip())

    @property
    def min_insync_replicas(self) -> int:
        """``min.insync.replicas`` at broker level (a topic default, Kafka: 1)."""
        return int(self.topic_defaults.get("min.insync.replicas", "1"))

    @property
    def unclean_leader_election_enable(self) -> bool:
        """``unclean.leader.election.enable`` at broker level (a topic default, Kafka: false)."""
        return self.topic_defaults.get("unclean.leader.election.enable", "false").lower() == "true"

    @property
    def topic_defaults(self) -> dict[str, str]:
        """Topic config defaults set at broker level, by topic config name (``{"retention.ms": …}``)."""
        return {topic: d.value for topic, d in self.resolved_topic_defaults().items()}

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], base: BrokerConfig | None = None) -> BrokerConfig:
        """Apply the Kafka-named properties the engine acts on (``num.partitions=3``,
        ``log.retention.hours=24``) to ``base``.

        Other keys are ignored here (see the module docstring); an invalid value raises
        :class:`BrokerConfigError` naming its key.
        """
        base = base or cls()
        changes: dict[str, object] = {}
        defaults = dict(base.topic_default_properties)
        users = {mechanism: dict(u) for mechanism, u in base.sasl_users.items()}
        for key, raw in properties.items():
            value = raw.strip()
            if key == OLD_TOKEN_SECRET_KEY and PROPERTY_OF["delegation_token_secret_key"] in properties:
                continue  # the new name wins, as in Kafka 3
            if key in _FIELD_OF:
                name = _FIELD_OF[key]
                parsed = _parse(key, value, _KINDS[name])
                changes[name] = (
                    parsed * _SCALE[name] if name in _SCALE and isinstance(parsed, int) else parsed
                )
            elif key in TOPIC_CONFIG_OF:
                defaults[key] = value
            elif key.startswith(SASL_USERS_PREFIX):
                # sasl.users.<MECHANISM>.<user>=<password>
                mechanism, _, user = key.removeprefix(SASL_USERS_PREFIX).partition(".")
                users.setdefault(mechanism, {})[user] = value
        changes["topic_default_properties"] = defaults
        changes["sasl_users"] = users
        return replace(base, **changes)  # type: ignore[arg-type]  # values parsed per field kind


#: The authorizer class kafka_wire implements (Kafka's KRaft ``StandardAuthorizer``).
STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SASL_MECHANISMS: Final = PASSWORD_MECHANISMS
#: ``sasl.users.<MECHANISM>.<user>=<password>``: kafka_wire's own way to configure SASL users.
SASL_USERS_PREFIX: Final = "sasl.users."

#: ``delegation.token.secret.key``'s name before Kafka 2.0 (removed in Kafka 4), still read.
OLD_TOKEN_SECRET_KEY: Final = "delegation.token.master.key"
_FIELD_OF: Final = {
    **{prop: name for name, prop in PROPERTY_OF.items()},
    OLD_TOKEN_SECRET_KEY: "delegation_token_secret_key",
}
#: Fields whose property is in another unit: the property's value times this.
_SCALE: Final = {"offsets_retention_ms": 60_000, "leader_imbalance_check_interval_ms": 1000}
_KINDS: Final = {f.name: f.type for f in fields(BrokerConfig)}


def acts_on(key: str) -> bool:
    """Whether :meth:`BrokerConfig.from_properties` reads the property ``key``."""
    return key in _FIELD_OF or key in TOPIC_CONFIG_OF or key.startswith(SASL_USERS_PREFIX)


def _parse(key: str, value: str, kind: object) -> object:
    text = str(kind)
    try:
        if text == "bool":
            if value.lower() not in ("true", "false"):
                raise ValueError(value)
            return value.lower() == "true"
        if text == "int":
            return int(value)
        if text == "str | None":
            return value or None
        if text == "Mapping[str, int]":  # host:count,host:count (hosts may be IPv6: split at the last colon)
            pairs = [item.strip().rpartition(":") for item in value.split(",") if item.strip()]
            if any(not sep for _, sep, _ in pairs):
                raise ValueError(value)
            return {host.strip(): int(count) for host, _, count in pairs}
        return value
    except ValueError:
        raise BrokerConfigError(key, f"invalid value {value!r}") from None


def standalone(config: BrokerConfig) -> BrokerConfig:
    """``config`` as a node that is a whole cluster by itself (what ``kafka-wire serve`` without
    ``controller.quorum.voters`` runs): broker and controller, the only voter of its quorum, its
    one listener the broker's (``host:port``, named PLAINTEXT). The controller has no listener of
    its own: the node's broker side reaches it in-process, and a lone voter elects itself without
    asking anyone (what Kafka calls a standalone controller, KIP-853's ``--standalone``).
    ``__consumer_offsets`` gets one replica, the only one there can be (Kafka's shipped
    ``server.properties`` sets ``offsets.topic.replication.factor=1`` for the same reason)."""
    if config.cluster is not None:
        return config
    listener = Endpoint(STANDALONE_LISTENER, config.host, config.port)
    settings = ClusterSettings(
        roles=frozenset({"broker", "controller"}),
        listeners=(listener,),
        advertised_listeners=(listener,),
        controller_listener_names=(STANDALONE_CONTROLLER_LISTENER,),
        inter_broker_listener=STANDALONE_LISTENER,
        voters=(Voter(config.node_id, "", 0),),
    )
    return replace(
        config,
        cluster=settings,
        offsets_topic_replication_factor=1,
        transaction_state_log_replication_factor=1,
        transaction_state_log_min_isr=1,
        share_coordinator_state_topic_replication_factor=1,
        share_coordinator_state_topic_min_isr=1,
    )
