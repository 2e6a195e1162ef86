"""SCRAM credentials as the metadata log records them (Kafka's ``ScramImage``): one per user and
mechanism, from UserScramCredentialRecord, removed by RemoveUserScramCredentialRecord.

Every node keeps this section of its image. A broker authenticates SCRAM clients against it
(:meth:`ScramImage.credential`) and answers DescribeUserScramCredentials from it
(:meth:`ScramImage.describe`); the controller's :class:`.scram_control.ScramControl` owns the
copy it decides AlterUserScramCredentials with. The password never reaches the metadata: a record
holds the salt, the iteration count and the two keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse
    from kafka_wire.protocol.sasl import ScramCredential

#: The records this section applies, by class name (a class loads with its first record).
SCRAM_RECORDS: Final = ("UserScramCredentialRecord", "RemoveUserScramCredentialRecord")

#: Kafka's ``ScramMechanism`` types, as records and the admin APIs carry them (0 is UNKNOWN).
MECHANISM_TYPES: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF_MECHANISM: Final = {name: t for t, name in MECHANISM_TYPES.items()}

#: Kafka's messages for a user described twice, or without a credential.
DESCRIBE_DUPLICATE_USER: Final = (
    "Cannot describe SCRAM credentials for the same user twice in a single request: "
)
DESCRIBE_MISSING_USER: Final = "Attempt to describe a user credential that does not exist: "


def java_hash_order(names: Iterable[str], max_size: int = 0) -> list[str]:
    """``names`` (in insertion order) in the order a Java ``HashMap<String, ?>`` holding them
    iterates: by bucket (``String.hashCode`` spread as ``h ^ h >>> 16``, masked by the table's
    capacity: 16, doubled while more than 3/4 full; ``max_size`` is the most entries the map
    held, if entries were removed), then in insertion order within a bucket. Kafka builds the
    SCRAM answers from such maps, so their results come in this order."""
    unique = list(dict.fromkeys(names))
    capacity = 16
    while max(max_size, len(unique)) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = 0
        encoded = name.encode("utf-16-le", "surrogatepass")
        for i in range(0, len(encoded), 2):
            h = (31 * h + int.from_bytes(encoded[i : i + 2], "little")) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)


@dataclass(frozen=True, slots=True)
class StoredCredential:
    """One user's credential for one mechanism, as its record holds it."""

    salt: bytes
    iterations: int
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)


class ScramImage:
    """The credentials, by user then mechanism type."""

    def __init__(self) -> None:
        self.users: dict[str, dict[int, StoredCredential]] = {}

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.UserScramCredentialRecord):
            self.users.setdefault(record.name, {})[record.mechanism] = StoredCredential(
                salt=record.salt,
                iterations=record.iterations,
                stored_key=record.stored_key,
                server_key=record.server_key,
            )
        elif isinstance(record, messages.RemoveUserScramCredentialRecord):
            mechanisms = self.users.get(record.name)
            if mechanisms is not None:
                mechanisms.pop(record.mechanism, None)
                if not mechanisms:
                    del self.users[record.name]

    def snapshot_records(self) -> list[Message]:
        return [
            messages.UserScramCredentialRecord(
                name=user,
                mechanism=mechanism,
                salt=c.salt,
                stored_key=c.stored_key,
                server_key=c.server_key,
                iterations=c.iterations,
            )
            for user, mechanisms in self.users.items()
            for mechanism, c in sorted(mechanisms.items())
        ]

    def contains(self, user: str, mechanism_type: int) -> bool:
        return mechanism_type in self.users.get(user, {})

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """What a SCRAM server checks ``user`` against (None: no such credential)."""
        stored = self.users.get(user, {}).get(TYPE_OF_MECHANISM.get(mechanism, 0))
        if stored is None:
            return None
        from kafka_wire.protocol.sasl import ScramCredential, ScramMechanism

        try:
            return ScramCredential(
                salt=stored.salt,
                iterations=stored.iterations,
                stored_key=stored.stored_key,
                server_key=stored.server_key,
                mechanism=ScramMechanism(mechanism),
            )
        except ValueError:  # a record with keys of the wrong size: no usable credential
            return None

    def describe(self, request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
        """DescribeUserScramCredentials, as Kafka's broker answers it from its image: every user
        when none is named; a user named twice gets DUPLICATE_RESOURCE (once), a user without
        credentials RESOURCE_NOT_FOUND. The users come in the order of Kafka's HashMap of them.
        """
        # Loaded on the first DescribeUserScramCredentials (a broker loads the messages it is sent).
        from kafka_wire.messages import (
            DescribeUserScramCredentialsResponse,
            DescribeUserScramCredentialsResponseCredentialInfo,
            DescribeUserScramCredentialsResponseResult,
        )

        named: dict[str, bool] = {}
        if not request.users:
            named = dict.fromkeys(self.users, False)
        else:
            for asked in request.users:
                named[asked.name] = asked.name in named
        results = []
        for user in java_hash_order(named):
            twice = named[user]
            if twice:
                results.append(
                    DescribeUserScramCredentialsResponseResult(
                        user=user,
                        error_code=ErrorCode.DUPLICATE_RESOURCE,
                        error_message=DESCRIBE_DUPLICATE_USER + user,
                    )
                )
                continue
            mechanisms = self.users.get(user)
            if not mechanisms:
                results.append(
                    DescribeUserScramCredentialsResponseResult(
                        user=user,
                        error_code=ErrorCode.RESOURCE_NOT_FOUND,
                        error_message=DESCRIBE_MISSING_USER + user,
                    )
                )
                continue
            results.append(
                DescribeUserScramCredentialsResponseResult(
                    user=user,
                    credential_infos=[
                        DescribeUserScramCredentialsResponseCredentialInfo(
                            mechanism=mechanism, iterations=c.iterations
                        )
                        for mechanism, c in sorted(mechanisms.items())
                    ],
                )
            )
        return DescribeUserScramCredentialsResponse(results=results)
