/* Batch views made in C: iterating a RecordsReader without a Python call per batch.
 *
 * bind_views(RecordsReader, RecordBatch, LegacyBatch) reads, once, where each class keeps its
 * __slots__ (the offsets of their member descriptors). batches(reader) is then an iterator over
 * the reader's batches that makes each RecordBatch / LegacyBatch with tp_alloc and fills every
 * slot the class's __init__ fills, with the same values, and moves reader.position on: no
 * __init__ call, no struct call, the CRC computed in place. It takes only the common case (a bytes
 * payload, a complete batch whose sizes, magic and CRC are valid); for anything else (the
 * truncated tail, zero-copy readers, every error) it calls the reader's own __next__, which then
 * does exactly what it does without this module, errors included.
 */
#include "recordwalk.h"
#include <structmember.h>
#include <libdeflate.h>

/* ---- CRC-32C (Castagnoli), as the crc32c package computes it ------------------------------- */

#define CRC32C_POLY 0x82F63B78u /* reflected: bit 31 is x^0 */
#define CRC32C_LANE 512         /* bytes per lane of the three-lane loop */

static uint32_t crc32c_table[256];
static int crc32c_hardware;
/* crc32c_shift[k][v]: the register value v << 8k times x^(8 * CRC32C_LANE), modulo the polynomial:
 * the register after CRC32C_LANE more zero bytes, a byte of it at a time */
static uint32_t crc32c_shift[4][256];

/* a * b modulo the polynomial (both reflected) */
static uint32_t crc32c_mul(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (int i = 0; i < 32; i++, a <<= 1) {
        if (a & 0x80000000u) product ^= b;
        b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return product;
}

static inline uint32_t crc32c_lane_shift(uint32_t c) {
    return crc32c_shift[0][c & 0xFF] ^ crc32c_shift[1][(c >> 8) & 0xFF] ^ crc32c_shift[2][(c >> 16) & 0xFF] ^
           crc32c_shift[3][c >> 24];
}

#if defined(__x86_64__)
/* The crc32 instruction has a latency of three cycles and a throughput of one: three independent
 * lanes (then joined: the register of A||B is A's shifted over B's length, xor B's from zero) go
 * about three times as fast as one. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = crc;
    while (n >= 3 * CRC32C_LANE) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < CRC32C_LANE; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + CRC32C_LANE + i, 8);
            memcpy(&v2, p + 2 * CRC32C_LANE + i, 8);
            c = __builtin_ia32_crc32di(c, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c = crc32c_lane_shift(crc32c_lane_shift((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * CRC32C_LANE;
        n -= 3 * CRC32C_LANE;
    }
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
    }
    crc = (uint32_t)c;
    for (; n > 0; n--) crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
#if defined(__x86_64__)
    if (crc32c_hardware) return ~crc32c_sse42(crc, p, n);
#endif
    for (; n > 0; n--) crc = crc32c_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static void crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[i] = c;
    }
    uint32_t lane = 0x80000000u; /* x^0, then times x for every bit of a lane */
    for (int i = 0; i < 8 * CRC32C_LANE; i++) lane = (lane & 1) ? (lane >> 1) ^ CRC32C_POLY : lane >> 1;
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) crc32c_shift[k][v] = crc32c_mul(v << (8 * k), lane);
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc32c_hardware = __builtin_cpu_supports("sse4.2");
#endif
}

/* ---- the classes' slots ---------------------------------------------------------------------- */

enum { R_BUF, R_CONFIG, R_END, R_MAX, R_ZERO_COPY, R_POSITION, R_COUNT };
static const char *reader_slots[] = {"_buf", "_config", "_end", "_max_batch_bytes", "_zero_copy", "position"};

