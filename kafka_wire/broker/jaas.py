"""Kafka's JAAS configuration values, read as Kafka's ``JaasConfig`` reads them, and the error of a
bad SASL property.

:func:`parse_jaas` takes ``<LoginModule class> <flag> <key>=<value> ... ;`` entries: ``//`` and
``/* */`` comments, values bare or in double quotes (backslash escapes inside), a control flag of
``required``, ``requisite``, ``sufficient`` or ``optional`` (any case), a ``;`` after each module.
No I/O; errors are :class:`SaslConfigError` naming the property.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kafka_wire.errors import KafkaWireError
from kafka_wire.quick_dataclass import dataclass

CONTROL_FLAGS: Final = ("required", "requisite", "sufficient", "optional")
#: The property naming one listener's settings (Kafka's ``ListenerName.configPrefix``).
LISTENER_PREFIX: Final = "listener.name."


class SaslConfigError(KafkaWireError):
    """A SASL property is invalid; ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module of a JAAS configuration."""

    module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> list[JaasEntry]:
    """The login modules of a JAAS configuration value (see the module docstring)."""
    tokens = _tokens(text, key)
    entries: list[JaasEntry] = []
    pos = 0
    while pos < len(tokens):
        module, quoted = tokens[pos]
        if quoted or module in ("=", ";"):
            raise SaslConfigError(key, "a login module class name is expected")
        pos += 1
        if pos >= len(tokens) or tokens[pos][0].lower() not in CONTROL_FLAGS or tokens[pos][1]:
            raise SaslConfigError(key, f"login module control flag not specified for {module}")
        flag = tokens[pos][0].lower()
        pos += 1
        options: dict[str, str] = {}
        while True:
            if pos >= len(tokens):
                raise SaslConfigError(key, "the JAAS entry does not end with ';'")
            word, quoted = tokens[pos]
            if word == ";" and not quoted:
                pos += 1
                break
            if pos + 2 >= len(tokens) or tokens[pos + 1] != ("=", False):
                raise SaslConfigError(key, f"value not specified for key {word!r} in JAAS config")
            value, value_quoted = tokens[pos + 2]
            if not value_quoted and value in ("=", ";"):
                raise SaslConfigError(key, f"value not specified for key {word!r} in JAAS config")
            options[word] = value
            pos += 3
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise SaslConfigError(key, "login module not specified in JAAS config")
    return entries


_SPACE: Final = " \t\r\n\f"


def _tokens(text: str, key: str) -> list[tuple[str, bool]]:
    """Words, ``=``, ``;`` and quoted strings (marked True), comments dropped."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise SaslConfigError(key, "unterminated comment in JAAS config")
            i = end + 2
        elif c in "=;":
            out.append((c, False))
            i += 1
        elif c == '"':
            value: list[str] = []
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise SaslConfigError(key, "unterminated quoted value in JAAS config")
            out.append(("".join(value), True))
            i += 1
        else:
            start = i
            while (
                i < n
                and text[i] not in _SPACE
                and text[i] not in '=;"'
                and not text.startswith(("//", "/*"), i)
            ):
                i += 1
            out.append((text[start:i], False))
    return out
