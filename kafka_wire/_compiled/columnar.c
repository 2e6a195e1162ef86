/* Columnar record decoding: v2 records straight into Arrow buffers (kafka_wire.records.columnar).
 *
 * Hand-written; built by setup.py with the compiled flavour (KAFKA_WIRE_COMPILE=1), loaded by
 * kafka_wire.records.columnar through kafka_wire.flavour. Its pure-Python twin with the same
 * interface and the same output is kafka_wire/records/columnar_pure.py; docs/internals/columnar.md
 * describes both.
 *
 * One type, Columns: a set of growing column buffers. Columns.v2() walks the records of one v2
 * batch (already decompressed by the caller) and appends the wanted columns of every record whose
 * offset is in [lo, hi); Columns.record() appends one record given as Python values (the legacy
 * path); Columns.finish() hands the buffers over as bytearrays (Arrow wraps them without a copy).
 * Every check of the per-record decoder (kafka_wire/_compiled/records.py) is made here too; bad
 * input raises ValueError(reason, offset relative to data), which the caller turns into its
 * DecodeError. Nothing here allocates a Python object per record.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Arrow's C data interface (its ABI, as the specification fixes it) */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

/* ---- growing buffers (malloc'd: export() hands them to Arrow, whose release frees them) ---- */

typedef struct {
    char *p; /* NULL while the capacity is 0 */
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int buf_init(Buf *b, Py_ssize_t cap) {
    b->p = cap > 0 ? malloc((size_t)cap) : NULL;
    if (cap > 0 && b->p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->len = 0;
    b->cap = cap;
    return 0;
}

static int buf_grow(Buf *b, Py_ssize_t need) {
    if (need > PY_SSIZE_T_MAX / 2 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = b->cap * 2;
    if (cap < b->len + need) cap = b->len + need;
    if (cap < 64) cap = 64;
    char *p = realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void buf_free(Buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* The memory, given away (the buffer is empty after): trimmed to its contents. */
static char *buf_take(Buf *b) {
    char *p = b->p;
    if (p != NULL && b->len < b->cap / 2) {
        char *q = realloc(p, b->len > 0 ? (size_t)b->len : 1);
        if (q != NULL) p = q;
    }
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

static inline int buf_reserve(Buf *b, Py_ssize_t need) {
    return (b->len + need <= b->cap) ? 0 : buf_grow(b, need);
}

static inline void put_i64(Buf *b, int64_t v) { memcpy(b->p + b->len, &v, 8); b->len += 8; }
static inline void put_i32(Buf *b, int32_t v) { memcpy(b->p + b->len, &v, 4); b->len += 4; }

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Room for n more bytes; the common case inline, growth out of line. */
static inline int buf_room(Buf *b, Py_ssize_t n) {
    return LIKELY(b->cap - b->len >= n) ? 0 : buf_grow(b, n);
}

/* A validity bitmap (LSB first) with its null count, written only once a null is seen: while
 * nulls == 0 the column has no bitmap (Arrow's "all valid"), so the common case costs one test. */
typedef struct {
    Buf bits;
    Py_ssize_t nulls;
} Bitmap;

static int bitmap_slow(Bitmap *m, Py_ssize_t i, int valid) {
    if (m->nulls == 0) { /* the first null: rows [0, i) were all valid */
        Py_ssize_t full = i >> 3;
        if (buf_reserve(&m->bits, full + 1) < 0) return -1;
        memset(m->bits.p, 0xFF, (size_t)full);
        m->bits.len = full;
        if (i & 7) m->bits.p[m->bits.len++] = (char)((1u << (i & 7)) - 1u);
    }
    if ((i & 7) == 0) {
        if (buf_reserve(&m->bits, 1) < 0) return -1;
        m->bits.p[m->bits.len++] = 0;
    }
    if (valid) m->bits.p[i >> 3] |= (char)(1 << (i & 7));
    else m->nulls++;
    return 0;
}

static inline __attribute__((always_inline)) int bitmap_set(Bitmap *m, Py_ssize_t i, int valid) {
    if (LIKELY(m->nulls == 0 && valid)) return 0;
    return bitmap_slow(m, i, valid);
}

/* A nullable binary (or string) column: validity, int32 offsets, data. */
typedef struct {
    Bitmap valid;
    Buf offsets;
    Buf data;
} Binary;

static int binary_init(Binary *c) {
    if (buf_init(&c->valid.bits, 0) < 0 || buf_init(&c->offsets, 4) < 0 || buf_init(&c->data, 0) < 0)
        return -1;
    c->valid.nulls = 0;
    put_i32(&c->offsets, 0);
    return 0;
}

static int too_long(void) {
    PyErr_SetString(PyExc_OverflowError, "a column of one Arrow batch holds at most 2 GiB");
    return -1;
}

/* Append one value (n < 0: null); room for the offset and the data made by the caller. A value of
 * at most 16 bytes is copied as 16 (one move, no call) when the source has 16 bytes before
 * src_end and the data buffer SLACK bytes of room past the value (v2 makes it). */
#define SLACK 16
static inline __attribute__((always_inline)) int binary_put(Binary *c, Py_ssize_t row, const char *src, Py_ssize_t n,
                                                            const char *src_end) {
    if (bitmap_set(&c->valid, row, n >= 0) < 0) return -1;
    if (n > 0) {
        if (UNLIKELY(c->data.len + n > INT32_MAX)) return too_long();
        char *dst = c->data.p + c->data.len;
        if (n <= SLACK && src_end - src >= SLACK) memcpy(dst, src, SLACK);
        else memcpy(dst, src, (size_t)n);
        c->data.len += n;
    }
    put_i32(&c->offsets, (int32_t)c->data.len);
    return 0;
}

static int binary_append(Binary *c, Py_ssize_t row, const char *src, Py_ssize_t n) {
    if (buf_room(&c->offsets, 4) < 0 || (n > 0 && buf_room(&c->data, n) < 0)) return -1;
    return binary_put(c, row, src, n, src); /* no copy past the value */
}

static void binary_clear(Binary *c) {
    buf_free(&c->valid.bits);
    buf_free(&c->offsets);
    buf_free(&c->data);
}

/* ---- the Columns type ---- */

typedef struct {
    PyObject_HEAD
    int want_key, want_value, want_headers, ready;
    int64_t ts_scale;
    Py_ssize_t rows;
    Buf offset, timestamp, ts_type; /* int64, int64, int32 */
    Binary key, value;
    Bitmap has_headers; /* the headers list's validity: null when a record has none */
    Buf header_ends;    /* int32 list offsets */
    Py_ssize_t header_count;
    Binary header_key, header_value;
    const char *last_key; /* the last header key validated as UTF-8 (in the current v2 data) */
    Py_ssize_t last_key_len;
    struct ArrowArray exported; /* export()'s root, until pyarrow moves it out (release NULL after) */
} Columns;

static void columns_clear(Columns *self) {
    buf_free(&self->offset);
    buf_free(&self->timestamp);
    buf_free(&self->ts_type);
    binary_clear(&self->key);
    binary_clear(&self->value);
    buf_free(&self->has_headers.bits);
    buf_free(&self->header_ends);
    binary_clear(&self->header_key);
    binary_clear(&self->header_value);
}

static void columns_dealloc(Columns *self) {
    columns_clear(self);
    if (self->exported.release != NULL) self->exported.release(&self->exported); /* never imported */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int columns_init(Columns *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"key", "value", "headers", "timestamp_scale", NULL};
    int k, v, h;
    long long scale;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "pppL", names, &k, &v, &h, &scale)) return -1;
    columns_clear(self);
    if (self->exported.release != NULL) self->exported.release(&self->exported);
    self->want_key = k;
    self->want_value = v;
    self->want_headers = h;
    self->ts_scale = scale;
    self->rows = 0;
    self->header_count = 0;
    self->last_key = NULL;
    self->last_key_len = 0;
    self->ready = 0;
    if (buf_init(&self->offset, 0) < 0 || buf_init(&self->timestamp, 0) < 0 || buf_init(&self->ts_type, 0) < 0 ||
        binary_init(&self->key) < 0 || binary_init(&self->value) < 0 ||
        buf_init(&self->has_headers.bits, 0) < 0 || buf_init(&self->header_ends, 4) < 0 ||
        binary_init(&self->header_key) < 0 || binary_init(&self->header_value) < 0)
        return -1;
    self->has_headers.nulls = 0;
    put_i32(&self->header_ends, 0);
    self->ready = 1;
    return 0;
}

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

static inline int append_row(Columns *self, int64_t offset, int64_t timestamp, int32_t ts_type) {
    if (buf_reserve(&self->offset, 8) < 0 || buf_reserve(&self->timestamp, 8) < 0 || buf_reserve(&self->ts_type, 4) < 0)
        return -1;
    put_i64(&self->offset, offset);
    put_i64(&self->timestamp, (int64_t)((uint64_t)timestamp * (uint64_t)self->ts_scale));
    put_i32(&self->ts_type, ts_type);
    return 0;
}

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
static PyObject *columns_v2(Columns *self, PyObject *args) {
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
        if (UNLIKELY(klen < -1)) {
            char msg[64];
            snprintf(msg, sizeof msg, "negative key length %d", (int)klen);
            FAIL(msg, pos);
        }
        if (UNLIKELY(klen > rec_end - pos)) {
            char msg[80];
            snprintf(msg, sizeof msg, "key of %d bytes overruns its record", (int)klen);
            FAIL(msg, pos);
        }
        const Py_ssize_t kpos = pos;
        if (klen > 0) pos += klen;
        /* value */
        READ(u, rec_end);
        const int32_t vlen = ZZ32(u);
        if (UNLIKELY(vlen < -1)) {
            char msg[64];
            snprintf(msg, sizeof msg, "negative value length %d", (int)vlen);
            FAIL(msg, pos);
        }
        if (UNLIKELY(vlen > rec_end - pos)) {
            char msg[80];
            snprintf(msg, sizeof msg, "value of %d bytes overruns its record", (int)vlen);
            FAIL(msg, pos);
        }
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

/* Binary data of a Python value (bytes-like or None) for record(). */
static int value_bytes(PyObject *o, Py_buffer *view) {
    if (o == Py_None) { view->obj = NULL; view->len = -1; view->buf = NULL; return 0; }
    return PyObject_GetBuffer(o, view, PyBUF_SIMPLE);
}

/* Columns.record(offset, timestamp, ts_type, key, value, headers) for records made elsewhere (legacy). */
static PyObject *columns_record(Columns *self, PyObject *args) {
    long long offset, timestamp;
    int ts_type;
    PyObject *key, *value, *headers;
    if (!self->ready) return PyErr_Format(PyExc_RuntimeError, "Columns is not initialised");
    if (!PyArg_ParseTuple(args, "LLiOOO", &offset, &timestamp, &ts_type, &key, &value, &headers)) return NULL;
    Py_ssize_t row = self->rows;
    if (append_row(self, offset, timestamp, ts_type) < 0) return NULL;
    Py_buffer kb, vb;
    if (value_bytes(key, &kb) < 0) return NULL;
    if (value_bytes(value, &vb) < 0) { if (kb.obj) PyBuffer_Release(&kb); return NULL; }
    int bad = (self->want_key && binary_append(&self->key, row, kb.buf, kb.len) < 0) ||
              (self->want_value && binary_append(&self->value, row, vb.buf, vb.len) < 0);
    if (kb.obj) PyBuffer_Release(&kb);
    if (vb.obj) PyBuffer_Release(&vb);
    if (bad) return NULL;
    if (self->want_headers) {
        Py_ssize_t n = PyObject_Length(headers);
        if (n < 0) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = PySequence_GetItem(headers, i);
            if (pair == NULL) return NULL;
            PyObject *hk = PySequence_GetItem(pair, 0), *hv = PySequence_GetItem(pair, 1);
            Py_DECREF(pair);
            if (hk == NULL || hv == NULL) { Py_XDECREF(hk); Py_XDECREF(hv); return NULL; }
            Py_ssize_t klen;
            const char *ks = PyUnicode_AsUTF8AndSize(hk, &klen);
            Py_buffer hb;
            int fail = ks == NULL || value_bytes(hv, &hb) < 0;
            if (!fail) {
                fail = binary_append(&self->header_key, self->header_count, ks, klen) < 0 ||
                       binary_append(&self->header_value, self->header_count, hb.buf, hb.len) < 0;
                if (hb.obj) PyBuffer_Release(&hb);
                self->header_count++;
            }
            Py_DECREF(hk);
            Py_DECREF(hv);
            if (fail) return NULL;
        }
        if (bitmap_set(&self->has_headers, row, n > 0) < 0 || buf_reserve(&self->header_ends, 4) < 0) return NULL;
        put_i32(&self->header_ends, (int32_t)self->header_count);
    }
    self->rows = row + 1;
    Py_RETURN_NONE;
}

/* ---- export: the columns as one Arrow record batch, through Arrow's C data interface ---------- */


#define MAX_COLUMNS 8
#define MAX_OWNED 32

/* Everything one export holds: the child arrays and their buffer lists (the root array is the
 * Columns object's, which pyarrow moves out of it), and the buffers, freed by the root's release. */
typedef struct {
    struct ArrowArray columns[MAX_COLUMNS], pairs, fields[2];
    struct ArrowArray *column_list[MAX_COLUMNS], *pairs_list[1], *field_list[2];
    const void *root_buffers[1], *column_buffers[MAX_COLUMNS][3], *pairs_buffers[1], *field_buffers[2][3];
    void *owned[MAX_OWNED];
    int n_owned;
} Export;

static void export_free(Export *e) {
    for (int i = 0; i < e->n_owned; i++) free(e->owned[i]);
    free(e);
}

/* A child's memory is its root's: releasing it only marks it released. */
static void release_child(struct ArrowArray *a) { a->release = NULL; }

static void release_root(struct ArrowArray *a) {
    if (a->release == NULL) return;
    Export *e = a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL) a->children[i]->release(a->children[i]);
    if (e->pairs.release != NULL) e->pairs.release(&e->pairs);
    for (int i = 0; i < 2; i++)
        if (e->fields[i].release != NULL) e->fields[i].release(&e->fields[i]);
    export_free(e);
    a->release = NULL;
}

/* A buffer's memory, now the export's (Arrow wants a pointer even for no bytes). */
static const void *own(Export *e, char *p) {
    if (p == NULL && (p = malloc(1)) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (e->n_owned == MAX_OWNED) { /* cannot happen: at most 20 buffers */
        free(p);
        PyErr_SetString(PyExc_RuntimeError, "too many buffers");
        return NULL;
    }
    e->owned[e->n_owned++] = p;
    return p;
}

static void array_init(struct ArrowArray *a, int64_t length, int64_t nulls, const void **buffers, int64_t n_buffers) {
    memset(a, 0, sizeof *a);
    a->length = length;
    a->null_count = nulls;
    a->buffers = buffers;
    a->n_buffers = n_buffers;
    a->release = release_child;
}

static int export_fixed(Export *e, struct ArrowArray *a, const void **bufs, Buf *b, int64_t rows) {
    bufs[0] = NULL;
    if ((bufs[1] = own(e, buf_take(b))) == NULL) return -1;
    array_init(a, rows, 0, bufs, 2);
    return 0;
}

static int export_binary(Export *e, struct ArrowArray *a, const void **bufs, Binary *c, int64_t rows) {
    bufs[0] = NULL;
    if (c->valid.nulls > 0 && (bufs[0] = own(e, buf_take(&c->valid.bits))) == NULL) return -1;
    if ((bufs[1] = own(e, buf_take(&c->offsets))) == NULL || (bufs[2] = own(e, buf_take(&c->data))) == NULL) return -1;
    array_init(a, rows, c->valid.nulls, bufs, 3);
    return 0;
}

/* Columns.export(layout, topic, partition) -> address of an ArrowArray (a struct array: the
 * record batch) for pyarrow.RecordBatch._import_from_c with the batch's schema. layout has one
 * letter per column, in the schema's order: k(ey) v(alue) t(opic) p(artition) o(ffset)
 * s (timestamp) y (timestampType) h(eaders); topic is its UTF-8. The object is spent after. */
static PyObject *columns_export(Columns *self, PyObject *args) {
    const char *layout, *topic;
    Py_ssize_t n_columns, topic_len;
    int partition;
    if (!self->ready) return PyErr_Format(PyExc_RuntimeError, "Columns is not initialised or already finished");
    if (!PyArg_ParseTuple(args, "s#y#i", &layout, &n_columns, &topic, &topic_len, &partition)) return NULL;
    if (n_columns > MAX_COLUMNS) return PyErr_Format(PyExc_ValueError, "at most %d columns", MAX_COLUMNS);
    const int64_t rows = self->rows;
    Export *e = calloc(1, sizeof(Export));
    if (e == NULL) return PyErr_NoMemory();
    self->ready = 0;
    for (Py_ssize_t i = 0; i < n_columns; i++) {
        struct ArrowArray *a = &e->columns[i];
        const void **bufs = e->column_buffers[i];
        e->column_list[i] = a;
        int rc = 0;
        switch (layout[i]) {
        case 'k':
        case 'v': {
            int wanted = layout[i] == 'k' ? self->want_key : self->want_value;
            if (!wanted) {
                PyErr_SetString(PyExc_ValueError, "a column export() was not asked to collect");
                rc = -1;
            } else {
                rc = export_binary(e, a, bufs, layout[i] == 'k' ? &self->key : &self->value, rows);
            }
            break;
        }
        case 't': {
            if (topic_len > 0 && rows > INT32_MAX / topic_len) {
                PyErr_SetString(PyExc_OverflowError, "a column of one Arrow batch holds at most 2 GiB");
                rc = -1;
                break;
            }
            Buf offs, data;
            if (buf_init(&offs, 4 * (rows + 1)) < 0) { rc = -1; break; }
            if (buf_init(&data, topic_len * rows) < 0) { buf_free(&offs); rc = -1; break; }
            for (int64_t r = 0; r <= rows; r++) put_i32(&offs, (int32_t)(r * topic_len));
            for (int64_t r = 0; r < rows; r++) {
                memcpy(data.p + data.len, topic, (size_t)topic_len);
                data.len += topic_len;
            }
            bufs[0] = NULL;
            if ((bufs[1] = own(e, buf_take(&offs))) == NULL) { buf_free(&data); rc = -1; break; }
            if ((bufs[2] = own(e, buf_take(&data))) == NULL) { rc = -1; break; }
            array_init(a, rows, 0, bufs, 3);
            break;
        }
        case 'p': {
            Buf b;
            if (buf_init(&b, 4 * rows) < 0) { rc = -1; break; }
            for (int64_t r = 0; r < rows; r++) put_i32(&b, partition);
            rc = export_fixed(e, a, bufs, &b, rows);
            break;
        }
        case 'o': rc = export_fixed(e, a, bufs, &self->offset, rows); break;
        case 's': rc = export_fixed(e, a, bufs, &self->timestamp, rows); break;
        case 'y': rc = export_fixed(e, a, bufs, &self->ts_type, rows); break;
        case 'h': {
            if (!self->want_headers) {
                PyErr_SetString(PyExc_ValueError, "a column export() was not asked to collect");
                rc = -1;
                break;
            }
            int64_t count = self->header_count;
            if (export_binary(e, &e->fields[0], e->field_buffers[0], &self->header_key, count) < 0 ||
                export_binary(e, &e->fields[1], e->field_buffers[1], &self->header_value, count) < 0) {
                rc = -1;
                break;
            }
            e->field_list[0] = &e->fields[0];
            e->field_list[1] = &e->fields[1];
            e->pairs_buffers[0] = NULL;
            array_init(&e->pairs, count, 0, e->pairs_buffers, 1);
            e->pairs.n_children = 2;
            e->pairs.children = e->field_list;
            e->pairs_list[0] = &e->pairs;
            bufs[0] = NULL;
            if (self->has_headers.nulls > 0 && (bufs[0] = own(e, buf_take(&self->has_headers.bits))) == NULL) {
                rc = -1;
                break;
            }
            if ((bufs[1] = own(e, buf_take(&self->header_ends))) == NULL) { rc = -1; break; }
            array_init(a, rows, self->has_headers.nulls, bufs, 2);
            a->n_children = 1;
            a->children = e->pairs_list;
            break;
        }
        default:
            PyErr_Format(PyExc_ValueError, "unknown column letter %c", layout[i]);
            rc = -1;
        }
        if (rc < 0) {
            export_free(e);
            columns_clear(self);
            return NULL;
        }
    }
    struct ArrowArray *root = &self->exported;
    e->root_buffers[0] = NULL;
    array_init(root, rows, 0, e->root_buffers, 1);
    root->n_children = n_columns;
    root->children = e->column_list;
    root->private_data = e;
    root->release = release_root;
    columns_clear(self);
    return PyLong_FromVoidPtr(root);
}

static PyObject *columns_len_get(Columns *self, void *closure) { return PyLong_FromSsize_t(self->rows); }

static Py_ssize_t columns_len(Columns *self) { return self->rows; }

static PyMethodDef columns_methods[] = {
    {"v2", (PyCFunction)columns_v2, METH_VARARGS, "Append the wanted columns of one v2 batch's records."},
    {"record", (PyCFunction)columns_record, METH_VARARGS, "Append one record given as values."},
    {"export", (PyCFunction)columns_export, METH_VARARGS, "The columns as an Arrow C data interface struct array."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef columns_getset[] = {
    {"rows", (getter)columns_len_get, NULL, "Rows appended so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods columns_as_sequence = {.sq_length = (lenfunc)columns_len};

static PyTypeObject ColumnsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire._compiled.columnar.Columns",
    .tp_basicsize = sizeof(Columns),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Growing Arrow buffers of Kafka records (see kafka_wire.records.columnar).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)columns_init,
    .tp_dealloc = (destructor)columns_dealloc,
    .tp_methods = columns_methods,
    .tp_getset = columns_getset,
    .tp_as_sequence = &columns_as_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafka_wire._compiled.columnar",
    "Columnar record decoding into Arrow buffers (see kafka_wire.records.columnar).", -1, NULL,
};

PyMODINIT_FUNC PyInit_columnar(void) {
    if (PyType_Ready(&ColumnsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Columns", (PyObject *)&ColumnsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
