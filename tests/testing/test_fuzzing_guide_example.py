"""The example of docs/guide/fuzzing.md ("Fuzzing your own parser"), run as a test.

The code between the two ``# --- guide example`` markers is the guide's code block, character
for character but the blank lines before the end marker (``test_the_guide_shows_this_example`` checks it).
"""

from __future__ import annotations

# --- guide example: start
import struct

from hypothesis import given
from hypothesis import strategies as st

from kafka_wire import decode_request
from kafka_wire.errors import DecodeError
from kafka_wire.messages import ProduceRequest
from kafka_wire.testing.mutator import mutated_requests


class ParseError(Exception):
    """The one error our parser may raise on bad input."""


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ParseError(f"{n} bytes needed at {self.pos}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        value: int = struct.unpack(">h", self.take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        try:
            return self.take(n).decode()
        except UnicodeDecodeError as exc:
            raise ParseError("not UTF-8") from exc


def produce_topics(frame: bytes) -> list[str] | None:
    """The topic names of a Produce v3-v8 request frame; None for any other request."""
    r = Reader(frame)
    if r.int32() != len(frame) - 4:
        raise ParseError("size prefix")
    api_key, version = r.int16(), r.int16()
    if api_key != 0 or not 3 <= version <= 8:
        return None
    r.int32()  # correlation id
    r.string()  # client id
    r.string()  # transactional id
    r.take(6)  # acks, timeout
    names = []
    topics = r.int32()
    if topics < 0:
        raise ParseError("null topic array")
    for _ in range(topics):
        name = r.string()
        if name is None:
            raise ParseError("null topic name")
        names.append(name)
        partitions = r.int32()
        if partitions < 0:
            raise ParseError("null partition array")
        for _ in range(partitions):
            r.int32()  # partition index
            size = r.int32()
            r.take(max(size, 0))  # records (null when negative)
    return names


produce_frames = st.one_of([mutated_requests(ProduceRequest, v) for v in range(3, 9)])


@given(produce_frames)
def test_produce_topics(frame: bytes) -> None:
    try:
        names = produce_topics(frame)  # any exception but ParseError fails the test
    except ParseError:
        return
    try:
        header, body = decode_request(frame)
    except DecodeError:
        return  # kafka_wire refused it (it checks more, the records for one)
    if isinstance(body, ProduceRequest) and 3 <= header.request_api_version <= 8:
        assert names == [topic.name for topic in body.topic_data]  # both read the same names


# --- guide example: end


def test_the_guide_shows_this_example() -> None:
    from pathlib import Path

    guide = Path(__file__).parent.parent.parent / "docs" / "guide" / "fuzzing.md"
    source = Path(__file__).read_text(encoding="utf-8")
    example = source.split("# --- guide example: start\n")[1].split("# --- guide example: end\n")[0]
    example = example.rstrip("\n") + "\n"
    assert f"```python\n{example}```" in guide.read_text(encoding="utf-8")
