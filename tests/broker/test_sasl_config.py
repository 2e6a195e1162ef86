"""JAAS entries and a SASL listener's settings read as Kafka reads them (sasl_config.py)."""

from __future__ import annotations

import pytest

from kafka_wire.broker.sasl_config import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasEntry,
    SaslConfigError,
    inter_broker_login,
    listener_sasl,
    parse_jaas,
)


def test_a_jaas_entry_with_comments_quotes_and_escapes() -> None:
    text = f"""
        // the broker's PLAIN users
        {PLAIN_LOGIN_MODULE} REQUIRED /* any case */
            username=admin password="admin secret"
            user_admin="admin secret" user_bob="say \\"hi\\"";
    """
    [entry] = parse_jaas(text)
    assert entry == JaasEntry(
        PLAIN_LOGIN_MODULE,
        "required",
        {
            "username": "admin",
            "password": "admin secret",
            "user_admin": "admin secret",
            "user_bob": 'say "hi"',
        },
    )
    two = parse_jaas(f"{SCRAM_LOGIN_MODULE} optional; {PLAIN_LOGIN_MODULE} sufficient a=b;")
    assert [(e.module, e.flag, dict(e.options)) for e in two] == [
        (SCRAM_LOGIN_MODULE, "optional", {}),
        (PLAIN_LOGIN_MODULE, "sufficient", {"a": "b"}),
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "login module not specified"),
        (f"{PLAIN_LOGIN_MODULE};", "control flag not specified"),
        (f"{PLAIN_LOGIN_MODULE} mandatory;", "control flag not specified"),
        (f"{PLAIN_LOGIN_MODULE} required user_a;", "value not specified for key 'user_a'"),
        (f"{PLAIN_LOGIN_MODULE} required user_a=;", "value not specified"),
        (f"{PLAIN_LOGIN_MODULE} required user_a=b", "does not end with ';'"),
        (f'{PLAIN_LOGIN_MODULE} required user_a="b;', "unterminated quoted value"),
        (f"{PLAIN_LOGIN_MODULE} required /* a=b;", "unterminated comment"),
    ],
)
def test_bad_jaas_entries_are_refused(text: str, reason: str) -> None:
    with pytest.raises(SaslConfigError, match=reason) as failure:
        parse_jaas(text, "sasl.jaas.config")
    assert failure.value.key == "sasl.jaas.config"


def test_a_listener_reads_its_own_properties_before_the_shared_ones() -> None:
    props = {
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.client.sasl.enabled.mechanisms": "plain, scram-sha-512",
        "sasl.jaas.config": f"{SCRAM_LOGIN_MODULE} required;",
        "listener.name.client.plain.sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="u" password="p" user_u="p";',
    }
    client = listener_sasl(props, "CLIENT")
    assert client.mechanisms == ("PLAIN", "SCRAM-SHA-512") and dict(client.plain_users) == {"u": "p"}
    assert listener_sasl(props, "OTHER").mechanisms == ("SCRAM-SHA-256",)
    with pytest.raises(SaslConfigError, match="must be included"):
        inter_broker_login(props, "CLIENT")  # Kafka's default inter-broker mechanism: GSSAPI
    assert inter_broker_login(props | {"sasl.mechanism.inter.broker.protocol": "PLAIN"}, "CLIENT") == (
        "u",
        "p",
    )
    with pytest.raises(SaslConfigError, match="1 module"):
        listener_sasl(
            props | {"sasl.jaas.config": f"{SCRAM_LOGIN_MODULE} required; {SCRAM_LOGIN_MODULE} required;"},
            "OTHER",
        )
