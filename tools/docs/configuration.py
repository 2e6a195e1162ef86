"""``docs/reference/configuration.md``: every setting kafka_wire reads, with its default, from the code's tables.

Sources: ``kafka_wire.broker.config`` (broker properties and the :class:`BrokerConfig` field each
sets), ``kafka_wire.broker.server_properties`` (listener and directory properties),
``kafka_wire.broker.log.config.CONFIG_KEYS`` (topic configs), ``kafka_wire.broker.topic_synonyms``
(the broker properties that set topic defaults) and ``kafka_wire.broker.group.config`` (the group
coordinator's settings).
"""

from __future__ import annotations

import dataclasses
from typing import Any

PAGE = "reference/configuration.md"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value is None:
        return "none"
    if isinstance(value, dict) and not value:
        return "empty"
    return f"`{value}`"


def _field_defaults(cls: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _broker_section() -> list[str]:
    from kafka_wire.broker import config as broker_config
    from kafka_wire.broker import server_properties
    from kafka_wire.broker.config_properties import PROPERTY_OF
    from kafka_wire.broker.sasl_config import SERVED_MECHANISMS

    defaults = _field_defaults(broker_config.BrokerConfig)
    scale: dict[str, int] = broker_config._SCALE
    lines = [
        "## Broker properties",
        "",
        "What `kafka-wire serve --config FILE --set KEY=VALUE` acts on; names and defaults are Kafka's",
        "except the `kafka.wire.*` ones, which are kafka_wire's own. How each behaves:",
        '[guide/broker.md](../guide/broker.md), "Configuration" and "Connections and their limits".',
        "",
        "| property | default | `BrokerConfig` field |",
        "|---|---|---|",
    ]
    for field, prop in sorted(PROPERTY_OF.items(), key=lambda item: item[1]):
        default = defaults[field]
        if field in scale and isinstance(default, int):
            default //= scale[field]
        lines.append(f"| `{prop}` | {_cell(default)} | `{field}` |")
    mechanisms = ", ".join(SERVED_MECHANISMS)
    lines.append(
        "| `sasl.enabled.mechanisms`, `listener.name.<listener>.<mechanism>.sasl.jaas.config`, "
        f"`sasl.jaas.config`, `sasl.mechanism.inter.broker.protocol` | GSSAPI | `sasl_listeners` "
        f"(per SASL_PLAINTEXT or SASL_SSL listener; mechanisms: {mechanisms}; see docs/guide/sasl.md) |"
    )
    lines.append(
        "| `listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class`, `sasl.oauthbearer.*` "
        "(also prefixed `listener.name.<listener>.` or `listener.name.<listener>.oauthbearer.`) | "
        "the unsecured validator | `sasl_listeners[...].oauth` (OAUTHBEARER's validator: unsecured, or signed "
        "JWTs checked against `sasl.oauthbearer.jwks.endpoint.url`; see docs/guide/sasl.md) |"
    )
    users = ", ".join(broker_config.SASL_MECHANISMS)
    lines.append(
        f"| `{broker_config.SASL_USERS_PREFIX}<MECHANISM>.<user>` | none | `sasl_users` (kafka_wire's own "
        f"shortcut: password, for {users}; a SASL listener without `sasl.enabled.mechanisms` serves these users) |"
    )
    server_keys = ", ".join(f"`{key}`" for key in sorted(server_properties._SERVER_KEYS))
    lines += [
        "",
        f"Read by `kafka_wire.broker.server_properties` for the listener, the node and the data directory: {server_keys}.",
        "Every broker property that sets a topic default is in the next table. Other properties Kafka 4.0",
        "defines are accepted and ignored; unknown or removed ones are named in a warning.",
    ]
    return lines


def _topic_section() -> list[str]:
    from kafka_wire.broker.log.config import CONFIG_KEYS
    from kafka_wire.broker.topic_synonyms import TOPIC_CONFIG_SYNONYMS

    lines = [
        "## Topic configs",
        "",
        "Per topic (CreateTopics, AlterConfigs, IncrementalAlterConfigs; DescribeConfigs reports them).",
        "A topic without an override takes the first broker property of its synonyms that is set, else",
        "the default. How the log uses them: [internals/log.md](../internals/log.md).",
        "",
        "| config | type | default | valid | broker synonyms, in precedence order | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(CONFIG_KEYS):
        key = CONFIG_KEYS[name]
        valid = []
        if key.choices is not None:
            valid.append(", ".join(key.choices))
        if key.minimum is not None:
            valid.append(f">= {_number(key.minimum)}")
        if key.maximum is not None:
            valid.append(f"<= {_number(key.maximum)}")
        valid += [f"or {value}" for value in key.also_allowed]
        synonyms = ", ".join(f"`{s.name}`" for s in TOPIC_CONFIG_SYNONYMS.get(name, ()))
        meaning = key.documentation.replace("|", "\\|")
        lines.append(
            f"| `{name}` | {key.type.name} | `{key.default}` | {'; '.join(valid)} | {synonyms} | {meaning} |"
        )
    return lines


def _group_section() -> list[str]:
    from kafka_wire.broker.group.config import PROPERTY_NAMES, GroupConfig

    defaults = _field_defaults(GroupConfig)
    lines = [
        "## Group coordinator",
        "",
        "`GroupConfig`, which the broker builds from its properties. How the coordinator uses them:",
        "[internals/group-coordinator.md](../internals/group-coordinator.md).",
        "",
        "| `GroupConfig` field | Kafka property | default (in the field's unit) |",
        "|---|---|---|",
    ]
    for field, prop in PROPERTY_NAMES.items():
        lines.append(f"| `{field}` | `{prop}` | {_cell(defaults[field])} |")
    return lines


def page() -> str:
    lines = [
        "# Configuration",
        "",
        "Generated by `make docs` (`python -m tools.docs`) from the configuration tables in the code. Do",
        "not edit.",
        "",
    ]
    lines += [*_broker_section(), "", *_topic_section(), "", *_group_section()]
    return "\n".join(lines) + "\n"
