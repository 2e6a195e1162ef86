"""An engine with SASL PLAIN users and the authorizer on, and clients that log in as them."""

from __future__ import annotations

from dataclasses import replace

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.config import STANDARD_AUTHORIZER
from kafka_wire.messages import (
    CreateAclsRequest,
    CreateAclsRequestAclCreation,
    CreateAclsResponse,
)
from kafka_wire.protocol import ClientConfig, ClientConnection
from kafka_wire.protocol.sasl import PlainClient
from tests.broker.engine import Client, Engine

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def secured_engine(*, authorizer: bool = True, **config: object) -> Engine:
    base = BrokerConfig(
        group_initial_rebalance_delay_ms=0,
        sasl_users={"PLAIN": USERS},
        authorizer_class_name=STANDARD_AUTHORIZER if authorizer else "",
        super_users="User:admin",
    )
    return Engine(replace(base, **config))  # type: ignore[arg-type]  # keyword fields of BrokerConfig


def login(engine: Engine, conn_id: int, user: str) -> Client:
    client = Client(engine, conn_id, negotiate=False)
    client.conn = ClientConnection(
        ClientConfig(client_id=f"client-{conn_id}"), sasl=PlainClient(user, USERS[user])
    )
    client._pump()
    return client


def acl(
    rtype: int, name: str, principal: str, op: int, permission: int = 3, pattern: int = 3, host: str = "*"
) -> CreateAclsRequestAclCreation:
    return CreateAclsRequestAclCreation(
        resource_type=rtype,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host=host,
        operation=op,
        permission_type=permission,
    )


def create_acls(admin: Client, *creations: CreateAclsRequestAclCreation) -> CreateAclsResponse:
    reply = admin.request(CreateAclsRequest(creations=list(creations)))
    assert isinstance(reply.body, CreateAclsResponse)
    return reply.body