enum {
    V_BUF, V_CONFIG, V_START, V_ZERO_COPY, V_POSITION, V_BASE_OFFSET, V_BATCH_LENGTH, V_LEADER_EPOCH, V_MAGIC, V_CRC,
    V_ATTRIBUTES, V_LAST_OFFSET_DELTA, V_BASE_TIMESTAMP, V_MAX_TIMESTAMP, V_PRODUCER_ID, V_PRODUCER_EPOCH,
    V_BASE_SEQUENCE, V_RECORD_COUNT, V_COUNT
};
static const char *v2_slots[] = {"_buf", "_config", "_start", "_zero_copy", "position", "base_offset", "batch_length",
                                 "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
                                 "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                                 "record_count"};

enum {
    L_BUF, L_CONFIG, L_INNER_SUMMARY, L_START, L_ZERO_COPY, L_POSITION, L_LAST_OFFSET, L_BATCH_LENGTH, L_CRC, L_MAGIC,
    L_ATTRIBUTES, L_TIMESTAMP, L_COUNT
};
static const char *legacy_slots[] = {"_buf", "_config", "_inner_summary", "_start", "_zero_copy", "position",
                                     "last_offset", "batch_length", "crc", "magic", "attributes", "timestamp"};

static PyTypeObject *reader_type, *v2_type, *legacy_type;
static Py_ssize_t reader_at[R_COUNT], v2_at[V_COUNT], legacy_at[L_COUNT];

#define SLOT(obj, at) (*(PyObject **)((char *)(obj) + (at)))

/* Where each of `names` is kept in instances of `cls` (an object slot of its own __slots__). */
static int find_slots(PyObject *cls, const char **names, int n, Py_ssize_t *at) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "bind_views takes classes");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *d = PyDict_GetItemString(((PyTypeObject *)cls)->tp_dict, names[i]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", ((PyTypeObject *)cls)->tp_name, names[i]);
            return -1;
        }
        at[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    return 0;
}

