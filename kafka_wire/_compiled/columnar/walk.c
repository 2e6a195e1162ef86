/* Columns.v2: one v2 batch's records walked once, the wanted fields written straight into the
 * column buffers (see columnar.c). */
#include "columnar.h"

static PyObject *corrupt(const char *reason, Py_ssize_t offset) {
    PyObject *v = Py_BuildValue("(sn)", reason, offset);
    if (v != NULL) {
        PyErr_SetObject(PyExc_ValueError, v);
        Py_DECREF(v);
    }
    return NULL;
}

/* Strict UTF-8 (as Python's decoder: no overlong forms, no surrogates, nothing past U+10FFFF). */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && s[i + 1] < 0xA0) return 0;
            if (c == 0xED && s[i + 1] > 0x9F) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && s[i + 1] < 0x90) return 0;
            if (c == 0xF4 && s[i + 1] > 0x8F) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* An unsigned varint read at a position: where it ends and its value, or pos -1 when the input
 * ends first, -2 when it is longer than its most bytes (5 for an int, 10 for a long; an int keeps
 * its low 32 bits, as Java's reader). Returned by value, so the walk's position stays in a register. */
typedef struct {
    Py_ssize_t pos;
    uint64_t v;
} Varint;

static __attribute__((noinline)) Varint varint_slow(const unsigned char *d, Py_ssize_t end, Py_ssize_t p,
                                                    int most) {
    uint64_t v = 0;
    for (int i = 0; i < most; i++) {
        if (p >= end) return (Varint){-1, 0};
        unsigned char b = d[p++];
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) return (Varint){p, v};
    }
    return (Varint){-2, 0};
}

/* The one- and two-byte varints (lengths, deltas of small batches) inline, the rest out of line. */
static inline __attribute__((always_inline)) Varint read_u32(const unsigned char *d, Py_ssize_t end, Py_ssize_t p) {
    if (LIKELY(p + 1 < end)) {
        uint32_t b0 = d[p], b1 = d[p + 1];
        if (b0 < 0x80) return (Varint){p + 1, b0};
        if (b1 < 0x80) return (Varint){p + 2, (b0 & 0x7F) | (b1 << 7)};
    }
    Varint r = varint_slow(d, end, p, 5);
    r.v = (uint32_t)r.v;
    return r;
}

/* Up to three bytes inline (a timestamp delta of up to a few seconds). */
static inline __attribute__((always_inline)) Varint read_u64(const unsigned char *d, Py_ssize_t end, Py_ssize_t p) {
    if (LIKELY(p + 2 < end)) {
        uint64_t b0 = d[p], b1 = d[p + 1], b2 = d[p + 2];
        if (b0 < 0x80) return (Varint){p + 1, b0};
        if (b1 < 0x80) return (Varint){p + 2, (b0 & 0x7F) | (b1 << 7)};
        if (b2 < 0x80) return (Varint){p + 3, (b0 & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)};
    }
    return varint_slow(d, end, p, 10);
}

#define ENDS_INSIDE "record data ends inside a field"
#define ZZ32(u) ((int32_t)(((u) >> 1) ^ (0u - ((u) & 1u))))

/* Whether n bytes are all ASCII (a header key almost always is: valid UTF-8 without more ado). */
static inline int all_ascii(const unsigned char *s, Py_ssize_t n) {
    uint64_t acc = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++) acc |= s[i];
    return (acc & 0x8080808080808080ull) == 0;
}

#define FAIL(reason, at) do { corrupt((reason), (at)); goto done; } while (0)
/* u = the varint at pos (an int, or a long with LONG), pos moved past it; the errors at the byte
 * the per-record decoder names (the varint's start when the input ends, past its most bytes when
 * it is too long) */
#define READ(u, limit)                                                                                                 \
    do {                                                                                                               \
        Varint r_ = read_u32(d, (limit), pos);                                                                         \
        if (UNLIKELY(r_.pos < 0)) {                                                                                    \
            if (r_.pos == -1) FAIL(ENDS_INSIDE, pos);                                                                  \
            FAIL("varint longer than 5 bytes", pos + 5);                                                               \
        }                                                                                                              \
        pos = r_.pos;                                                                                                  \
        (u) = (uint32_t)r_.v;                                                                                          \
    } while (0)
