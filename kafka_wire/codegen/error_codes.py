"""Every Kafka protocol error code: number, upstream name, retriable flag, our description.

Facts from Apache Kafka's Errors enum (apache/kafka trunk d79bd502ec7fa49335afa422f442af80ed0ab8f6,
2026-08-23); the descriptions are our own words.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class ErrorCodeFact(NamedTuple):
    code: int
    name: str
    retriable: bool
    description: str


ERROR_CODES: Final[tuple[ErrorCodeFact, ...]] = (
    ErrorCodeFact(
        -1,
        "UNKNOWN_SERVER_ERROR",
        False,
        "The broker failed in a way it could not classify, so it returned this catch-all code.",
    ),
    ErrorCodeFact(0, "NONE", False, "The operation succeeded and there is nothing to report."),
    ErrorCodeFact(
        1,
        "OFFSET_OUT_OF_RANGE",
        False,
        "The offset asked for lies outside the span of offsets the partition currently holds.",
    ),
    ErrorCodeFact(
        2,
        "CORRUPT_MESSAGE",
        True,
        "A record batch was found damaged or malformed, for example a bad checksum, an oversized batch or a missing key on a compacted topic.",
    ),
    ErrorCodeFact(
        3,
        "UNKNOWN_TOPIC_OR_PARTITION",
        True,
        "The broker has no knowledge of the named topic or partition, often because client metadata is out of date.",
    ),
    ErrorCodeFact(
        4, "INVALID_FETCH_SIZE", False, "The fetch request carried a size limit the broker will not accept."
    ),
    ErrorCodeFact(
        5,
        "LEADER_NOT_AVAILABLE",
        True,
        "The partition currently has no leader, typically because a leader election is under way.",
    ),
    ErrorCodeFact(
        6,
        "NOT_LEADER_OR_FOLLOWER",
        True,
        "The receiving broker is not the leader (or, for replica-level requests, not a replica) of the partition.",
    ),
    ErrorCodeFact(
        7,
        "REQUEST_TIMED_OUT",
        True,
        "The broker gave up on the request because it did not complete within the allowed time.",
    ),
    ErrorCodeFact(
        8,
        "BROKER_NOT_AVAILABLE",
        False,
        "The broker the request refers to cannot be reached or is not serving.",
    ),
    ErrorCodeFact(
        9,
        "REPLICA_NOT_AVAILABLE",
        True,
        "A replica needed for the topic-partition is not currently available on the broker.",
    ),
    ErrorCodeFact(
        10,
        "MESSAGE_TOO_LARGE",
        False,
        "A record or batch in the request is bigger than the broker's configured maximum.",
    ),
    ErrorCodeFact(
        11,
        "STALE_CONTROLLER_EPOCH",
        False,
        "The request carried an old controller epoch because controllership has since moved to another node.",
    ),
    ErrorCodeFact(
        12,
        "OFFSET_METADATA_TOO_LARGE",
        False,
        "The metadata string attached to an offset commit exceeds the permitted length.",
    ),
    ErrorCodeFact(
        13, "NETWORK_EXCEPTION", True, "The connection dropped before the broker sent back a response."
    ),
    ErrorCodeFact(
        14,
        "COORDINATOR_LOAD_IN_PROGRESS",
        True,
        "The coordinator is still loading its state and cannot serve requests yet.",
    ),
    ErrorCodeFact(
        15,
        "COORDINATOR_NOT_AVAILABLE",
        True,
        "No coordinator is currently available for the group or transaction.",
    ),
    ErrorCodeFact(
        16,
        "NOT_COORDINATOR",
        True,
        "The broker that received the request is not the coordinator for this group or transaction.",
    ),
    ErrorCodeFact(
        17,
        "INVALID_TOPIC_EXCEPTION",
        False,
        "The topic name is illegal or the operation is not allowed on that topic.",
    ),
    ErrorCodeFact(
        18,
        "RECORD_LIST_TOO_LARGE",
        False,
        "A produce request contained a batch that is larger than the segment size allows.",
    ),
    ErrorCodeFact(
        19, "NOT_ENOUGH_REPLICAS", True, "Too few in-sync replicas exist, so the broker refused the write."
    ),
    ErrorCodeFact(
        20,
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        True,
        "The write reached the log, but the in-sync replica set fell below the required size afterwards.",
    ),
    ErrorCodeFact(
        21,
        "INVALID_REQUIRED_ACKS",
        False,
        "The acks value in the produce request is not one the broker supports.",
    ),
    ErrorCodeFact(
        22,
        "ILLEGAL_GENERATION",
        False,
        "The group generation supplied by the member does not match the current one.",
    ),
    ErrorCodeFact(
        23,
        "INCONSISTENT_GROUP_PROTOCOL",
        False,
        "The member's protocol type or supported protocols are incompatible with the rest of the group.",
    ),
    ErrorCodeFact(24, "INVALID_GROUP_ID", False, "The group id is missing, empty or otherwise unusable."),
    ErrorCodeFact(
        25,
        "UNKNOWN_MEMBER_ID",
        False,
        "The coordinator does not recognise the member id sent in the request.",
    ),
    ErrorCodeFact(
        26,
        "INVALID_SESSION_TIMEOUT",
        False,
        "The session timeout falls outside the range the broker allows for group members.",
    ),
    ErrorCodeFact(
        27, "REBALANCE_IN_PROGRESS", False, "The group is being rebalanced, so the member has to rejoin."
    ),
    ErrorCodeFact(
        28,
        "INVALID_COMMIT_OFFSET_SIZE",
        False,
        "The offset commit was refused because its metadata would be too large for the cache.",
    ),
    ErrorCodeFact(
        29,
        "TOPIC_AUTHORIZATION_FAILED",
        False,
        "The principal is not allowed to access the topic for this operation.",
    ),
    ErrorCodeFact(
        30,
        "GROUP_AUTHORIZATION_FAILED",
        False,
        "The principal is not allowed to access the consumer group for this operation.",
    ),
    ErrorCodeFact(
        31,
        "CLUSTER_AUTHORIZATION_FAILED",
        False,
        "The principal lacks the cluster-level permission this operation needs.",
    ),
    ErrorCodeFact(
        32,
        "INVALID_TIMESTAMP",
        False,
        "A record timestamp is outside the range the broker is willing to accept.",
    ),
    ErrorCodeFact(
        33,
        "UNSUPPORTED_SASL_MECHANISM",
        False,
        "The broker does not offer the SASL mechanism the client asked for.",
    ),
    ErrorCodeFact(
        34,
        "ILLEGAL_SASL_STATE",
        False,
        "A SASL message arrived at a point in the handshake where it is not valid.",
    ),
    ErrorCodeFact(
        35, "UNSUPPORTED_VERSION", False, "The broker does not support the requested API or version of it."
    ),
    ErrorCodeFact(
        36,
        "TOPIC_ALREADY_EXISTS",
        False,
        "The create request names a topic that is already present in the cluster.",
    ),
    ErrorCodeFact(37, "INVALID_PARTITIONS", False, "The requested partition count is not acceptable."),
    ErrorCodeFact(
        38, "INVALID_REPLICATION_FACTOR", False, "The requested replication factor is not acceptable."
    ),
    ErrorCodeFact(
        39, "INVALID_REPLICA_ASSIGNMENT", False, "The supplied manual replica assignment is not acceptable."
    ),
    ErrorCodeFact(
        40, "INVALID_CONFIG", False, "One or more configuration values in the request are invalid."
    ),
    ErrorCodeFact(
        41, "NOT_CONTROLLER", True, "The broker that received the request is not the active controller."
    ),
    ErrorCodeFact(
        42,
        "INVALID_REQUEST",
        False,
        "The request is malformed or carries inconsistent fields; broker logs may say more.",
    ),
    ErrorCodeFact(
        43,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        False,
        "The request needs a feature that the broker's on-disk record format version lacks.",
    ),
    ErrorCodeFact(
        44, "POLICY_VIOLATION", False, "The request was rejected by a policy configured on the broker."
    ),
    ErrorCodeFact(
        45,
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        False,
        "The broker got a producer sequence number other than the one it expected next.",
    ),
    ErrorCodeFact(
        46,
        "DUPLICATE_SEQUENCE_NUMBER",
        False,
        "The broker has already accepted a batch with this producer sequence number.",
    ),
    ErrorCodeFact(
        47,
        "INVALID_PRODUCER_EPOCH",
        False,
        "The producer's epoch is older than the one the broker knows about.",
    ),
    ErrorCodeFact(
        48,
        "INVALID_TXN_STATE",
        False,
        "The requested transactional operation is not valid in the transaction's current state.",
    ),
    ErrorCodeFact(
        49,
        "INVALID_PRODUCER_ID_MAPPING",
        False,
        "The producer id used is not the one currently mapped to the transactional id.",
    ),
    ErrorCodeFact(
        50,
        "INVALID_TRANSACTION_TIMEOUT",
        False,
        "The requested transaction timeout exceeds the broker's configured maximum.",
    ),
    ErrorCodeFact(
        51, "CONCURRENT_TRANSACTIONS", True, "Another operation on the same transaction is still in progress."
    ),
    ErrorCodeFact(
        52,
        "TRANSACTION_COORDINATOR_FENCED",
        False,
        "The transaction coordinator that sent the marker has been replaced by a newer one.",
    ),
    ErrorCodeFact(
        53,
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        False,
        "The principal is not allowed to use the transactional id.",
    ),
    ErrorCodeFact(
        54,
        "SECURITY_DISABLED",
        False,
        "Security features needed for this request are turned off on the broker.",
    ),
    ErrorCodeFact(
        55,
        "OPERATION_NOT_ATTEMPTED",
        False,
        "The broker skipped this item, usually because another part of the same batched request failed.",
    ),
    ErrorCodeFact(
        56,
        "KAFKA_STORAGE_ERROR",
        True,
        "The broker hit a disk or storage problem while reading or writing the log.",
    ),
    ErrorCodeFact(
        57, "LOG_DIR_NOT_FOUND", False, "The log directory named in the request does not exist on the broker."
    ),
    ErrorCodeFact(58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication did not succeed."),
    ErrorCodeFact(
        59,
        "UNKNOWN_PRODUCER_ID",
        False,
        "The broker has no state for this producer id, for example because its records were removed by retention.",
    ),
    ErrorCodeFact(60, "REASSIGNMENT_IN_PROGRESS", False, "The partition is already being reassigned."),
    ErrorCodeFact(
        61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation tokens are not enabled on this cluster."
    ),
    ErrorCodeFact(
        62, "DELEGATION_TOKEN_NOT_FOUND", False, "No delegation token matching the request could be found."
    ),
    ErrorCodeFact(
        63,
        "DELEGATION_TOKEN_OWNER_MISMATCH",
        False,
        "The principal asking for the operation is not the owner or renewer of the delegation token.",
    ),
    ErrorCodeFact(
        64,
        "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        False,
        "Delegation token requests cannot be made over this kind of connection or authentication.",
    ),
    ErrorCodeFact(
        65,
        "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
        False,
        "The principal is not permitted to perform the delegation token operation.",
    ),
    ErrorCodeFact(66, "DELEGATION_TOKEN_EXPIRED", False, "The delegation token is past its expiry time."),
    ErrorCodeFact(
        67,
        "INVALID_PRINCIPAL_TYPE",
        False,
        "Only certain principal kinds are accepted, and the one given is not among them.",
    ),
    ErrorCodeFact(
        68,
        "NON_EMPTY_GROUP",
        False,
        "The operation needs the group to have no members, but it still has some.",
    ),
    ErrorCodeFact(69, "GROUP_ID_NOT_FOUND", False, "The broker does not know of a group with this id."),
    ErrorCodeFact(
        70, "FETCH_SESSION_ID_NOT_FOUND", True, "The broker has no incremental fetch session with this id."
    ),
    ErrorCodeFact(
        71,
        "INVALID_FETCH_SESSION_EPOCH",
        True,
        "The epoch sent for the incremental fetch session is not the expected one.",
    ),
    ErrorCodeFact(
        72, "LISTENER_NOT_FOUND", True, "The leader has no endpoint for the listener the request arrived on."
    ),
    ErrorCodeFact(73, "TOPIC_DELETION_DISABLED", False, "Topic deletion has been turned off on the cluster."),
    ErrorCodeFact(
        74,
        "FENCED_LEADER_EPOCH",
        True,
        "The requester's view of the partition leader epoch lags behind what the broker has.",
    ),
    ErrorCodeFact(
        75,
        "UNKNOWN_LEADER_EPOCH",
        True,
        "The requester claims a partition leader epoch the broker has not reached yet.",
    ),
    ErrorCodeFact(
        76,
        "UNSUPPORTED_COMPRESSION_TYPE",
        False,
        "The topic's compression codec is one that the requesting client cannot handle.",
    ),
    ErrorCodeFact(77, "STALE_BROKER_EPOCH", False, "The broker epoch in the request is stale."),
    ErrorCodeFact(
        78,
        "OFFSET_NOT_AVAILABLE",
        True,
        "The leader cannot serve the offset yet because its high watermark has not advanced far enough.",
    ),
    ErrorCodeFact(
        79,
        "MEMBER_ID_REQUIRED",
        False,
        "The group member must supply a member id before it can join the group.",
    ),
    ErrorCodeFact(
        80,
        "PREFERRED_LEADER_NOT_AVAILABLE",
        True,
        "Electing the preferred leader failed since that replica is currently unavailable.",
    ),
    ErrorCodeFact(
        81, "GROUP_MAX_SIZE_REACHED", False, "The group already holds its maximum allowed number of members."
    ),
    ErrorCodeFact(
        82,
        "FENCED_INSTANCE_ID",
        False,
        "Another member with the same static group instance id has superseded this one.",
    ),
    ErrorCodeFact(
        83,
        "ELIGIBLE_LEADERS_NOT_AVAILABLE",
        True,
        "No replica that is eligible to lead is currently available for the election.",
    ),
    ErrorCodeFact(
        84,
        "ELECTION_NOT_NEEDED",
        True,
        "The partition already has its preferred leader, so no election took place.",
    ),
    ErrorCodeFact(
        85,
        "NO_REASSIGNMENT_IN_PROGRESS",
        False,
        "A reassignment was cancelled but none was running for the partition.",
    ),
    ErrorCodeFact(
        86,
        "GROUP_SUBSCRIBED_TO_TOPIC",
        False,
        "The offset deletion was refused because the group still subscribes to the topic.",
    ),
    ErrorCodeFact(87, "INVALID_RECORD", False, "A record was rejected for failing broker-side validation."),
    ErrorCodeFact(
        88,
        "UNSTABLE_OFFSET_COMMIT",
        True,
        "Offsets for the partition cannot be read yet because a transactional commit on them is still pending.",
    ),
    ErrorCodeFact(
        89,
        "THROTTLING_QUOTA_EXCEEDED",
        True,
        "The request was refused because it would exceed the principal's throttling quota.",
    ),
    ErrorCodeFact(
        90,
        "PRODUCER_FENCED",
        False,
        "This producer was shut out because another producer registered later under the same transactional id.",
    ),
    ErrorCodeFact(
        91,
        "RESOURCE_NOT_FOUND",
        False,
        "Something the request refers to could not be located on the cluster.",
    ),
    ErrorCodeFact(92, "DUPLICATE_RESOURCE", False, "The request named the same resource more than once."),
    ErrorCodeFact(
        93, "UNACCEPTABLE_CREDENTIAL", False, "The proposed credential does not meet the acceptance criteria."
    ),
    ErrorCodeFact(
        94,
        "INCONSISTENT_VOTER_SET",
        False,
        "A voter-only request came from or reached a node outside the expected voter set.",
    ),
    ErrorCodeFact(95, "INVALID_UPDATE_VERSION", False, "The supplied feature update version is invalid."),
    ErrorCodeFact(
        96,
        "FEATURE_UPDATE_FAILED",
        False,
        "Finalized features could not be updated because of an unexpected broker error.",
    ),
    ErrorCodeFact(
        97,
        "PRINCIPAL_DESERIALIZATION_FAILURE",
        False,
        "The forwarded request's principal could not be deserialized, pointing to a security misconfiguration.",
    ),
    ErrorCodeFact(98, "SNAPSHOT_NOT_FOUND", False, "The requested snapshot does not exist."),
    ErrorCodeFact(
        99,
        "POSITION_OUT_OF_RANGE",
        False,
        "The snapshot position asked for is negative or beyond the snapshot's end.",
    ),
    ErrorCodeFact(100, "UNKNOWN_TOPIC_ID", True, "The broker does not hold any topic with this topic id."),
    ErrorCodeFact(
        101,
        "DUPLICATE_BROKER_REGISTRATION",
        False,
        "Another broker has already registered with this broker id.",
    ),
    ErrorCodeFact(102, "BROKER_ID_NOT_REGISTERED", False, "No broker with the given id is registered."),
    ErrorCodeFact(
        103,
        "INCONSISTENT_TOPIC_ID",
        True,
        "The topic id in the request differs from the one stored in the log.",
    ),
    ErrorCodeFact(
        104,
        "INCONSISTENT_CLUSTER_ID",
        False,
        "The request was meant for a different cluster than the one whose broker received it.",
    ),
    ErrorCodeFact(105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactional id is unknown to the broker."),
    ErrorCodeFact(
        106,
        "FETCH_SESSION_TOPIC_ID_ERROR",
        True,
        "The fetch session saw topic ids used in an inconsistent way.",
    ),
    ErrorCodeFact(
        107,
        "INELIGIBLE_REPLICA",
        False,
        "The proposed in-sync replica set includes at least one replica that is not eligible.",
    ),
    ErrorCodeFact(
        108,
        "NEW_LEADER_ELECTED",
        False,
        "The partition state change was applied, but leadership moved to a different broker meanwhile.",
    ),
    ErrorCodeFact(
        109,
        "OFFSET_MOVED_TO_TIERED_STORAGE",
        False,
        "The requested offset is no longer in local storage because it now resides in tiered storage.",
    ),
    ErrorCodeFact(
        110,
        "FENCED_MEMBER_EPOCH",
        False,
        "The coordinator fenced the member's epoch, so the member must give up its partitions and rejoin.",
    ),
    ErrorCodeFact(
        111,
        "UNRELEASED_INSTANCE_ID",
        False,
        "Another group member still holds this static instance id and has to depart before it can be reused.",
    ),
    ErrorCodeFact(
        112,
        "UNSUPPORTED_ASSIGNOR",
        False,
        "The group does not support the named assignor or its version range.",
    ),
    ErrorCodeFact(
        113,
        "STALE_MEMBER_EPOCH",
        False,
        "The member's epoch is out of date and it must retry once its heartbeat returns the current epoch.",
    ),
    ErrorCodeFact(
        114,
        "MISMATCHED_ENDPOINT_TYPE",
        False,
        "The request reached a listener whose endpoint type does not match the one requested.",
    ),
    ErrorCodeFact(
        115,
        "UNSUPPORTED_ENDPOINT_TYPE",
        False,
        "Endpoints of the requested kind are not offered by this broker at present.",
    ),
    ErrorCodeFact(116, "UNKNOWN_CONTROLLER_ID", False, "The controller id in the request is unknown."),
    ErrorCodeFact(
        117,
        "UNKNOWN_SUBSCRIPTION_ID",
        False,
        "The telemetry subscription id sent by the client is invalid or out of date.",
    ),
    ErrorCodeFact(
        118, "TELEMETRY_TOO_LARGE", False, "The pushed telemetry payload is bigger than the broker permits."
    ),
    ErrorCodeFact(
        119,
        "INVALID_REGISTRATION",
        False,
        "The broker's registration was turned down by the controller as not valid.",
    ),
    ErrorCodeFact(
        120,
        "TRANSACTION_ABORTABLE",
        False,
        "The transaction ran into an error, but the client can abort it and keep using the transactional id.",
    ),
    ErrorCodeFact(
        121,
        "INVALID_RECORD_STATE",
        False,
        "Delivery could not be acknowledged because the record is in an invalid state.",
    ),
    ErrorCodeFact(
        122, "SHARE_SESSION_NOT_FOUND", True, "The broker has no share session matching the request."
    ),
    ErrorCodeFact(
        123,
        "INVALID_SHARE_SESSION_EPOCH",
        True,
        "The epoch sent for the share session is not the expected one.",
    ),
    ErrorCodeFact(
        124,
        "FENCED_STATE_EPOCH",
        False,
        "The request's state epoch did not match the coordinator's, so it was rejected.",
    ),
    ErrorCodeFact(
        125,
        "INVALID_VOTER_KEY",
        False,
        "The voter key does not match the key of the replica receiving the request.",
    ),
    ErrorCodeFact(
        126,
        "DUPLICATE_VOTER",
        False,
        "The replica being added as a voter is already present in the voter set.",
    ),
    ErrorCodeFact(127, "VOTER_NOT_FOUND", False, "The voter does not belong to the voter set."),
    ErrorCodeFact(
        128, "INVALID_REGULAR_EXPRESSION", False, "The supplied regular expression cannot be parsed."
    ),
    ErrorCodeFact(
        129,
        "REBOOTSTRAP_REQUIRED",
        False,
        "The client's metadata has gone stale and it should bootstrap again to obtain fresh metadata.",
    ),
    ErrorCodeFact(
        130, "STREAMS_INVALID_TOPOLOGY", False, "The streams topology supplied in the request is not valid."
    ),
    ErrorCodeFact(
        131,
        "STREAMS_INVALID_TOPOLOGY_EPOCH",
        False,
        "The streams topology epoch supplied in the request is not valid.",
    ),
    ErrorCodeFact(
        132,
        "STREAMS_TOPOLOGY_FENCED",
        False,
        "The streams topology epoch supplied in the request is older than the current one.",
    ),
    ErrorCodeFact(
        133,
        "SHARE_SESSION_LIMIT_REACHED",
        True,
        "The broker already has as many share sessions as it allows.",
    ),
    ErrorCodeFact(
        134,
        "GROUP_DELETION_FAILED",
        False,
        "Deleting groups did not finish; the per-group results carry the reason.",
    ),
    ErrorCodeFact(
        135,
        "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED",
        False,
        "Applying the streams topology description update failed on the broker; the accompanying message explains it.",
    ),
    ErrorCodeFact(
        136, "CONTROLLER_ID_NOT_REGISTERED", False, "No controller with the given id is registered."
    ),
)
