"""The pure-Python twin of the columnar extension (``kafka_wire/_compiled/columnar/``).

Same interface, same checks and the same Arrow output as the C ``Columns``; used when the
extension is not built or ``KAFKA_WIRE_PURE`` is set (:mod:`kafka_wire.records.columnar` chooses).
A v2 batch is read a field at a time across its records by pyarrow's kernels
(:mod:`~kafka_wire.records.columnar_vector`); what that path does not take on, and legacy
records, go through the record loop here, whose values are collected in lists and turned into
Arrow arrays once. Integers wrap to 64 bits as the C code (and Java) does.
"""

from __future__ import annotations

from array import array
from typing import Any

from kafka_wire.records.loops import read_uvarint32, read_uvarint64

_I64_MIN = -(1 << 63)
_U64 = 1 << 64


_ZIGZAG = tuple((v >> 1) ^ -(v & 1) for v in range(1 << 14))
"""The zigzag decoding of every one- and two-byte varint (a lookup is cheaper than the arithmetic)."""


def _wrap64(v: int) -> int:
    """``v`` as a two's-complement int64 (Java's ``long`` arithmetic)."""
    return v if _I64_MIN <= v < -_I64_MIN else (v - _I64_MIN) % _U64 + _I64_MIN


def _corrupt(reason: str, offset: int) -> ValueError:
    return ValueError(reason, offset)


