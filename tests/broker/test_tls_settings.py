"""``ssl.*`` properties of a TLS listener and ``ssl.principal.mapping.rules`` (pure: no files read)."""

from __future__ import annotations

import pytest

from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.broker.ssl_principal import parse_rules, principal_name
from kafka_wire.broker.tls_settings import is_ssl_key, listener_tls

DN = "CN=Kafka Server,OU=ServiceUsers,O=Example,L=Town,ST=State,C=US"

# -- mapping rules (the cases of Kafka's documentation for ssl.principal.mapping.rules) ----------


@pytest.mark.parametrize(
    ("rules", "name", "principal"),
    [
        ("DEFAULT", DN, DN),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", DN, "Kafka Server"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L", DN, "kafka server"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U", DN, "KAFKA SERVER"),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            DN,
            "kafka server@serviceusers",
        ),
        # The first rule that applies wins; DEFAULT after rules catches the rest.
        ("RULE:^CN=([^,]*),OU=Other.*$/$1/, DEFAULT", DN, DN),
        ("RULE:^CN=([^,]*),OU=Other.*$/$1/,\n RULE:^CN=([^,]*),.*$/user-$1/", DN, "user-Kafka Server"),
        # An escaped slash in the pattern and the replacement; \\$ is a literal dollar sign.
        (r"RULE:^CN=(.*)\/(.*),.*$/$2\/$1\$/", "CN=a/b,O=x", "b/a$"),
        # Java's $12 is group 1 followed by "2" when there is no group 12.
        ("RULE:^CN=([^,]*),.*$/$12/", DN, "Kafka Server2"),
    ],
)
def test_mapping_rules(rules: str, name: str, principal: str) -> None:
    assert principal_name(parse_rules(rules), name) == principal


def test_no_applying_rule_gives_no_principal() -> None:
    assert principal_name(parse_rules("RULE:^CN=(.*),OU=clients,.*$/$1/"), DN) is None


@pytest.mark.parametrize(
    ("rules", "reason"),
    [
        ("", "no rule"),
        ("RULE:^CN=(.*)$/$1", "expected DEFAULT or RULE"),
        ("DEFAULTS", "separated by commas"),
        ("RULE:(/$1/", "invalid pattern"),
        ("RULE:^CN=(.*)$/$2/", "names group 2"),
        ("KERBEROS", "expected DEFAULT or RULE"),
    ],
)
def test_invalid_rules_are_refused(rules: str, reason: str) -> None:
    with pytest.raises(BrokerConfigError, match=reason) as failure:
        parse_rules(rules)
    assert failure.value.key == "ssl.principal.mapping.rules"


# -- a listener's settings -----------------------------------------------------------------------

PEM = {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/keys/broker.pem"}


def test_defaults_are_kafkas() -> None:
    tls = listener_tls(PEM, "SSL")
    assert tls.client_auth == "none"
    assert tls.protocols == ("TLSv1.2", "TLSv1.3")
    assert tls.cipher_suites == ()
    assert tls.truststore_type is None
    assert principal_name(tls.principal_rules, DN) == DN


def test_listener_overrides_win() -> None:
    props = {
        **PEM,
        "ssl.client.auth": "requested",
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.INTERNAL.ssl.keystore.location": "/keys/internal.pem",
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": "/keys/trust.p12",
        "ssl.enabled.protocols": "TLSv1.3, TLSv1.2",
        "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/L",
    }
    internal = listener_tls(props, "INTERNAL")
    assert internal.client_auth == "required"
    assert internal.keystore_location == "/keys/internal.pem"
    assert internal.truststore_type == "PKCS12"
    assert internal.protocols == ("TLSv1.2", "TLSv1.3")
    assert internal.cipher_suites == ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256")
    assert principal_name(internal.principal_rules, DN) == "kafka server"
    assert listener_tls(props, "SSL").client_auth == "requested"


def test_inline_pem() -> None:
    tls = listener_tls(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": "KEY",
            "ssl.keystore.certificate.chain": "CHAIN",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": "CERTS",
        },
        "SSL",
    )
    assert (tls.keystore_key, tls.keystore_certificate_chain, tls.truststore_certificates) == (
        "KEY",
        "CHAIN",
        "CERTS",
    )


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"ssl.keystore.location": "/k.jks"}, "ssl.keystore.type", "JKS .* cannot be read"),
        ({**PEM, "ssl.keystore.type": "BCFKS"}, "ssl.keystore.type", "not PEM, PKCS12 or JKS"),
        ({**PEM, "ssl.truststore.location": "/t.jks"}, "ssl.truststore.type", "JKS"),
        ({**PEM, "ssl.client.auth": "always"}, "ssl.client.auth", "none, requested or required"),
        ({**PEM, "listener.name.ssl.ssl.client.auth": "x"}, "listener.name.ssl.ssl.client.auth", "none"),
        ({**PEM, "ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols", "unknown protocol"),
        ({**PEM, "ssl.keystore.key": "K"}, "ssl.keystore.key", "either"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "K"}, "ssl.keystore.key", "certificate.chain"),
        ({**PEM, "ssl.principal.mapping.rules": "RULE:x"}, "ssl.principal.mapping.rules", "RULE"),
    ],
)
def test_invalid_settings_are_refused(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(BrokerConfigError, match=reason) as failure:
        listener_tls(props, "SSL")
    assert failure.value.key == key


def test_server_properties_read_a_tls_listener() -> None:
    loaded = load_server_properties(
        {"listeners": "SSL://:9093", **PEM, "listener.name.ssl.ssl.client.auth": "required"}
    )
    assert loaded.tls["SSL"].client_auth == "required"
    assert not any("ssl." in note.message for note in loaded.notes)  # read, so not "ignored"
    sasl = load_server_properties(
        {"listeners": "SASL_SSL://:9093", **PEM, "sasl.users.SCRAM-SHA-512.carol": "pw"}
    )
    assert set(sasl.tls) == {"SASL_SSL"}
    assert dict(sasl.config.sasl_listeners)["PLAINTEXT"].mechanisms == ("SCRAM-SHA-512",)
    # Kafka's SASL properties on a SASL_SSL listener: the same gate as on SASL_PLAINTEXT
    jaas = load_server_properties(
        {
            "listeners": "SASL_SSL://:9093",
            **PEM,
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="admin" password="a" user_admin="a" user_alice="s";'
            ),
        }
    )
    assert set(jaas.tls) == {"SASL_SSL"}
    gate = dict(jaas.config.sasl_listeners)["PLAINTEXT"]
    assert gate.mechanisms == ("PLAIN",) and dict(gate.plain_users) == {"admin": "a", "alice": "s"}
    assert load_server_properties({"listeners": "PLAINTEXT://:9092", **PEM}).tls == {}


def test_ssl_keys() -> None:
    assert is_ssl_key("ssl.keystore.location")
    assert is_ssl_key("listener.name.internal.ssl.client.auth")
    assert not is_ssl_key("listener.name.internal.plain.sasl.jaas.config")
    assert not is_ssl_key("ssl.engine.factory.class")