#define READ_LONG(u, limit)                                                                                            \
    do {                                                                                                               \
        Varint r_ = read_u64(d, (limit), pos);                                                                         \
        if (UNLIKELY(r_.pos < 0)) {                                                                                    \
            if (r_.pos == -1) FAIL(ENDS_INSIDE, pos);                                                                  \
            FAIL("varlong longer than 10 bytes", pos + 10);                                                            \
        }                                                                                                              \
        pos = r_.pos;                                                                                                  \
        (u) = r_.v;                                                                                                    \
    } while (0)

/* A key's or value's length (-1: null) at pos, the error the per-record decoder gives when it is
 * below -1 or runs past limit */
#define CHECK_LENGTH(len, what, limit)                                                                                 \
    do {                                                                                                               \
        if (UNLIKELY((len) < -1)) {                                                                                    \
            char msg_[64];                                                                                             \
            snprintf(msg_, sizeof msg_, "negative " what " length %d", (int)(len));                                    \
            FAIL(msg_, pos);                                                                                           \
        }                                                                                                              \
        if (UNLIKELY((len) > (limit) - pos)) {                                                                         \
            char msg_[80];                                                                                             \
            snprintf(msg_, sizeof msg_, what " of %d bytes overruns its record", (int)(len));                          \
            FAIL(msg_, pos);                                                                                           \
        }                                                                                                              \
    } while (0)

/* Where v2 writes a binary column: kept in locals during the walk (a store through a char pointer
 * would otherwise make the compiler reload every length from the object), stored back after. */
typedef struct {
    char *data;
    Py_ssize_t len;
    char *offs; /* the next offset's place */
} Cursor;

static inline void cursor_load(Cursor *c, const Binary *b) {
    c->data = b->data.p;
    c->len = b->data.len;
    c->offs = b->offsets.p + b->offsets.len;
}

static inline void cursor_store(const Cursor *c, Binary *b) {
    b->data.len = c->len;
    b->offsets.len = c->offs - b->offsets.p;
}

/* Append one value (n < 0: null); the room is there. A value of at most SLACK bytes is copied as
 * SLACK bytes (one move, no call) when the source has that many before src_end. */
static inline __attribute__((always_inline)) int cursor_put(Cursor *c, Bitmap *valid, Py_ssize_t row, const char *src,
                                                            Py_ssize_t n, const char *src_end) {
    if (bitmap_set(valid, row, n >= 0) < 0) return -1;
    if (n > 0) {
        if (UNLIKELY(c->len + n > INT32_MAX)) return too_long();
        char *dst = c->data + c->len;
        if (n <= SLACK && src_end - src >= SLACK) memcpy(dst, src, SLACK);
        else memcpy(dst, src, (size_t)n);
        c->len += n;
    }
    int32_t end = (int32_t)c->len;
    memcpy(c->offs, &end, 4);
    c->offs += 4;
    return 0;
}

/* Columns.v2(data, pos, end, count, base_offset, base_timestamp, log_append_time, ts_type, lo, hi) -> end position
 *
 * One pass over the records: each field is checked (every length against what is left of its
 * record, every varint against its end) and the wanted ones are written straight into the column
 * buffers, whose room is made once per batch (count rows; the batch's bytes for each data
 * buffer) but for the header offsets (once per record), so the copies themselves check nothing. */