/* bind_views(reader_class, v2_class, legacy_class) */
PyObject *bind_views(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bind_views takes 3 classes");
        return NULL;
    }
    if (find_slots(args[0], reader_slots, R_COUNT, reader_at) < 0 || find_slots(args[1], v2_slots, V_COUNT, v2_at) < 0 ||
        find_slots(args[2], legacy_slots, L_COUNT, legacy_at) < 0)
        return NULL;
    Py_XSETREF(reader_type, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(v2_type, (PyTypeObject *)Py_NewRef(args[1]));
    Py_XSETREF(legacy_type, (PyTypeObject *)Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

/* ---- the iterator ---------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *reader;
    int verify_crc;
} BatchIterator;

static inline int64_t be64(const unsigned char *p) { return (int64_t)(((uint64_t)(uint32_t)be32(p) << 32) | (uint32_t)be32(p + 4)); }
static inline int16_t be16(const unsigned char *p) { return (int16_t)(((unsigned)p[0] << 8) | p[1]); }

/* A new instance of `type` with its `n` slots (at `at`) set to `values` (new references, all
 * released here); NULL if one of them is NULL or on failure. */
static PyObject *view(PyTypeObject *type, const Py_ssize_t *at, PyObject **values, int n) {
    PyObject *obj = NULL;
    for (int i = 0; i < n; i++)
        if (values[i] == NULL) goto done;
    obj = type->tp_alloc(type, 0);
    if (obj == NULL) goto done;
    for (int i = 0; i < n; i++) {
        SLOT(obj, at[i]) = values[i];
        values[i] = NULL;
    }
done:
    for (int i = 0; i < n; i++) Py_XDECREF(values[i]);
    return obj;
}

#define INT(v) PyLong_FromLongLong((long long)(v))

/* The batch at d[pos:pos + 12 + size] (complete, magic checked): a view, or Py_None (a new
 * reference) when this is not the common case, or NULL on failure. */
static PyObject *make_batch(BatchIterator *self, PyObject *buf, PyObject *config, const unsigned char *d, Py_ssize_t pos,
                            int32_t size) {
    const unsigned char *b = d + pos;
    if (b[16] == 2) {
        if (size + 12 < 61) Py_RETURN_NONE;
        uint32_t crc = (uint32_t)be32(b + 17);
        if (self->verify_crc && crc32c(b + 21, (size_t)size + 12 - 21) != crc) Py_RETURN_NONE;
        PyObject *start = PyLong_FromSsize_t(pos);
        PyObject *v[V_COUNT] = {
            Py_NewRef(buf), Py_NewRef(config), start, Py_NewRef(Py_False), Py_XNewRef(start),
            INT(be64(b)), INT(size), INT(be32(b + 12)), INT((int8_t)b[16]), PyLong_FromUnsignedLong(crc),
            INT(be16(b + 21)), INT(be32(b + 23)), INT(be64(b + 27)), INT(be64(b + 35)), INT(be64(b + 43)),
            INT(be16(b + 51)), INT(be32(b + 53)), INT(be32(b + 57)),
        };
        return view(v2_type, v2_at, v, V_COUNT);
    }
    int magic = b[16];
    if (size < (magic == 0 ? 14 : 22)) Py_RETURN_NONE;
    uint32_t crc = (uint32_t)be32(b + 12);
    if (self->verify_crc && libdeflate_crc32(0, b + 16, (size_t)size - 4) != crc) Py_RETURN_NONE;
    PyObject *start = PyLong_FromSsize_t(pos);
    PyObject *v[L_COUNT] = {
        Py_NewRef(buf), Py_NewRef(config), Py_NewRef(Py_None), start, Py_NewRef(Py_False), Py_XNewRef(start),
        INT(be64(b)), INT(size), PyLong_FromUnsignedLong(crc), INT(magic), INT((int8_t)b[17]),
        magic == 1 ? INT(be64(b + 18)) : INT(-1),
    };
    return view(legacy_type, legacy_at, v, L_COUNT);
}

static PyObject *batches_next(BatchIterator *self) {
    PyObject *reader = self->reader;
    PyObject *buf = SLOT(reader, reader_at[R_BUF]);
    PyObject *made = NULL;
    if (buf != NULL && PyBytes_CheckExact(buf) && SLOT(reader, reader_at[R_ZERO_COPY]) == Py_False &&
        SLOT(reader, reader_at[R_POSITION]) != NULL && SLOT(reader, reader_at[R_END]) != NULL &&
        SLOT(reader, reader_at[R_MAX]) != NULL && SLOT(reader, reader_at[R_CONFIG]) != NULL) {
        Py_ssize_t pos = PyLong_AsSsize_t(SLOT(reader, reader_at[R_POSITION]));
        Py_ssize_t end = PyLong_AsSsize_t(SLOT(reader, reader_at[R_END]));
        long long max_bytes = PyLong_AsLongLong(SLOT(reader, reader_at[R_MAX]));
        if (PyErr_Occurred()) return NULL;
        const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(buf);
        if (pos >= 0 && end <= PyBytes_GET_SIZE(buf) && end - pos >= 17) {
            int32_t size = be32(d + pos + 8);
            if (size >= 14 && size <= max_bytes && d[pos + 16] <= 2 && end - pos >= (Py_ssize_t)size + 12) {
                made = make_batch(self, buf, SLOT(reader, reader_at[R_CONFIG]), d, pos, size);
                if (made == NULL) return NULL;
                if (made != Py_None) {
                    PyObject *next = PyLong_FromSsize_t(pos + 12 + size);
                    if (next == NULL) {
                        Py_DECREF(made);
                        return NULL;
                    }
                    Py_XSETREF(SLOT(reader, reader_at[R_POSITION]), next);
                    return made;
                }
                Py_DECREF(made);
            }
        }
    }
    /* anything else: the reader's own step (the tail, errors, zero-copy reads) */
    made = PyObject_CallMethod(reader, "__next__", NULL);
    if (made == NULL && PyErr_ExceptionMatches(PyExc_StopIteration)) PyErr_Clear();
    return made;
}

static void batches_dealloc(BatchIterator *self) {
    Py_XDECREF(self->reader);
    PyObject_Free(self);
}

PyTypeObject BatchIteratorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire._compiled.recordwalk.BatchIterator",
    .tp_basicsize = sizeof(BatchIterator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The batches of a RecordsReader, their views made in C.",
    .tp_dealloc = (destructor)batches_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)batches_next,
};

/* batches(reader) -> iterator of its batches; the reader itself unless it is exactly the class
 * bind_views was given (a subclass may have a __next__ of its own). */
PyObject *batches(PyObject *module, PyObject *reader) {
    if (reader_type == NULL || !Py_IS_TYPE(reader, reader_type)) return Py_NewRef(reader);
    PyObject *config = SLOT(reader, reader_at[R_CONFIG]);
    if (config == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the reader has no _config");
        return NULL;
    }
    PyObject *flag = PyObject_GetAttrString(config, "verify_crc");
    if (flag == NULL) return NULL;
    int verify = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (verify < 0) return NULL;
    BatchIterator *it = PyObject_New(BatchIterator, &BatchIteratorType);
    if (it == NULL) return NULL;
    it->reader = Py_NewRef(reader);
    it->verify_crc = verify;
    return (PyObject *)it;
}

/* crc32c(data) -> int: the batch views' CRC-32C of a bytes-like object (for tests: a wrong one
 * would not fail, only send every batch to the Python check) */
PyObject *crc32c_of(PyObject *module, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t crc = crc32c((const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

int batches_init(void) {
    crc32c_init();
    return PyType_Ready(&BatchIteratorType);
}

/* ---- the views' __iter__ ---------------------------------------------------------------------- */

/* A method of RecordBatch (kind 2) or LegacyBatch (kind 1) that is C: iter(view) makes the records
 * of the common case (an uncompressed batch in a bytes payload, read without zero-copy) with no
 * Python call; anything else, a failure included, is the class's own `_iterate`, which then does
 * exactly what it does without this module (errors included). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
} ViewIter;

/* Whether every one of the n slots of `obj` at `at` is set (a slot may have been deleted). */
static int all_set(PyObject *obj, const Py_ssize_t *at, int n) {
    for (int i = 0; i < n; i++)
        if (SLOT(obj, at[i]) == NULL) return 0;
    return 1;
}

static PyObject *v2_records(PyObject *b) {
    if (!all_set(b, v2_at, V_COUNT)) return NULL;
    PyObject *buf = SLOT(b, v2_at[V_BUF]), *attributes = SLOT(b, v2_at[V_ATTRIBUTES]);
    if (!PyBytes_CheckExact(buf) || SLOT(b, v2_at[V_ZERO_COPY]) != Py_False) return NULL;
    long attrs = PyLong_AsLong(attributes);
    Py_ssize_t start = PyLong_AsSsize_t(SLOT(b, v2_at[V_START]));
    Py_ssize_t length = PyLong_AsSsize_t(SLOT(b, v2_at[V_BATCH_LENGTH]));
    Py_ssize_t count = PyLong_AsSsize_t(SLOT(b, v2_at[V_RECORD_COUNT]));
    if (PyErr_Occurred() || (attrs & 0x07) != 0 || count < 0) return NULL;
    PyObject *pos = PyLong_FromSsize_t(start + 61), *end = PyLong_FromSsize_t(start + length + 12);
    PyObject *result = NULL;
    if (pos != NULL && end != NULL) {
        PyObject *args[8] = {buf, Py_None, pos, end, SLOT(b, v2_at[V_RECORD_COUNT]), SLOT(b, v2_at[V_BASE_OFFSET]),
                             SLOT(b, v2_at[V_BASE_TIMESTAMP]), (attrs & 0x08) ? SLOT(b, v2_at[V_MAX_TIMESTAMP]) : Py_None};
        PyObject *pair = iterate_records_v2(NULL, args, 8);
        if (pair != NULL) {
            if (PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 1)) == start + length + 12) result = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
            Py_DECREF(pair);
        }
    }
    Py_XDECREF(pos);
    Py_XDECREF(end);
    return result;
}

/* The iterator of a legacy message's one record (one object where a tuple and its iterator were two). */
typedef struct {
    PyObject_HEAD
    PyObject *record; /* NULL once taken */
} OneRecord;

static PyObject *one_record_next(OneRecord *self) {
    PyObject *r = self->record;
    self->record = NULL;
    return r;
}

static void one_record_dealloc(OneRecord *self) {
    Py_XDECREF(self->record);
    PyObject_Free(self);
}

static PyTypeObject OneRecordType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire._compiled.recordwalk.OneRecord",
    .tp_basicsize = sizeof(OneRecord),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The iterator of a legacy message's one record.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)one_record_next,
    .tp_dealloc = (destructor)one_record_dealloc,
};

static PyObject *legacy_records(PyObject *b) {
    if (!all_set(b, legacy_at, L_COUNT)) return NULL;
    PyObject *buf = SLOT(b, legacy_at[L_BUF]), *attributes = SLOT(b, legacy_at[L_ATTRIBUTES]);
    if (!PyBytes_CheckExact(buf) || SLOT(b, legacy_at[L_ZERO_COPY]) != Py_False) return NULL;
    long attrs = PyLong_AsLong(attributes);
    long magic = PyLong_AsLong(SLOT(b, legacy_at[L_MAGIC]));
    Py_ssize_t start = PyLong_AsSsize_t(SLOT(b, legacy_at[L_START]));
    Py_ssize_t length = PyLong_AsSsize_t(SLOT(b, legacy_at[L_BATCH_LENGTH]));
    if (PyErr_Occurred() || (attrs & 0x07) != 0) return NULL;
    PyObject *record = legacy_record_at(buf, start + (magic == 0 ? 18 : 26), start + length + 12,
                                        SLOT(b, legacy_at[L_LAST_OFFSET]), SLOT(b, legacy_at[L_TIMESTAMP]));
    if (record == NULL) return NULL;
    OneRecord *it = PyObject_New(OneRecord, &OneRecordType);
    if (it == NULL) {
        Py_DECREF(record);
        return NULL;
    }
    it->record = record;
    return (PyObject *)it;
}

/* iter(view): called with the view as its one argument. The type is a method descriptor, so
 * `for r in view` calls it with the view directly (no bound method, no argument tuple). */
static PyObject *viewiter_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ViewIter *self = (ViewIter *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "__iter__ takes no arguments");
        return NULL;
    }
    PyObject *b = args[0];
    PyTypeObject *type = self->kind == 2 ? v2_type : legacy_type;
    PyObject *it = NULL;
    if (type != NULL && Py_IS_TYPE(b, type)) it = self->kind == 2 ? v2_records(b) : legacy_records(b);
    if (it != NULL) return it;
    PyErr_Clear();
    return PyObject_CallMethod(b, "_iterate", NULL);
}

static PyObject *viewiter_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

PyTypeObject ViewIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire._compiled.recordwalk.ViewIter",
    .tp_basicsize = sizeof(ViewIter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "The records of a batch view (its __iter__), made in C for the common case.",
    .tp_vectorcall_offset = offsetof(ViewIter, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = viewiter_get,
};

/* The two methods, as module attributes v2_iter and legacy_iter. */
int add_view_iters(PyObject *module) {
    if (PyType_Ready(&ViewIterType) < 0 || PyType_Ready(&OneRecordType) < 0) return -1;
    for (int kind = 1; kind <= 2; kind++) {
        ViewIter *m = PyObject_New(ViewIter, &ViewIterType);
        if (m == NULL) return -1;
        m->kind = kind;
        m->vectorcall = viewiter_vectorcall;
        if (PyModule_AddObject(module, kind == 2 ? "v2_iter" : "legacy_iter", (PyObject *)m) < 0) {
            Py_DECREF(m);
            return -1;
        }
    }
    return 0;
}
