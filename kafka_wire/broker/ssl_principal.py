"""``ssl.principal.mapping.rules``: the principal name of a TLS client certificate's subject.

A connection on an ``SSL`` listener whose client presented a certificate carries the principal
``User:<name>``, where ``<name>`` comes from the certificate's subject, written as an RFC 4514
distinguished name (``CN=alice,OU=eng,O=Example``), through Kafka's mapping rules:

- the value is a list of rules separated by commas or new lines, tried in order;
- ``DEFAULT`` gives the distinguished name unchanged (the whole default value);
- ``RULE:pattern/replacement/`` applies when ``pattern`` (a regular expression) matches the
  whole name: the result is the name with every match of ``pattern`` replaced by
  ``replacement``, where ``$1`` ... name the pattern's groups and ``\\`` escapes the next
  character (``\\/`` is a slash, ``\\$`` a dollar sign); a trailing ``L`` or ``U``
  (``RULE:.../.../L``) lower- or upper-cases the result;
- when no rule applies the name has no principal (:func:`principal_name` returns None) and the
  connection is closed, as Kafka fails the authentication.

Patterns are Python regular expressions (Kafka's are Java's: the common syntax is the same).
Pure functions of text; nothing here does I/O.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from kafka_wire.broker.config import BrokerConfigError
from kafka_wire.quick_dataclass import dataclass

#: ``ssl.principal.mapping.rules``'s default.
DEFAULT_RULES: Final = "DEFAULT"
_KEY: Final = "ssl.principal.mapping.rules"
#: ``RULE:`` then the pattern and the replacement, each up to an unescaped slash, then L or U
#: (patterns as strings: ``re`` compiles and keeps each on its first use, not at start).
_RULE: Final = r"RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)"
_SEPARATOR: Final = r"\s*(?:[,\n]\s*|$)"

Case = Literal["", "L", "U"]


@dataclass(frozen=True, slots=True)
class PrincipalRule:
    """One rule: ``pattern`` None is ``DEFAULT``."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: Case = ""

    def apply(self, name: str) -> str | None:
        """The rule's result for ``name``, or None when it does not apply."""
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(lambda match: _expand(match, self.replacement), name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


def parse_rules(text: str, key: str = _KEY) -> tuple[PrincipalRule, ...]:
    """The rules of an ``ssl.principal.mapping.rules`` value; a :class:`BrokerConfigError`
    naming ``key`` when one is not a rule."""
    rules: list[PrincipalRule] = []
    pos = len(text) - len(text.lstrip())
    while pos < len(text):
        if text.startswith("DEFAULT", pos):
            rules.append(PrincipalRule(None))
            pos += len("DEFAULT")
        elif (match := re.compile(_RULE).match(text, pos)) is not None:
            try:
                pattern = re.compile(match[1])
            except re.error as exc:
                raise BrokerConfigError(key, f"invalid pattern {match[1]!r}: {exc}") from None
            _check_groups(key, pattern, match[2])
            rules.append(
                PrincipalRule(pattern, match[2], "L" if match[3] == "L" else "U" if match[3] else "")
            )
            pos = match.end()
        else:
            raise BrokerConfigError(
                key, f"invalid rule at {text[pos:]!r}: expected DEFAULT or RULE:pattern/replacement/[LU]"
            )
        separator = re.compile(_SEPARATOR).match(text, pos)
        if separator is None:
            raise BrokerConfigError(key, f"invalid rule at {text[pos:]!r}: rules are separated by commas")
        pos = separator.end()
    if not rules:
        raise BrokerConfigError(key, "no rule given (DEFAULT keeps the distinguished name)")
    return tuple(rules)


def principal_name(rules: tuple[PrincipalRule, ...], distinguished_name: str) -> str | None:
    """The principal name the first applying rule gives ``distinguished_name``; None when none applies."""
    for rule in rules:
        result = rule.apply(distinguished_name)
        if result is not None:
            return result
    return None


def _expand(match: re.Match[str], replacement: str) -> str:
    """``replacement`` with ``$n`` replaced by group n of ``match`` and ``\\x`` by x."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
        elif char == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            # The longest group number the pattern has (Java's rule: "$12" is group 1 then "2"
            # when the pattern has fewer than 12 groups).
            number, i = int(replacement[i + 1]), i + 2
            while (
                i < len(replacement)
                and replacement[i].isdigit()
                and number * 10 + int(replacement[i]) <= match.re.groups
            ):
                number, i = number * 10 + int(replacement[i]), i + 1
            out.append(match.group(number) or "")
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _check_groups(key: str, pattern: re.Pattern[str], replacement: str) -> None:
    for ref in re.finditer(r"(?<!\\)\$([0-9])", replacement):
        if int(ref[1]) > pattern.groups:
            raise BrokerConfigError(
                key, f"replacement {replacement!r} names group {ref[1]}; the pattern has {pattern.groups}"
            )
