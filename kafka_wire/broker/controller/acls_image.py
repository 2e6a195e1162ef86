"""ACLs as the metadata log builds them (Kafka's ``AclsImage``): each
``AccessControlEntryRecord`` adds one binding under its id, each
``RemoveAccessControlEntryRecord`` removes the binding of its id."""

from __future__ import annotations

import uuid
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.security.acls import (
    AclBinding,
    operation,
    pattern_type,
    permission_type,
    resource_type,
)
from kafka_wire.codec.structs import Message

#: The records this section applies, by class name (a class loads with its first record).
ACL_RECORDS: Final = ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord")


def binding_of(record: messages.AccessControlEntryRecord) -> AclBinding:
    return AclBinding(
        resource_type=resource_type(record.resource_type),
        resource_name=record.resource_name,
        pattern_type=pattern_type(record.pattern_type),
        principal=record.principal,
        host=record.host,
        operation=operation(record.operation),
        permission_type=permission_type(record.permission_type),
    )


def record_of(acl_id: uuid.UUID, b: AclBinding) -> messages.AccessControlEntryRecord:
    return messages.AccessControlEntryRecord(
        id=acl_id,
        resource_type=b.resource_type,
        resource_name=b.resource_name,
        pattern_type=b.pattern_type,
        principal=b.principal,
        host=b.host,
        operation=b.operation,
        permission_type=b.permission_type,
    )


class AclsImage:
    """The ACL bindings by id, in the order they were created."""

    def __init__(self) -> None:
        self.acls: dict[uuid.UUID, AclBinding] = {}
        #: Bumped on every change, so that readers may cache what they derive from the bindings.
        self.version = 0

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        if isinstance(record, messages.AccessControlEntryRecord):
            self.acls[record.id] = binding_of(record)
        elif isinstance(record, messages.RemoveAccessControlEntryRecord):
            self.acls.pop(record.id, None)
        else:
            return
        self.version += 1

    def snapshot_records(self) -> list[Message]:
        return [record_of(acl_id, b) for acl_id, b in self.acls.items()]
