"""The pure-Python twin of the columnar extension (``kafka_wire/_compiled/columnar.c``).

Same interface, same checks and the same Arrow output as the C ``Columns``; used when the
extension is not built or ``KAFKA_WIRE_PURE`` is set (:mod:`kafka_wire.records.columnar` chooses).
Values are collected in lists and turned into Arrow buffers once, by pyarrow, in :meth:`finish`.
Integers wrap to 64 bits as the C code (and Java) does.
"""

from __future__ import annotations

from array import array
from typing import Any

from kafka_wire.records.loops import read_uvarint32, read_uvarint64

_I64_MIN = -(1 << 63)
_U64 = 1 << 64


def _wrap64(v: int) -> int:
    """``v`` as a two's-complement int64 (Java's ``long`` arithmetic)."""
    return v if _I64_MIN <= v < -_I64_MIN else (v - _I64_MIN) % _U64 + _I64_MIN


def _corrupt(reason: str, offset: int) -> ValueError:
    return ValueError(reason, offset)


class Columns:
    """Growing columns of Kafka records; see the C twin for the contract of each method."""

    def __init__(self, key: bool, value: bool, headers: bool, timestamp_scale: int) -> None:
        self.want_key = key
        self.want_value = value
        self.want_headers = headers
        self.scale = timestamp_scale
        self.offsets = array("q")
        self.timestamps = array("q")
        self.ts_types = array("i")
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.header_lists: list[Any] = []

    @property
    def rows(self) -> int:
        return len(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)

    def _row(self, offset: int, timestamp: int, ts_type: int) -> None:
        self.offsets.append(offset)
        ts = timestamp * self.scale
        self.timestamps.append(ts if _I64_MIN <= ts < -_I64_MIN else _wrap64(ts))
        self.ts_types.append(ts_type)

    def record(self, offset: int, timestamp: int, ts_type: int, key: Any, value: Any, headers: Any) -> None:
        self._row(offset, timestamp, ts_type)
        if self.want_key:
            self.keys.append(None if key is None else bytes(key))
        if self.want_value:
            self.values.append(None if value is None else bytes(value))
        if self.want_headers:
            self.header_lists.append(
                [(k, None if v is None else bytes(v)) for k, v in headers] if headers else None
            )

    def v2(
        self,
        data: bytes,
        pos: int,
        end: int,
        count: int,
        base_offset: int,
        base_timestamp: int,
        log_append_time: int | None,
        ts_type: int,
        lo: int,
        hi: int,
    ) -> int:
        if count > (end - pos) // 7:
            raise _corrupt(
                f"{count} records cannot fit in {end - pos} bytes (a record takes at least 7)", pos
            )
        data = bytes(data) if type(data) is not bytes else data
        want_key, want_value, want_headers = self.want_key, self.want_value, self.want_headers
        offsets, timestamps, ts_types = self.offsets, self.timestamps, self.ts_types
        keys, values, header_lists = self.keys, self.values, self.header_lists
        scale = self.scale
        low, high = _I64_MIN, -_I64_MIN - 1
        lat = log_append_time is not None
        key_text: dict[bytes, str] = {}
        try:
            for i in range(count):
                if pos >= end:
                    raise _corrupt(f"batch ends after {i} of {count} declared records", pos)
                v = data[pos]
                if v < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    v = (v & 0x7F) | (data[pos + 1] << 7)
                    pos += 2
                else:
                    v, pos = read_uvarint32(data, pos)
                length = (v >> 1) ^ -(v & 1)
                rec_end = pos + length
                if rec_end > end:
                    raise _corrupt(f"record length {length} overruns the batch ({end - pos} bytes left)", pos)
                if length < 0:
                    raise _corrupt("negative record length", pos)
                tsd = data[pos + 1]
                if tsd < 0x80:
                    pos += 2
                else:
                    b = data[pos + 2]
                    if b < 0x80:
                        tsd = (tsd & 0x7F) | (b << 7)
                        pos += 3
                    elif data[pos + 3] < 0x80:
                        tsd = (tsd & 0x7F) | ((b & 0x7F) << 7) | (data[pos + 3] << 14)
                        pos += 4
                    else:
                        tsd, pos = read_uvarint64(data, pos + 1)
                od = data[pos]
                if od < 0x80:
                    pos += 1
                else:
                    b = data[pos + 1]
                    if b < 0x80:
                        od = (od & 0x7F) | (b << 7)
                        pos += 2
                    elif data[pos + 2] < 0x80:
                        od = (od & 0x7F) | ((b & 0x7F) << 7) | (data[pos + 2] << 14)
                        pos += 3
                    else:
                        od, pos = read_uvarint32(data, pos)
                v = data[pos]
                if v < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    v = (v & 0x7F) | (data[pos + 1] << 7)
                    pos += 2
                else:
                    v, pos = read_uvarint32(data, pos)
                kpos = pos
                klen = (v >> 1) ^ -(v & 1)
                if klen < -1:
                    raise _corrupt(f"negative key length {klen}", pos)
                if klen > 0:
                    pos += klen
                    if pos > rec_end:
                        raise _corrupt(f"key of {klen} bytes overruns its record", kpos)
                v = data[pos]
                if v < 0x80:
                    pos += 1
                elif data[pos + 1] < 0x80:
                    v = (v & 0x7F) | (data[pos + 1] << 7)
                    pos += 2
                else:
                    v, pos = read_uvarint32(data, pos)
                vpos = pos
                vlen = (v >> 1) ^ -(v & 1)
                if vlen < -1:
                    raise _corrupt(f"negative value length {vlen}", pos)
                if vlen > 0:
                    pos += vlen
                    if pos > rec_end:
                        raise _corrupt(f"value of {vlen} bytes overruns its record", vpos)
                v = data[pos]
                if v < 0x80:
                    pos += 1
                else:
                    v, pos = read_uvarint32(data, pos)
                hc = (v >> 1) ^ -(v & 1)
                headers: list[tuple[str, bytes | None]] | None = None
                if hc:
                    if hc < 0:
                        raise _corrupt(f"negative header count {hc}", pos)
                    if hc > rec_end - pos:
                        raise _corrupt(f"header count {hc} exceeds the record's remaining bytes", pos)
                    headers = []
                    for _ in range(hc):
                        v = data[pos]
                        if v < 0x80:
                            pos += 1
                        else:
                            v, pos = read_uvarint32(data, pos)
                        if v & 1:
                            raise _corrupt("null or negative header key length", pos)
                        n = pos + (v >> 1)
                        if n > rec_end:
                            raise _corrupt("header key overruns its record", pos)
                        raw = data[pos:n]
                        hk = key_text.get(raw)
                        if hk is None:
                            try:
                                hk = key_text[raw] = raw.decode()
                            except UnicodeDecodeError:
                                raise _corrupt("header key is not valid UTF-8", pos) from None
                        pos = n
                        v = data[pos]
                        if v < 0x80:
                            pos += 1
                        else:
                            v, pos = read_uvarint32(data, pos)
                        if v & 1:
                            if v != 1:
                                raise _corrupt("negative header value length", pos)
                            headers.append((hk, None))
                        else:
                            n = pos + (v >> 1)
                            if n > rec_end:
                                raise _corrupt("header value overruns its record", pos)
                            headers.append((hk, data[pos:n]))
                            pos = n
                if pos != rec_end:
                    raise _corrupt(f"record fields end at byte {pos}, its length says {rec_end}", pos)
                offset = base_offset + ((od >> 1) ^ -(od & 1))
                if offset < lo or offset >= hi:
                    continue
                offsets.append(offset if offset <= high else _wrap64(offset))
                ts = (log_append_time if lat else base_timestamp + ((tsd >> 1) ^ -(tsd & 1))) * scale  # type: ignore[operator]  # lat: not None
                timestamps.append(ts if low <= ts <= high else _wrap64(ts))
                ts_types.append(ts_type)
                if want_key:
                    keys.append(None if klen < 0 else data[kpos : kpos + klen])
                if want_value:
                    values.append(None if vlen < 0 else data[vpos : vpos + vlen])
                if want_headers:
                    header_lists.append(headers)
        except IndexError:
            raise _corrupt("record data ends inside a field", pos) from None
        return pos

    def finish(self) -> tuple[Any, ...]:
        """The columns as Arrow buffers, in the C twin's layout (buffers are pyarrow ``Buffer``s)."""
        import pyarrow as pa

        def parts(arr: Any) -> tuple[Any, int, Any, Any]:
            validity, offsets, data = arr.buffers()
            return validity, arr.null_count, offsets, data

        def binary(items: list[Any], kind: Any) -> tuple[Any, int, Any, Any]:
            return parts(pa.array(items, kind))

        key = binary(self.keys, pa.binary()) if self.want_key else None
        value = binary(self.values, pa.binary()) if self.want_value else None
        headers = None
        if self.want_headers:
            lists = pa.array(
                self.header_lists, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
            )
            pairs = lists.values
            validity, list_offsets = lists.buffers()[:2]
            headers = (
                validity,
                lists.null_count,
                list_offsets,
                parts(pairs.field("key")),
                parts(pairs.field("value")),
            )
        return (
            len(self.offsets),
            self.offsets.tobytes(),
            self.timestamps.tobytes(),
            self.ts_types.tobytes(),
            key,
            value,
            headers,
        )
