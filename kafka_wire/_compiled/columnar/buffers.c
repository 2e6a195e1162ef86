/* Growing buffers, validity bitmaps and binary columns of Columns (see columnar.c). */
#include "columnar.h"

int buf_init(Buf *b, Py_ssize_t cap, int role) {
    b->role = role;
    b->p = NULL;
    b->len = b->cap = 0;
    return cap > 0 ? buf_grow(b, cap) : 0;
}

int buf_grow(Buf *b, Py_ssize_t need) {
    if (need > PY_SSIZE_T_MAX / 2 - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = b->cap * 2;
    if (cap < b->len + need) cap = b->len + need;
    if (cap < 64) cap = 64;
    if (b->p == NULL) { /* a fresh buffer: a kept one of its role, if one is big enough */
        Py_ssize_t kept;
        char *q = pool_take(b->role, cap, &kept);
        if (q != NULL) {
            b->p = q;
            b->cap = kept;
            return 0;
        }
    }
    char *p = realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void buf_free(Buf *b) {
    pool_give(b->role, b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* The memory and its capacity, given away (the buffer is empty after). Not trimmed: the pool
 * takes it back whole, and pages never written are never mapped. */
char *buf_take(Buf *b, Py_ssize_t *cap) {
    char *p = b->p;
    *cap = b->cap;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

int bitmap_slow(Bitmap *m, Py_ssize_t i, int valid) {
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

int binary_init(Binary *c, int role) {
    if (buf_init(&c->valid.bits, 0, role) < 0 || buf_init(&c->offsets, 4, role + 1) < 0 ||
        buf_init(&c->data, 0, role + 2) < 0)
        return -1;
    c->valid.nulls = 0;
    put_i32(&c->offsets, 0);
    return 0;
}

int too_long(void) {
    PyErr_SetString(PyExc_OverflowError, "a column of one Arrow batch holds at most 2 GiB");
    return -1;
}

/* Append one value (n < 0: null); room for the offset and the data made by the caller. A value of
 * at most 16 bytes is copied as 16 (one move, no call) when the source has 16 bytes before
 * src_end and the data buffer SLACK bytes of room past the value (v2 makes it). */
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

int binary_append(Binary *c, Py_ssize_t row, const char *src, Py_ssize_t n) {
    if (buf_room(&c->offsets, 4) < 0 || (n > 0 && buf_room(&c->data, n) < 0)) return -1;
    return binary_put(c, row, src, n, src); /* no copy past the value */
}

void binary_clear(Binary *c) {
    buf_free(&c->valid.bits);
    buf_free(&c->offsets);
    buf_free(&c->data);
}

void columns_clear(Columns *self) {
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
