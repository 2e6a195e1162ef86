"""Every version of every request and response round-trips; generated code == interpreter.

The messages are drawn by the ``messages`` Hypothesis strategy (``kafka_wire.testing.strategies``),
which this file also checks: half the profile's examples per case, as drawing them costs far more
than the codec does; ``tests/testing/test_generate.py`` puts twelve ``random_message`` draws per
case through the same three checks.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.codec import interp
from kafka_wire.codec.structs import Message
from kafka_wire.messages import DATA, HEADERS, catalog
from kafka_wire.testing.strategies import messages

CASES = [
    pytest.param(cls, v, id=f"{cls.__name__}-v{v}")
    for api in catalog()
    for cls in (api.request, api.response)
    for v in api.versions
] + [pytest.param(cls, v, id=f"{cls.__name__}-v{v}") for cls in HEADERS + DATA for v in cls.VERSIONS]


def test_case_count() -> None:
    # 95 API keys, 368 versions each way, as the union of both upstream snapshots defines.
    assert len(catalog()) == 95
    assert sum(len(api.versions) for api in catalog()) == 368


@pytest.mark.parametrize(("cls", "version"), CASES)
@settings(max_examples=max(2, settings().max_examples // 2))
@given(data=st.data())
def test_round_trip(cls: type[Message], version: int, data: st.DataObject) -> None:
    msg = data.draw(messages(cls, version))
    encoded = msg.encode(version)
    decoded = cls.decode(encoded, version, strict=True)
    assert decoded == msg
    assert decoded.encode(version) == encoded
    # The interpreter is an independent codec over the same tables: identical bytes, equal objects.
    reference = bytearray()
    interp.encode(msg, version, reference)
    assert bytes(reference) == encoded
    again, end = interp.decode(cls, encoded, 0, version)
    assert end == len(encoded)
    assert again == msg
