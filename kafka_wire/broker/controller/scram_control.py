"""SCRAM credentials, for the active controller (Kafka's ``ScramControlManager``).

:class:`ScramControl` owns the credentials (a :class:`.scram_image.ScramImage`) and answers
AlterUserScramCredentials, which brokers forward here. Each deletion and upsertion is checked as
Kafka 4.4 checks it; the valid ones become one atomic batch of RemoveUserScramCredentialRecord and
UserScramCredentialRecord (the stored and server keys derived here from the salted password the
client sent). The answer has one result per user, as Kafka's: the users deleted, then those
upserted, then those refused, each group in the order of the Java HashMap Kafka keeps it in
(:func:`.scram_image.java_hash_order`):

- a user named more than once in the request (deleted twice, or deleted or upserted again):
  DUPLICATE_RESOURCE for every entry of that user, and none of them is applied;
- an empty user name: UNACCEPTABLE_CREDENTIAL; a mechanism other than SCRAM-SHA-256 (1) or
  SCRAM-SHA-512 (2): UNSUPPORTED_SASL_MECHANISM;
- an upsertion with fewer than 4096 or more than 16384 iterations: UNACCEPTABLE_CREDENTIAL;
- a deletion of a credential that does not exist: RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.scram_image import MECHANISM_TYPES, ScramImage, java_hash_order
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import AlterUserScramCredentialsRequest

#: Kafka's bounds on a SCRAM credential's iterations (``ScramMechanism.minIterations`` /
#: ``maxIterations``), the same for both mechanisms.
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
_HASH: Final = {1: "sha256", 2: "sha512"}

DUPLICATE_MESSAGE: Final = "A user credential cannot be altered twice in the same request"
EMPTY_USER_MESSAGE: Final = "Username must not be empty"
UNKNOWN_MECHANISM_MESSAGE: Final = "Unknown SCRAM mechanism"
TOO_FEW_MESSAGE: Final = "Too few iterations"
TOO_MANY_MESSAGE: Final = "Too many iterations"
MISSING_MESSAGE: Final = "Attempt to delete a user credential that does not exist"

#: An entry's error: (code, message).
_Error = tuple[int, str]


class ScramControl:
    """The users' SCRAM credentials, as committed and proposed."""

    def __init__(self) -> None:
        self.image = ScramImage()

    def reset(self) -> None:
        self.image = ScramImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    def alter_user_scram_credentials(
        self, version: int, req: AlterUserScramCredentialsRequest, now_ms: int
    ) -> Decision:
        errors: dict[str, _Error] = {}
        deletions: dict[str, messages.AlterUserScramCredentialsRequestScramCredentialDeletion] = {}
        upsertions: dict[str, messages.AlterUserScramCredentialsRequestScramCredentialUpsertion] = {}
        most_deletions = most_upsertions = 0
        for deletion in req.deletions:
            name = deletion.name
            if name in errors:
                continue
            if deletions.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_MESSAGE)
            elif (error := self._check_deletion(name, deletion.mechanism)) is not None:
                errors[name] = error
            else:
                deletions[name] = deletion
                most_deletions = max(most_deletions, len(deletions))
        for upsertion in req.upsertions:
            name = upsertion.name
            if name in errors:
                continue
            if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
                errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_MESSAGE)
            elif (error := _check_upsertion(name, upsertion.mechanism, upsertion.iterations)) is not None:
                errors[name] = error
            else:
                upsertions[name] = upsertion
                most_upsertions = max(most_upsertions, len(upsertions))
        deleted = java_hash_order(deletions, most_deletions)
        upserted = java_hash_order(upsertions, most_upsertions)
        records: list[Message] = [
            messages.RemoveUserScramCredentialRecord(name=name, mechanism=deletions[name].mechanism)
            for name in deleted
        ]
        records += [_credential_record(upsertions[name]) for name in upserted]
        refused = java_hash_order(errors)
        names = deleted + upserted + refused

        def answer() -> Message:
            results = []
            for name in names:
                code, message = errors.get(name, (ErrorCode.NONE, None))
                results.append(
                    messages.AlterUserScramCredentialsResponseResult(
                        user=name, error_code=code, error_message=message
                    )
                )
            return messages.AlterUserScramCredentialsResponse(results=results)

        def fail(code: int) -> Message:
            return failure_answer(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, req, code)

        return ControllerResult(records, answer, fail)

    def _check_deletion(self, name: str, mechanism: int) -> _Error | None:
        error = _check_name_and_mechanism(name, mechanism)
        if error is None and not self.image.contains(name, mechanism):
            return ErrorCode.RESOURCE_NOT_FOUND, MISSING_MESSAGE
        return error


def _check_name_and_mechanism(name: str, mechanism: int) -> _Error | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, EMPTY_USER_MESSAGE
    if mechanism not in MECHANISM_TYPES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_MECHANISM_MESSAGE
    return None


def _check_upsertion(name: str, mechanism: int, iterations: int) -> _Error | None:
    error = _check_name_and_mechanism(name, mechanism)
    if error is not None:
        return error
    if iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_FEW_MESSAGE
    if iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, TOO_MANY_MESSAGE
    return None


def _credential_record(
    upsertion: messages.AlterUserScramCredentialsRequestScramCredentialUpsertion,
) -> messages.UserScramCredentialRecord:
    """The record of an upsertion: RFC 5802's StoredKey and ServerKey of its salted password."""
    import hashlib  # on the first credential, not at start
    import hmac

    digest = _HASH[upsertion.mechanism]
    client_key = hmac.digest(upsertion.salted_password, b"Client Key", digest)
    return messages.UserScramCredentialRecord(
        name=upsertion.name,
        mechanism=upsertion.mechanism,
        salt=upsertion.salt,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=hmac.digest(upsertion.salted_password, b"Server Key", digest),
        iterations=upsertion.iterations,
    )