class Columns:
    """Growing columns of Kafka records; see the C twin for the contract of each method."""

    def __init__(self, key: bool, value: bool, headers: bool, timestamp_scale: int) -> None:
        from kafka_wire.records import columnar_vector  # pyarrow: imported once columns are made

        self._vector = columnar_vector
        self.want_key = key
        self.want_value = value
        self.want_headers = headers
        self.scale = timestamp_scale
        #: batches read by the vector path, and the rows they hold
        self.chunks: list[columnar_vector.Chunk] = []
        self.chunk_rows = 0
        # rows of the record loop since the last chunk
        self.offsets = array("q")
        self.timestamps = array("q")
        self.ts_types = array("i")
        self.keys: list[Any] = []
        self.values: list[Any] = []
        # headers flat: every header's key and value, and each row's end in them
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []
        self.header_ends = array("i", [0])

    @property
    def rows(self) -> int:
        return self.chunk_rows + len(self.offsets)

    def __len__(self) -> int:
        return self.rows

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
            for k, v in headers:
                self.header_keys.append(k)
                self.header_values.append(None if v is None else bytes(v))
            self.header_ends.append(len(self.header_keys))  # an array("i"): past 2**31 - 1 it raises

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
        vector = self._vector
        try:
            chunk, stop = vector.decode_v2(
                data,
                pos,
                end,
                count,
                base_offset,
                (base_timestamp, log_append_time, self.scale),
                (self.want_key, self.want_value, self.want_headers),
                (lo, hi),
            )
        except vector.Unfit:  # the record loop below reads it
            pass
        else:
            self._flush()
            chunk.ts_types = vector.repeat_int32(ts_type, len(chunk))
            self.chunks.append(chunk)
            self.chunk_rows += len(chunk)
            return int(stop)
        want_key, want_value, want_headers = self.want_key, self.want_value, self.want_headers
        offsets, timestamps = self.offsets, self.timestamps
        add_offset, add_timestamp = offsets.append, timestamps.append
        add_key, add_value = self.keys.append, self.values.append
        header_keys = self.header_keys
        add_header_key, add_header_value = header_keys.append, self.header_values.append
        add_header_end = self.header_ends.append
        rows_before = len(offsets)
        scale = self.scale
        low, high = _I64_MIN, -_I64_MIN - 1
        lat = log_append_time is not None
        if lat:  # every row's timestamp is the batch's
            ts = log_append_time * scale  # type: ignore[operator]  # lat: not None
            lat_ts = ts if _I64_MIN <= ts <= high else _wrap64(ts)
        key_text: dict[bytes, str] = {}
        every = lo <= base_offset - (1 << 31) and base_offset + (1 << 31) <= hi  # any int32 delta is kept
        zigzag = _ZIGZAG
        last_raw, last_len, last_key = b"", 0, ""  # the previous header key (most records repeat it)
        try:
            for i in range(count):
                if pos >= end:
                    raise _corrupt(f"batch ends after {i} of {count} declared records", pos)
                v = data[pos]
                if v < 0x80:
                    length = zigzag[v]
                    pos += 1
                else:
                    b = data[pos + 1]
                    if b < 0x80:
                        length = zigzag[(v & 0x7F) | (b << 7)]
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
                    else:
                        c = data[pos + 3]
                        if c < 0x80:
                            tsd = (tsd & 0x7F) | ((b & 0x7F) << 7) | (c << 14)
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
                    else:
                        c = data[pos + 2]
                        if c < 0x80:
                            od = (od & 0x7F) | ((b & 0x7F) << 7) | (c << 14)
                            pos += 3
                        else:
                            od, pos = read_uvarint32(data, pos)
                v = data[pos]
                if v < 0x80:
                    klen = zigzag[v]
                    pos += 1
                else:
                    b = data[pos + 1]
                    if b < 0x80:
                        klen = zigzag[(v & 0x7F) | (b << 7)]
                        pos += 2
                    else:
                        v, pos = read_uvarint32(data, pos)
                        klen = (v >> 1) ^ -(v & 1)
                kpos = pos
                if klen < -1:
                    raise _corrupt(f"negative key length {klen}", pos)
                if klen > 0:
                    pos += klen
                    if pos > rec_end:
                        raise _corrupt(f"key of {klen} bytes overruns its record", kpos)
                kend = pos
                v = data[pos]
                if v < 0x80:
                    vlen = zigzag[v]
                    pos += 1
                else:
                    b = data[pos + 1]
                    if b < 0x80:
                        vlen = zigzag[(v & 0x7F) | (b << 7)]
                        pos += 2
                    else:
                        v, pos = read_uvarint32(data, pos)
                        vlen = (v >> 1) ^ -(v & 1)
                vpos = pos
                if vlen < -1:
                    raise _corrupt(f"negative value length {vlen}", pos)
                if vlen > 0:
                    pos += vlen
                    if pos > rec_end:
                        raise _corrupt(f"value of {vlen} bytes overruns its record", vpos)
                vend = pos
                hc = data[pos]
                if hc < 0x80:
                    hc = zigzag[hc]
                    pos += 1
                else:
                    hc, pos = read_uvarint32(data, pos)
                    hc = (hc >> 1) ^ -(hc & 1)
                offset = base_offset + (zigzag[od] if od < 0x4000 else (od >> 1) ^ -(od & 1))
                keep = every or lo <= offset < hi
                hc_left = hc
                if hc:
                    if hc < 0:
                        raise _corrupt(f"negative header count {hc}", pos)
                    if hc > rec_end - pos:
                        raise _corrupt(f"header count {hc} exceeds the record's remaining bytes", pos)
                    put = keep and want_headers
                    while hc_left:
                        hc_left -= 1
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
                        if n - pos != last_len or not data.startswith(last_raw, pos):
                            last_raw = data[pos:n]
                            last_len = n - pos
                            known = key_text.get(last_raw)
                            if known is None:
                                try:
                                    known = key_text[last_raw] = last_raw.decode()
                                except UnicodeDecodeError:
                                    raise _corrupt("header key is not valid UTF-8", pos) from None
                            last_key = known
                        hk = last_key
                        pos = n
                        v = data[pos]
                        if v < 0x80:
                            pos += 1
                        else:
                            v, pos = read_uvarint32(data, pos)
                        if v & 1:
                            if v != 1:
                                raise _corrupt("negative header value length", pos)
                            if put:
                                add_header_key(hk)
                                add_header_value(None)
                        else:
                            n = pos + (v >> 1)
                            if n > rec_end:
                                raise _corrupt("header value overruns its record", pos)
                            if put:
                                add_header_key(hk)
                                add_header_value(data[pos:n])
                            pos = n
                if pos != rec_end:
                    raise _corrupt(f"record fields end at byte {pos}, its length says {rec_end}", pos)
                if not keep:
                    continue
                add_offset(offset if offset <= high else _wrap64(offset))
                if lat:
                    add_timestamp(lat_ts)
                else:
                    ts = (base_timestamp + ((tsd >> 1) ^ -(tsd & 1))) * scale
                    add_timestamp(ts if low <= ts <= high else _wrap64(ts))
                if want_key:
                    add_key(data[kpos:kend] if klen >= 0 else None)
                if want_value:
                    add_value(data[vpos:vend] if vlen >= 0 else None)
                if want_headers:
                    add_header_end(len(header_keys))
        except IndexError:
            raise _corrupt("record data ends inside a field", pos) from None
        finally:  # every row kept has its type, failure or not
            self.ts_types.extend(array("i", [ts_type]) * (len(offsets) - rows_before))
        return pos

    def _flush(self) -> None:
        """The record loop's rows so far become a chunk."""
        if self.offsets:
            self.chunks.append(
                self._vector.from_lists(
                    self.offsets,
                    self.timestamps,
                    self.ts_types,
                    self.keys if self.want_key else None,
                    self.values if self.want_value else None,
                    (self.header_ends, self.header_keys, self.header_values) if self.want_headers else None,
                )
            )
            self.chunk_rows += len(self.offsets)
            self.offsets, self.timestamps, self.ts_types = array("q"), array("q"), array("i")
            self.keys, self.values, self.header_keys, self.header_values = [], [], [], []
            self.header_ends = array("i", [0])

    def finish(self) -> Any:
        """Every row as one :class:`~kafka_wire.records.columnar_vector.Chunk` of Arrow arrays."""
        self._flush()
        return self._vector.concat(self.chunks, (self.want_key, self.want_value, self.want_headers))
