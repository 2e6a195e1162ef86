"""ACLs, for the active controller (Kafka's ``AclControlManager``).

:class:`AclControl` owns the controller's ACL bindings
(:class:`~kafka_wire.broker.controller.acls_image.AclsImage`) and answers CreateAcls and
DeleteAcls (the broker checks ALTER on the cluster before forwarding them).

CreateAcls: a request with ANY (or a MATCH pattern) in one of its bindings fails whole with
UNKNOWN_SERVER_ERROR, as Kafka 4.4 answers (it cannot build the binding). Each creation is checked
(:func:`~kafka_wire.broker.security.acls.binding_problem`: a CLUSTER resource not named
``kafka-cluster``, an empty name, a type, operation or permission Kafka does not know, a principal
without its type, an empty host: INVALID_REQUEST with Kafka 4.4's message); a binding that exists already, or twice in the request, is written once. One
``AccessControlEntryRecord`` per new binding, under a new id.

DeleteAcls: a filter with a code Kafka does not know is refused (INVALID_REQUEST, "Unknown
patternFilter." or "Unknown entryFilter."); every other filter
answers the bindings it matches (:meth:`~kafka_wire.broker.security.acls.AclFilter.matches`),
each removed by one ``RemoveAccessControlEntryRecord`` (a binding two filters match is removed
once and listed by both).
"""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.controller.acls_image import AclsImage, record_of
from kafka_wire.broker.controller.delta import DeltaBuilder
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.metadata import random_uuid
from kafka_wire.broker.security.acls import (
    AclBinding,
    AclFilter,
    binding_problem,
    creation_unrepresentable,
    operation,
    pattern_type,
    permission_type,
    resource_type,
)
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        CreateAclsRequest,
        CreateAclsRequestAclCreation,
        DeleteAclsRequest,
        DeleteAclsRequestFilter,
    )


def creation_binding(c: CreateAclsRequestAclCreation) -> AclBinding:
    return AclBinding(
        resource_type=resource_type(c.resource_type),
        resource_name=c.resource_name,
        pattern_type=pattern_type(c.resource_pattern_type),
        principal=c.principal,
        host=c.host,
        operation=operation(c.operation),
        permission_type=permission_type(c.permission_type),
    )


def request_filter(f: DeleteAclsRequestFilter | messages.DescribeAclsRequest) -> AclFilter:
    return AclFilter(
        resource_type=resource_type(f.resource_type_filter),
        resource_name=f.resource_name_filter,
        pattern_type=pattern_type(f.pattern_type_filter),
        principal=f.principal_filter,
        host=f.host_filter,
        operation=operation(f.operation),
        permission_type=permission_type(f.permission_type),
    )


class AclControl:
    """The ACL bindings (see the module docstring)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.image = AclsImage()

    # -- state -----------------------------------------------------------------------------------

    def reset(self) -> None:
        self.image = AclsImage()

    def replay(self, record: Message, delta: DeltaBuilder) -> None:
        self.image.replay(record, delta)

    def snapshot_records(self) -> list[Message]:
        return self.image.snapshot_records()

    # -- requests --------------------------------------------------------------------------------

    def create_acls(self, version: int, req: CreateAclsRequest, now_ms: int) -> Decision:
        bindings = [creation_binding(c) for c in req.creations]
        if any(creation_unrepresentable(b) for b in bindings):  # Kafka cannot build the request's bindings
            return messages.CreateAclsResponse(
                results=[
                    messages.CreateAclsResponseAclCreationResult(
                        error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None
                    )
                    for _ in bindings
                ]
            )
        existing = set(self.image.acls.values())
        records: list[Message] = []
        results: list[messages.CreateAclsResponseAclCreationResult] = []
        for binding in bindings:
            problem = binding_problem(binding)
            if problem is not None:
                results.append(
                    messages.CreateAclsResponseAclCreationResult(
                        error_code=ErrorCode.INVALID_REQUEST, error_message=problem
                    )
                )
                continue
            if binding not in existing:
                existing.add(binding)
                records.append(record_of(self._new_id(), binding))
            results.append(messages.CreateAclsResponseAclCreationResult())
        answer = messages.CreateAclsResponse(results=results)
        return ControllerResult(
            records, lambda: answer, lambda code: failure_answer(ApiKey.CREATE_ACLS, req, code)
        )

    def delete_acls(self, version: int, req: DeleteAclsRequest, now_ms: int) -> Decision:
        removed: set[uuid.UUID] = set()
        records: list[Message] = []
        results: list[messages.DeleteAclsResponseFilterResult] = []
        for f in req.filters:
            acl_filter = request_filter(f)
            problem = acl_filter.problem()
            if problem is not None:
                results.append(
                    messages.DeleteAclsResponseFilterResult(
                        error_code=ErrorCode.INVALID_REQUEST, error_message=problem
                    )
                )
                continue
            matching = []
            for acl_id, b in self.image.acls.items():
                if not acl_filter.matches(b):
                    continue
                if acl_id not in removed:
                    removed.add(acl_id)
                    records.append(messages.RemoveAccessControlEntryRecord(id=acl_id))
                matching.append(
                    messages.DeleteAclsResponseMatchingAcl(
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission_type,
                    )
                )
            results.append(
                messages.DeleteAclsResponseFilterResult(error_message=None, matching_acls=matching)
            )
        answer = messages.DeleteAclsResponse(filter_results=results)
        return ControllerResult(
            records, lambda: answer, lambda code: failure_answer(ApiKey.DELETE_ACLS, req, code)
        )

    def _new_id(self) -> uuid.UUID:
        while True:
            acl_id = random_uuid(self._rng)
            if acl_id not in self.image.acls:
                return acl_id