PyObject *columns_v2(Columns *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos_arg, end_arg, count_arg;
    long long base_offset_arg, base_ts_arg, lo_arg, hi_arg, lat;
    int ts_type_arg;
    PyObject *lat_obj;
    if (!self->ready) return PyErr_Format(PyExc_RuntimeError, "Columns is not initialised");
    if (!PyArg_ParseTuple(args, "y*nnnLLOiLL", &view, &pos_arg, &end_arg, &count_arg, &base_offset_arg, &base_ts_arg,
                          &lat_obj, &ts_type_arg, &lo_arg, &hi_arg))
        return NULL;
    /* copies whose address is never taken: they stay in registers across the calls of the walk */
    Py_ssize_t pos = pos_arg;
    const Py_ssize_t end = end_arg, count = count_arg;
    const int64_t base_offset = base_offset_arg, base_ts = base_ts_arg, lo = lo_arg, hi = hi_arg;
    const int32_t ts_type = ts_type_arg;
    PyObject *result = NULL;
    const unsigned char *d = (const unsigned char *)view.buf;
    const int has_lat = lat_obj != Py_None;
    const int want_key = self->want_key, want_value = self->want_value, want_headers = self->want_headers;
    const uint64_t scale = (uint64_t)self->ts_scale;
    int loaded = 0; /* the cursors hold the state (stored back at done) */
    Cursor key, value, hkey, hvalue;
    char *offsets = NULL, *stamps = NULL, *types = NULL, *ends = NULL;
    Py_ssize_t rows = self->rows, header_count = self->header_count;
    if (has_lat) {
        lat = PyLong_AsLongLong(lat_obj);
        if (lat == -1 && PyErr_Occurred()) goto done;
    } else {
        lat = 0;
    }
    if (pos < 0 || end > view.len || pos > end || count < 0) {
        PyErr_SetString(PyExc_ValueError, "records range outside the data");
        goto done;
    }
    if (count > (end - pos) / 7) {
        char msg[160];
        snprintf(msg, sizeof msg, "%zd records cannot fit in %zd bytes (a record takes at least 7)", count, end - pos);
        FAIL(msg, pos);
    }
    /* room for every row of the batch in the fixed-width columns (count <= bytes / 7 bounds it),
     * and for the data: the keys (values, header keys, header values) of the batch take at most
     * its bytes; room not used is never touched (and given back by export) */
    const Py_ssize_t bytes = end - pos + SLACK;
    if (buf_room(&self->offset, 8 * count) < 0 || buf_room(&self->timestamp, 8 * count) < 0 ||
        buf_room(&self->ts_type, 4 * count) < 0 ||
        (want_key && (buf_room(&self->key.offsets, 4 * count) < 0 || buf_room(&self->key.data, bytes) < 0)) ||
        (want_value && (buf_room(&self->value.offsets, 4 * count) < 0 || buf_room(&self->value.data, bytes) < 0)) ||
        (want_headers && (buf_room(&self->header_ends, 4 * count) < 0 || buf_room(&self->header_key.data, bytes) < 0 ||
                          buf_room(&self->header_value.data, bytes) < 0)))
        goto done;
    const char *src_end = (const char *)d + view.len;
    cursor_load(&key, &self->key);
    cursor_load(&value, &self->value);
    cursor_load(&hkey, &self->header_key);
    cursor_load(&hvalue, &self->header_value);
    offsets = self->offset.p + self->offset.len;
    stamps = self->timestamp.p + self->timestamp.len;
    types = self->ts_type.p + self->ts_type.len;
    ends = self->header_ends.p + self->header_ends.len;
    loaded = 1;
    self->last_key = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t u;
        uint64_t u64;
        if (UNLIKELY(pos >= end)) {
            char msg[96];
            snprintf(msg, sizeof msg, "batch ends after %zd of %zd declared records", i, count);
            FAIL(msg, pos);
        }
        /* length */
        READ(u, end);
        const int32_t length = ZZ32(u);
        const Py_ssize_t rec_end = pos + length;
        if (UNLIKELY(rec_end > end)) {
            char msg[112];
            snprintf(msg, sizeof msg, "record length %d overruns the batch (%zd bytes left)", (int)length, end - pos);
            FAIL(msg, pos);
        }
        if (UNLIKELY(length < 0)) FAIL("negative record length", pos);
        /* attributes, timestampDelta (varlong), offsetDelta (varint) */
        pos += 1;
        if (UNLIKELY(pos > rec_end)) FAIL(ENDS_INSIDE, pos);
        READ_LONG(u64, rec_end);
        const int64_t tsd = (int64_t)((u64 >> 1) ^ (0ull - (u64 & 1ull)));
        READ(u, rec_end);
        const int64_t offset = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)ZZ32(u));
        /* key */
        READ(u, rec_end);
        const int32_t klen = ZZ32(u);
        CHECK_LENGTH(klen, "key", rec_end);
        const Py_ssize_t kpos = pos;
        if (klen > 0) pos += klen;
        /* value */
        READ(u, rec_end);
        const int32_t vlen = ZZ32(u);
        CHECK_LENGTH(vlen, "value", rec_end);
        const Py_ssize_t vpos = pos;
        if (vlen > 0) pos += vlen;
        /* headers */
        READ(u, rec_end);
        const int32_t hc = ZZ32(u);
        if (UNLIKELY(hc < 0)) {
            char msg[64];
            snprintf(msg, sizeof msg, "negative header count %d", (int)hc);
            FAIL(msg, pos);
        }
        if (UNLIKELY(hc > rec_end - pos)) {
            char msg[96];
            snprintf(msg, sizeof msg, "header count %d exceeds the record's remaining bytes", (int)hc);
            FAIL(msg, pos);
        }
        const int keep = offset >= lo && offset < hi;
        const int put_headers = keep && want_headers && hc > 0;
        if (put_headers) { /* room for hc more header offsets in both columns */
            Py_ssize_t need = 4 * (Py_ssize_t)hc;
            if (UNLIKELY(self->header_key.offsets.p + self->header_key.offsets.cap - hkey.offs < need ||
                         self->header_value.offsets.p + self->header_value.offsets.cap - hvalue.offs < need)) {
                cursor_store(&hkey, &self->header_key);
                cursor_store(&hvalue, &self->header_value);
                if (buf_room(&self->header_key.offsets, need) < 0 || buf_room(&self->header_value.offsets, need) < 0) {
                    cursor_load(&hkey, &self->header_key);
                    cursor_load(&hvalue, &self->header_value);
                    goto done;
                }
                cursor_load(&hkey, &self->header_key);
                cursor_load(&hvalue, &self->header_value);
            }
            if (UNLIKELY(header_count > INT32_MAX - hc)) {
                PyErr_SetString(PyExc_OverflowError, "a column of one Arrow batch holds at most 2**31 headers");
                goto done;
            }
        }
        for (int32_t h = 0; h < hc; h++) {
            READ(u, rec_end);
            const int32_t n = ZZ32(u);
            if (UNLIKELY(n < 0)) FAIL("null or negative header key length", pos);
            if (UNLIKELY(n > rec_end - pos)) FAIL("header key overruns its record", pos);
            const unsigned char *hk = d + pos;
            if (UNLIKELY(!all_ascii(hk, n)) &&
                !(self->last_key != NULL && self->last_key_len == n && memcmp(self->last_key, hk, n) == 0)) {
                if (!valid_utf8(hk, n)) FAIL("header key is not valid UTF-8", pos);
                self->last_key = (const char *)hk;
                self->last_key_len = n;
            }
            pos += n;
            READ(u, rec_end);
            const int32_t m = ZZ32(u);
            if (UNLIKELY(m < -1)) FAIL("negative header value length", pos);
            if (UNLIKELY(m > rec_end - pos)) FAIL("header value overruns its record", pos);
            if (put_headers) {
                if (cursor_put(&hkey, &self->header_key.valid, header_count, (const char *)hk, n, src_end) < 0 ||
                    cursor_put(&hvalue, &self->header_value.valid, header_count, (const char *)d + pos, m, src_end) < 0)
                    goto done;
                header_count++;
            }
            if (m > 0) pos += m;
        }
        if (UNLIKELY(pos != rec_end)) {
            char msg[96];
            snprintf(msg, sizeof msg, "record fields end at byte %zd, its length says %zd", pos, rec_end);
            FAIL(msg, pos);
        }
        if (!keep) continue;
        const int64_t ts = (int64_t)((uint64_t)(has_lat ? lat : (int64_t)((uint64_t)base_ts + (uint64_t)tsd)) * scale);
        memcpy(offsets, &offset, 8);
        offsets += 8;
        memcpy(stamps, &ts, 8);
        stamps += 8;
        memcpy(types, &ts_type, 4);
        types += 4;
        if (want_key && cursor_put(&key, &self->key.valid, rows, (const char *)d + kpos, klen, src_end) < 0) goto done;
        if (want_value && cursor_put(&value, &self->value.valid, rows, (const char *)d + vpos, vlen, src_end) < 0)
            goto done;
        if (want_headers) {
            if (bitmap_set(&self->has_headers, rows, hc > 0) < 0) goto done;
            int32_t e = (int32_t)header_count;
            memcpy(ends, &e, 4);
            ends += 4;
        }
        rows++;
    }
    result = PyLong_FromSsize_t(pos);
done:
    if (loaded) { /* what was appended stays (a failed batch leaves its earlier records, as before) */
        cursor_store(&key, &self->key);
        cursor_store(&value, &self->value);
        cursor_store(&hkey, &self->header_key);
        cursor_store(&hvalue, &self->header_value);
        self->offset.len = offsets - self->offset.p;
        self->timestamp.len = stamps - self->timestamp.p;
        self->ts_type.len = types - self->ts_type.p;
        self->header_ends.len = ends - self->header_ends.p;
        self->rows = rows;
        self->header_count = header_count;
    }
    self->last_key = NULL;
    PyBuffer_Release(&view);
    return result;
}
