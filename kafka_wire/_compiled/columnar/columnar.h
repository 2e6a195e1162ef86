/* The columnar C extension's parts (see columnar.c, the module): what they share. */
#ifndef KAFKA_WIRE_COLUMNAR_H
#define KAFKA_WIRE_COLUMNAR_H
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

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- released buffers kept for reuse, by role (pool.c) ---- */

/* A buffer's role: which column (and which of its buffers) it holds. A binary column's three
 * (validity, offsets, data) are its role + 0, 1, 2. */
enum {
    ROLE_OFFSET,
    ROLE_TIMESTAMP,
    ROLE_TS_TYPE,
    ROLE_KEY,
    ROLE_VALUE = ROLE_KEY + 3,
    ROLE_HAS_HEADERS = ROLE_VALUE + 3,
    ROLE_HEADER_ENDS,
    ROLE_HEADER_KEY,
    ROLE_HEADER_VALUE = ROLE_HEADER_KEY + 3,
    ROLE_TOPIC_OFFSETS = ROLE_HEADER_VALUE + 3,
    ROLE_TOPIC_DATA,
    ROLE_PARTITION,
    N_ROLES
};

char *pool_take(int role, Py_ssize_t need, Py_ssize_t *cap); /* a kept block of >= need bytes, or NULL */
void pool_give(int role, char *p, Py_ssize_t cap);           /* kept, or freed */
Py_ssize_t pool_trim(void);                                  /* frees every kept block */
Py_ssize_t pool_size(void);

/* ---- growing buffers (malloc'd or from the pool: export() hands them to Arrow, whose release
 * gives them back to the pool) ---- */

typedef struct {
    char *p; /* NULL while the capacity is 0 */
    Py_ssize_t len;
    Py_ssize_t cap;
    int role;
} Buf;

int buf_init(Buf *b, Py_ssize_t cap, int role);
int buf_grow(Buf *b, Py_ssize_t need); /* room for need more bytes, at least doubling */
void buf_free(Buf *b);                 /* back to the pool */
char *buf_take(Buf *b, Py_ssize_t *cap); /* the memory and its capacity, given away (the buffer is empty after) */

static inline int buf_reserve(Buf *b, Py_ssize_t need) {
    return (b->len + need <= b->cap) ? 0 : buf_grow(b, need);
}

static inline void put_i64(Buf *b, int64_t v) { memcpy(b->p + b->len, &v, 8); b->len += 8; }
static inline void put_i32(Buf *b, int32_t v) { memcpy(b->p + b->len, &v, 4); b->len += 4; }

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

int bitmap_slow(Bitmap *m, Py_ssize_t i, int valid);

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

int binary_init(Binary *c, int role); /* role: its validity's (offsets role + 1, data role + 2) */
int binary_append(Binary *c, Py_ssize_t row, const char *src, Py_ssize_t n); /* makes its room */
void binary_clear(Binary *c);
int too_long(void); /* OverflowError for a column past 2 GiB; -1 */

/* A value of at most SLACK bytes may be copied as SLACK bytes (one move, no call) */
#define SLACK 16

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

void columns_clear(Columns *self); /* frees the buffers */
PyObject *columns_v2(Columns *self, PyObject *args);     /* walk.c */
PyObject *columns_export(Columns *self, PyObject *args); /* export.c */

#endif
