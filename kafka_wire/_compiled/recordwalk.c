/* Records as objects: Record and the per-record walks that make them (kafka_wire.records.loops).
 *
 * Hand-written; built by setup.py with the compiled flavour (KAFKA_WIRE_COMPILE=1), chosen by
 * kafka_wire.records.loops through kafka_wire.flavour. Its pure-Python twin, with the same
 * interface, checks, errors and output, is the v2 decoder and legacy_record of
 * kafka_wire/_compiled/records.py run as Python; docs/internals/compiled.md describes both.
 *
 * Record: the five fields as object slots (member descriptors, which CPython's attribute cache
 * reads as fast as a __slots__ class's), the surface of the pure class (constructor, astuple,
 * unpacking, equality, repr, __match_args__, unhashable, Record[bytes]) plus pickling.
 * decode_records_v2 / iterate_records_v2 walk one v2 batch's records and make them;
 * legacy_record makes the record of one uncompressed legacy message. Bad input raises what the
 * pure loop raises at the same byte: CorruptBatchError / InvalidValueError with the offset
 * relative to data, IndexError where the input ends inside a field, UnicodeDecodeError for a
 * header key that is not UTF-8 (the callers turn the last two into DecodeErrors).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

static PyObject *CorruptBatchError; /* kafka_wire.errors, imported at module init */
static PyObject *InvalidValueError;

/* ---- Record -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *offset;
    PyObject *timestamp;
    PyObject *key;
    PyObject *value;
    PyObject *headers;
} Record;

static PyTypeObject RecordType;

static int record_traverse(Record *self, visitproc visit, void *arg) {
    Py_VISIT(self->offset);
    Py_VISIT(self->timestamp);
    Py_VISIT(self->key);
    Py_VISIT(self->value);
    Py_VISIT(self->headers);
    return 0;
}

static int record_clear(Record *self) {
    Py_CLEAR(self->offset);
    Py_CLEAR(self->timestamp);
    Py_CLEAR(self->key);
    Py_CLEAR(self->value);
    Py_CLEAR(self->headers);
    return 0;
}

static void record_dealloc(Record *self) {
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, record_dealloc)
    record_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
    Py_TRASHCAN_END
}

/* A new record owning the five references it is given (NULL, with them released, on failure). */
static PyObject *record_make(PyObject *offset, PyObject *timestamp, PyObject *key, PyObject *value, PyObject *headers) {
    Record *r = PyObject_GC_New(Record, &RecordType);
    if (r == NULL) {
        Py_XDECREF(offset);
        Py_XDECREF(timestamp);
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        return NULL;
    }
    r->offset = offset;
    r->timestamp = timestamp;
    r->key = key;
    r->value = value;
    r->headers = headers;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

static int record_init(Record *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"offset", "timestamp", "key", "value", "headers", NULL};
    PyObject *offset, *timestamp, *key, *value, *headers = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO|O:Record", names, &offset, &timestamp, &key, &value, &headers))
        return -1;
    if (headers == NULL) headers = PyTuple_New(0);
    else Py_INCREF(headers);
    if (headers == NULL) return -1;
    Py_INCREF(offset);
    Py_INCREF(timestamp);
    Py_INCREF(key);
    Py_INCREF(value);
    Py_XSETREF(self->offset, offset);
    Py_XSETREF(self->timestamp, timestamp);
    Py_XSETREF(self->key, key);
    Py_XSETREF(self->value, value);
    Py_XSETREF(self->headers, headers);
    return 0;
}

/* Every field, or NULL with AttributeError when one was deleted (as a __slots__ class reads). */
static int record_fields(Record *self, PyObject **out) {
    static const char *names[] = {"offset", "timestamp", "key", "value", "headers"};
    PyObject *fields[5] = {self->offset, self->timestamp, self->key, self->value, self->headers};
    for (int i = 0; i < 5; i++) {
        if (fields[i] == NULL) {
            PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(self)->tp_name, names[i]);
            return -1;
        }
        out[i] = fields[i];
    }
    return 0;
}

static PyObject *record_astuple(Record *self, PyObject *unused) {
    PyObject *f[5];
    if (record_fields(self, f) < 0) return NULL;
    PyObject *headers = PySequence_Tuple(f[4]);
    if (headers == NULL) return NULL;
    PyObject *t = PyTuple_Pack(5, f[0], f[1], f[2], f[3], headers);
    Py_DECREF(headers);
    return t;
}

static PyObject *record_iter(Record *self) {
    PyObject *f[5];
    if (record_fields(self, f) < 0) return NULL;
    PyObject *t = PyTuple_Pack(5, f[0], f[1], f[2], f[3], f[4]);
    if (t == NULL) return NULL;
    PyObject *it = PyObject_GetIter(t);
    Py_DECREF(t);
    return it;
}

static PyObject *record_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &RecordType)) Py_RETURN_NOTIMPLEMENTED;
    PyObject *ta = record_astuple((Record *)a, NULL);
    if (ta == NULL) return NULL;
    PyObject *tb = record_astuple((Record *)b, NULL);
    if (tb == NULL) {
        Py_DECREF(ta);
        return NULL;
    }
    PyObject *result = PyObject_RichCompare(ta, tb, op);
    Py_DECREF(ta);
    Py_DECREF(tb);
    return result;
}

static PyObject *record_repr(Record *self) {
    PyObject *f[5];
    if (record_fields(self, f) < 0) return NULL;
    return PyUnicode_FromFormat("Record(offset=%S, timestamp=%S, key=%R, value=%R, headers=%R)", f[0], f[1], f[2], f[3], f[4]);
}

static PyObject *record_reduce(Record *self, PyObject *unused) {
    PyObject *f[5];
    if (record_fields(self, f) < 0) return NULL;
    return Py_BuildValue("(O(OOOOO))", (PyObject *)Py_TYPE(self), f[0], f[1], f[2], f[3], f[4]);
}

static PyMemberDef record_members[] = {
    {"offset", T_OBJECT_EX, offsetof(Record, offset), 0, NULL},
    {"timestamp", T_OBJECT_EX, offsetof(Record, timestamp), 0, NULL},
    {"key", T_OBJECT_EX, offsetof(Record, key), 0, NULL},
    {"value", T_OBJECT_EX, offsetof(Record, value), 0, NULL},
    {"headers", T_OBJECT_EX, offsetof(Record, headers), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef record_methods[] = {
    {"astuple", (PyCFunction)record_astuple, METH_NOARGS, "(offset, timestamp, key, value, headers) with headers as a tuple."},
    {"__reduce__", (PyCFunction)record_reduce, METH_NOARGS, NULL},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire.records.Record",
    .tp_basicsize = sizeof(Record),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One record. ``headers`` is a tuple of ``(key, value)`` pairs; legacy records have none.\n\n"
              "Records compare equal when all five fields are equal, unpack as ``offset, timestamp, key,\n"
              "value, headers``, and are not hashable.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)record_init,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_traverse = (traverseproc)record_traverse,
    .tp_clear = (inquiry)record_clear,
    .tp_repr = (reprfunc)record_repr,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_richcompare = record_richcompare,
    .tp_iter = (getiterfunc)record_iter,
    .tp_members = record_members,
    .tp_methods = record_methods,
};

/* ---- errors ------------------------------------------------------------------------------- */

/* Raise cls(reason, offset=offset); returns -1. */
static int fail(PyObject *cls, Py_ssize_t offset, const char *format, ...) {
    va_list va;
    va_start(va, format);
    PyObject *reason = PyUnicode_FromFormatV(format, va);
    va_end(va);
    if (reason == NULL) return -1;
    PyObject *args = PyTuple_Pack(1, reason);
    Py_DECREF(reason);
    PyObject *kwargs = Py_BuildValue("{s:n}", "offset", offset);
    if (args != NULL && kwargs != NULL) {
        PyObject *e = PyObject_Call(cls, args, kwargs);
        if (e != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(e), e);
            Py_DECREF(e);
        }
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return -1;
}

/* data[i] past the end of data: what indexing bytes raises. */
static int ends(void) {
    PyErr_SetString(PyExc_IndexError, "index out of range");
    return -1;
}

/* ---- v2 records ----------------------------------------------------------------------------- */

/* One batch's records being walked: where they are and what the walk remembers. */
typedef struct {
    PyObject *data;       /* the bytes (a reference held by the walk) */
    const unsigned char *d;
    Py_ssize_t n;         /* len(data): reads past it raise IndexError, as indexing bytes does */
    PyObject *view;       /* a memoryview of data (zero-copy reads: values slice it) or NULL */
    PyObject *last_key;   /* the previous header's key or NULL */
    Py_ssize_t last_pos;  /* where its bytes are */
    Py_ssize_t last_len;
    Py_ssize_t pos;       /* the next record */
    Py_ssize_t end;       /* the records may not run past it */
    Py_ssize_t index;     /* of the next record */
    Py_ssize_t count;     /* records the batch declares */
    int64_t base_offset;
    int64_t base_timestamp;
    PyObject *lat;        /* the LogAppendTime timestamp of every record, or NULL */
} Walk;

/* Unsigned varint of at most 5 bytes, keeping the low 32 bits (records.py's read_uvarint32). */
static inline int read_u32(const Walk *w, Py_ssize_t *pos, uint32_t *out) {
    Py_ssize_t p = *pos;
    uint32_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (p >= w->n) return ends();
        unsigned char b = w->d[p++];
        v |= (uint32_t)(b & 0x7F) << shift;
        if (b < 0x80) break;
        if (shift + 7 > 28) return fail(InvalidValueError, p, "varint longer than 5 bytes");
    }
    *out = v;
    *pos = p;
    return 0;
}

/* Unsigned varint of at most 10 bytes, keeping the low 64 bits (read_uvarint64). */
static inline int read_u64(const Walk *w, Py_ssize_t *pos, uint64_t *out) {
    Py_ssize_t p = *pos;
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (p >= w->n) return ends();
        unsigned char b = w->d[p++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) break;
        if (shift + 7 > 63) return fail(InvalidValueError, p, "varlong longer than 10 bytes");
    }
    *out = v;
    *pos = p;
    return 0;
}

#define ZZ32(u) ((int64_t)((u) >> 1) ^ -(int64_t)((u) & 1u))

/* data[a:b] (or view[a:b] for zero-copy reads). */
static inline PyObject *slice(const Walk *w, Py_ssize_t a, Py_ssize_t b) {
    if (w->view == NULL) return PyBytes_FromStringAndSize((const char *)w->d + a, b - a);
    return PySequence_GetSlice(w->view, a, b);
}

static PyObject *key_cache; /* header key bytes -> str, across batches (producers repeat their keys) */
#define KEY_CACHE_MAX 1024    /* entries; the cache is emptied when it is full */

/* The header key at data[pos:end] as text, remembered in key_cache. */
static PyObject *header_key(const Walk *w, Py_ssize_t pos, Py_ssize_t end) {
    PyObject *raw = PyBytes_FromStringAndSize((const char *)w->d + pos, end - pos);
    if (raw == NULL) return NULL;
    PyObject *key = PyDict_GetItemWithError(key_cache, raw);
    if (key != NULL) {
        Py_INCREF(key);
    } else if (!PyErr_Occurred()) {
        key = PyUnicode_DecodeUTF8((const char *)w->d + pos, end - pos, NULL);
        if (key != NULL && PyDict_GET_SIZE(key_cache) >= KEY_CACHE_MAX) PyDict_Clear(key_cache);
        if (key != NULL && PyDict_SetItem(key_cache, raw, key) < 0) Py_CLEAR(key);
    }
    Py_DECREF(raw);
    return key;
}

/* One header (key, value) ending by rec_end at *pos: a new pair (Py_None when only checking), or NULL. */
static PyObject *read_header(Walk *w, Py_ssize_t *pos, Py_ssize_t rec_end, int make) {
    Py_ssize_t p = *pos;
    uint32_t v = 0;
    if (read_u32(w, &p, &v) < 0) return NULL;
    if (v & 1) {
        fail(InvalidValueError, p, "null or negative header key length");
        return NULL;
    }
    Py_ssize_t n = p + (v >> 1);
    if (n > rec_end) {
        fail(CorruptBatchError, p, "header key overruns its record");
        return NULL;
    }
    PyObject *key;
    if (w->last_key != NULL && n - p == w->last_len && memcmp(w->d + p, w->d + w->last_pos, (size_t)(n - p)) == 0) {
        key = w->last_key; /* the previous header's key, compared in place */
        Py_INCREF(key);
    } else {
        key = header_key(w, p, n);
        if (key == NULL) return NULL;
        Py_INCREF(key);
        Py_XSETREF(w->last_key, key);
        w->last_pos = p;
        w->last_len = n - p;
    }
    p = n;
    PyObject *value = NULL;
    if (read_u32(w, &p, &v) < 0) goto fail;
    if (v & 1) {
        if (v != 1) {
            fail(InvalidValueError, p, "negative header value length");
            goto fail;
        }
        value = Py_NewRef(Py_None);
    } else {
        n = p + (v >> 1);
        if (n > rec_end) {
            fail(CorruptBatchError, p, "header value overruns its record");
            goto fail;
        }
        value = make ? slice(w, p, n) : Py_NewRef(Py_None);
        if (value == NULL) goto fail;
        p = n;
    }
    *pos = p;
    if (!make) {
        Py_DECREF(key);
        return value;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(value);
        goto fail;
    }
    PyTuple_SET_ITEM(pair, 0, key);
    PyTuple_SET_ITEM(pair, 1, value);
    return pair;
fail:
    Py_DECREF(key);
    return NULL;
}

/* An int64 sum as an int, exact when it leaves the int64 range. */
static PyObject *add64(int64_t a, int64_t b) {
    int64_t s;
    if (!__builtin_add_overflow(a, b, &s)) return PyLong_FromLongLong(s);
    PyObject *x = PyLong_FromLongLong(a), *y = PyLong_FromLongLong(b), *r = NULL;
    if (x != NULL && y != NULL) r = PyNumber_Add(x, y);
    Py_XDECREF(x);
    Py_XDECREF(y);
    return r;
}

/* Walk the next record (w->index of w->count, at w->pos): with `made`, make it there (a new
 * reference); without, only check it. -1 with an exception set on bad input. */
static int next_record(Walk *w, PyObject **made) {
    const unsigned char *d = w->d;
    Py_ssize_t pos = w->pos, end = w->end;
    if (pos >= end) return fail(CorruptBatchError, pos, "batch ends after %zd of %zd declared records", w->index, w->count);
    uint32_t v = 0;
    if (read_u32(w, &pos, &v) < 0) return -1;
    int64_t length = ZZ32(v);
    Py_ssize_t rec_end = pos + length;
    if (rec_end > end)
        return fail(CorruptBatchError, pos, "record length %lld overruns the batch (%zd bytes left)", (long long)length, end - pos);
    uint64_t tsd = 0;
    pos += 1; /* attributes (unused) */
    if (read_u64(w, &pos, &tsd) < 0) return -1;
    uint32_t od = 0;
    if (read_u32(w, &pos, &od) < 0) return -1;
    /* key */
    if (read_u32(w, &pos, &v) < 0) return -1;
    Py_ssize_t kpos = pos, kend = -1;
    if (v & 1) {
        if (v != 1) return fail(InvalidValueError, pos, "negative key length %lld", (long long)((v >> 1) ^ -1LL));
    } else {
        kend = pos + (v >> 1);
        if (kend > rec_end) return fail(CorruptBatchError, pos, "key of %u bytes overruns its record", (unsigned)(v >> 1));
        pos = kend;
    }
    /* value */
    if (read_u32(w, &pos, &v) < 0) return -1;
    Py_ssize_t vpos = pos, vend = -1;
    if (v & 1) {
        if (v != 1) return fail(InvalidValueError, pos, "negative value length %lld", (long long)((v >> 1) ^ -1LL));
    } else {
        vend = pos + (v >> 1);
        if (vend > rec_end) return fail(CorruptBatchError, pos, "value of %u bytes overruns its record", (unsigned)(v >> 1));
        pos = vend;
    }
    /* headers */
    if (pos >= w->n) return ends();
    PyObject *headers = NULL;
    if (d[pos] == 0) {
        pos += 1;
        if (made != NULL && (headers = PyTuple_New(0)) == NULL) return -1;
    } else {
        int one = d[pos] == 2; /* a count of one in one byte: the pure loop's inline path, unchecked */
        if (read_u32(w, &pos, &v) < 0) return -1;
        if (v & 1) return fail(InvalidValueError, pos, "negative header count %lld", (long long)((v >> 1) ^ -1LL));
        Py_ssize_t hc = v >> 1;
        if (!one && hc > rec_end - pos)
            return fail(CorruptBatchError, pos, "header count %zd exceeds the record's remaining bytes", hc);
        if (made != NULL && (headers = PyTuple_New(hc)) == NULL) return -1;
        for (Py_ssize_t h = 0; h < hc; h++) {
            PyObject *pair = read_header(w, &pos, rec_end, made != NULL);
            if (pair == NULL) {
                Py_XDECREF(headers);
                return -1;
            }
            if (made != NULL) PyTuple_SET_ITEM(headers, h, pair);
            else Py_DECREF(pair);
        }
    }
    if (pos != rec_end) {
        Py_XDECREF(headers);
        return fail(CorruptBatchError, pos, "record fields end at byte %zd, its length says %zd", pos, rec_end);
    }
    w->pos = pos;
    w->index += 1;
    if (made == NULL) return 0;
    PyObject *offset = add64(w->base_offset, ZZ32(od));
    PyObject *timestamp;
    if (w->lat != NULL) {
        timestamp = Py_NewRef(w->lat);
    } else {
        int64_t delta = (int64_t)(tsd >> 1) ^ -(int64_t)(tsd & 1);
        timestamp = add64(w->base_timestamp, delta);
    }
    PyObject *key = kend < 0 ? Py_NewRef(Py_None) : slice(w, kpos, kend);
    PyObject *value = vend < 0 ? Py_NewRef(Py_None) : slice(w, vpos, vend);
    if (offset == NULL || timestamp == NULL || key == NULL || value == NULL) {
        Py_XDECREF(offset);
        Py_XDECREF(timestamp);
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_DECREF(headers);
        return -1;
    }
    *made = record_make(offset, timestamp, key, value, headers);
    return *made == NULL ? -1 : 0;
}

static void walk_release(Walk *w) {
    Py_CLEAR(w->data);
    Py_CLEAR(w->view);
    Py_CLEAR(w->lat);
    Py_CLEAR(w->last_key);
}

/* A walk over the records of the decoders' arguments (data, view, pos, end, count, base_offset,
 * base_timestamp, log_append_time), after the count check; -1 with an exception set. */
static int walk_start(Walk *w, PyObject *const *args, Py_ssize_t nargs) {
    memset(w, 0, sizeof(*w));
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "the v2 record decoders take 8 arguments");
        return -1;
    }
    if (!PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "data must be bytes");
        return -1;
    }
    w->pos = PyLong_AsSsize_t(args[2]);
    w->end = PyLong_AsSsize_t(args[3]);
    w->count = PyLong_AsSsize_t(args[4]);
    w->base_offset = PyLong_AsLongLong(args[5]);
    w->base_timestamp = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred()) return -1;
    if (w->count * 7 > w->end - w->pos)
        return fail(CorruptBatchError, w->pos, "%zd records cannot fit in %zd bytes (a record takes at least 7)", w->count,
                    w->end - w->pos);
    if (w->count < 0) w->count = 0; /* as the pure loop: no records */
    w->data = Py_NewRef(args[0]);
    w->d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    w->n = PyBytes_GET_SIZE(args[0]);
    w->view = args[1] == Py_None ? NULL : Py_NewRef(args[1]);
    w->lat = args[7] == Py_None ? NULL : Py_NewRef(args[7]);
    return 0;
}

#define GC_PAUSE_MIN_RECORDS 256

/* decode_records_v2(data, view, pos, end, count, base_offset, base_timestamp, log_append_time) -> (records, end position) */
static PyObject *decode_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Walk w;
    if (walk_start(&w, args, nargs) < 0) {
        walk_release(&w);
        return NULL;
    }
    PyObject *out = PyList_New(w.count); /* safe now: the bytes back the count */
    if (out == NULL) {
        walk_release(&w);
        return NULL;
    }
    int paused = w.count >= GC_PAUSE_MIN_RECORDS && PyGC_Disable();
    int failed = 0;
    while (w.index < w.count && !failed) failed = next_record(&w, &PyList_GET_ITEM(out, w.index)) < 0;
    if (paused) PyGC_Enable();
    walk_release(&w);
    if (failed) {
        Py_DECREF(out); /* items not made are NULL, which a list's dealloc skips */
        return NULL;
    }
    return Py_BuildValue("(Nn)", out, w.pos);
}

/* The records of one batch, made one at a time as they are asked for (every one checked first):
 * a consumer that drops each record before the next reuses the same memory. */
typedef struct {
    PyObject_HEAD
    Walk w;
} RecordIterator;

static void iterator_dealloc(RecordIterator *self) {
    walk_release(&self->w);
    PyObject_Free(self);
}

static PyObject *iterator_next(RecordIterator *self) {
    if (self->w.index >= self->w.count) return NULL;
    PyObject *r = NULL;
    if (next_record(&self->w, &r) < 0) return NULL;
    return r;
}

static PyObject *iterator_length_hint(RecordIterator *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->w.count - self->w.index);
}

static PyMethodDef iterator_methods[] = {
    {"__length_hint__", (PyCFunction)iterator_length_hint, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordIteratorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kafka_wire._compiled.recordwalk.RecordIterator",
    .tp_basicsize = sizeof(RecordIterator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The records of one v2 batch, made as they are asked for.",
    .tp_dealloc = (destructor)iterator_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iterator_next,
    .tp_methods = iterator_methods,
};

/* iterate_records_v2(...) -> (iterator, end position): every record checked, then made as iterated. */
static PyObject *iterate_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    RecordIterator *it = PyObject_New(RecordIterator, &RecordIteratorType);
    if (it == NULL) return NULL;
    if (walk_start(&it->w, args, nargs) < 0) {
        Py_DECREF(it);
        return NULL;
    }
    Walk *w = &it->w;
    Py_ssize_t start = w->pos;
    while (w->index < w->count) {
        if (next_record(w, NULL) < 0) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_ssize_t after = w->pos;
    w->pos = start; /* the checking pass leaves the keys it decoded in key_cache */
    w->index = 0;
    Py_CLEAR(w->last_key);
    return Py_BuildValue("(Nn)", (PyObject *)it, after);
}

/* ---- legacy records --------------------------------------------------------------------------- */

static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

/* legacy_record(data, key_pos, end, offset, timestamp) -> Record: see records.py's legacy_record. */
static PyObject *legacy_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "legacy_record takes 5 arguments");
        return NULL;
    }
    Py_ssize_t key_pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    Walk w;
    memset(&w, 0, sizeof(w));
    Py_buffer buf = {0};
    int is_bytes = PyBytes_Check(args[0]);
    if (is_bytes) {
        w.d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
        w.n = PyBytes_GET_SIZE(args[0]);
    } else {
        if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) return NULL;
        w.d = buf.buf;
        w.n = buf.len;
        w.view = args[0];
    }
    PyObject *key = NULL, *value = NULL;
    if (end - key_pos < 8) {
        fail(CorruptBatchError, key_pos, "legacy message too short for its key and value lengths");
        goto done;
    }
    if (key_pos < 0 || end > w.n) { /* struct.unpack_from's bound: the caller passes a whole message */
        ends();
        goto done;
    }
    int32_t klen = be32(w.d + key_pos);
    Py_ssize_t p = key_pos + 4;
    if (klen == -1) {
        key = Py_NewRef(Py_None);
    } else if (klen >= 0 && klen <= end - p - 4) {
        key = slice(&w, p, p + klen);
        if (key == NULL) goto done;
        p += klen;
    } else {
        fail(CorruptBatchError, key_pos, "legacy key length %d does not fit its message", (int)klen);
        goto done;
    }
    int32_t vlen = be32(w.d + p);
    p += 4;
    if (vlen == -1 && p == end) {
        value = Py_NewRef(Py_None);
    } else if (vlen == end - p) {
        value = slice(&w, p, end);
        if (value == NULL) goto done;
    } else {
        fail(CorruptBatchError, p - 4, "legacy value length %d does not match the %zd bytes left in its message", (int)vlen, end - p);
        goto done;
    }
    PyObject *headers = PyTuple_New(0);
    if (headers == NULL) goto done;
    PyObject *r = record_make(Py_NewRef(args[3]), Py_NewRef(args[4]), key, value, headers);
    if (!is_bytes) PyBuffer_Release(&buf);
    return r;
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (!is_bytes) PyBuffer_Release(&buf);
    return NULL;
}

/* ---- legacy message sets: writing ------------------------------------------------------------- */

static inline void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline void put_be64(unsigned char *p, uint64_t v) {
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* A key or value the fast path takes: None or bytes (-1 for None, its length), or -2. */
static inline Py_ssize_t plain_len(PyObject *o) {
    if (o == Py_None) return -1;
    if (PyBytes_CheckExact(o) && PyBytes_GET_SIZE(o) < (1 << 30)) return PyBytes_GET_SIZE(o);
    return -2;
}

/* encode_legacy_plain(records, magic, attributes, base_offset, default_timestamp, log_append_time)
 * -> bytes | None: the uncompressed message set of records given as (key, value), (key, value,
 * headers) or (key, value, headers, timestamp) tuples of bytes / None with no headers and valid
 * int timestamps, as legacy.build_message_set writes it; None for any other input (the caller
 * then takes its own path, which also raises the errors). log_append_time (or None) replaces
 * every timestamp. */
static PyObject *encode_legacy_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "encode_legacy_plain takes 6 arguments");
        return NULL;
    }
    PyObject *records = args[0];
    int magic = PyLong_AsLong(args[1]);
    int attributes = PyLong_AsLong(args[2]);
    int overflow = 0;
    long long base_offset = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (PyErr_Occurred()) return NULL;
    if (!(PyList_CheckExact(records) || PyTuple_CheckExact(records)) || overflow || (magic != 0 && magic != 1)) Py_RETURN_NONE;
    long long lat = 0;
    if (args[5] != Py_None) {
        if (!PyLong_CheckExact(args[5])) Py_RETURN_NONE;
        lat = PyLong_AsLongLongAndOverflow(args[5], &overflow);
        if (overflow || PyErr_Occurred()) Py_RETURN_NONE;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(records);
    if (n > 0 && base_offset > INT64_MAX - n) Py_RETURN_NONE;
    PyObject **items = PySequence_Fast_ITEMS(records);
    Py_ssize_t head = magic == 0 ? 26 : 34; /* offset, size, crc, magic, attributes, [timestamp], key and value lengths */
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* the sizes, and whether every record takes the fast path */
        PyObject *r = items[i];
        if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) < 2 || PyTuple_GET_SIZE(r) > 4) Py_RETURN_NONE;
        Py_ssize_t k = plain_len(PyTuple_GET_ITEM(r, 0)), v = plain_len(PyTuple_GET_ITEM(r, 1));
        if (k == -2 || v == -2) Py_RETURN_NONE;
        if (PyTuple_GET_SIZE(r) >= 3) {
            PyObject *h = PyTuple_GET_ITEM(r, 2);
            if (!(h == Py_None || ((PyTuple_CheckExact(h) || PyList_CheckExact(h)) && Py_SIZE(h) == 0))) Py_RETURN_NONE;
        }
        if (PyTuple_GET_SIZE(r) == 4 && PyTuple_GET_ITEM(r, 3) != Py_None) {
            PyObject *ts = PyTuple_GET_ITEM(r, 3);
            if (!PyLong_CheckExact(ts)) Py_RETURN_NONE;
            long long t = PyLong_AsLongLongAndOverflow(ts, &overflow);
            if (PyErr_Occurred()) return NULL;
            if (magic == 1 && (overflow || t < -1)) Py_RETURN_NONE;
        }
        total += head + (k < 0 ? 0 : k) + (v < 0 ? 0 : v);
    }
    long long default_ts = 0;
    if (magic == 1) {
        if (!PyLong_CheckExact(args[4])) Py_RETURN_NONE;
        default_ts = PyLong_AsLongLongAndOverflow(args[4], &overflow);
        if (overflow || PyErr_Occurred() || default_ts < -1) Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = items[i];
        PyObject *key = PyTuple_GET_ITEM(r, 0), *value = PyTuple_GET_ITEM(r, 1);
        Py_ssize_t k = plain_len(key), v = plain_len(value);
        unsigned char *start = p;
        put_be64(p, (uint64_t)(base_offset + i));
        p += 16; /* the offset; the size and the CRC are written last */
        *p++ = (unsigned char)magic;
        *p++ = (unsigned char)attributes;
        if (magic == 1) {
            long long t = default_ts;
            if (args[5] != Py_None) t = lat;
            else if (PyTuple_GET_SIZE(r) == 4 && PyTuple_GET_ITEM(r, 3) != Py_None) t = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 3));
            put_be64(p, (uint64_t)t);
            p += 8;
        }
        put_be32(p, (uint32_t)(int32_t)k);
        p += 4;
        if (k > 0) memcpy(p, PyBytes_AS_STRING(key), (size_t)k);
        if (k > 0) p += k;
        put_be32(p, (uint32_t)(int32_t)v);
        p += 4;
        if (v > 0) memcpy(p, PyBytes_AS_STRING(value), (size_t)v);
        if (v > 0) p += v;
        put_be32(start + 8, (uint32_t)(p - start - 12));
        put_be32(start + 12, (uint32_t)crc32(0L, start + 16, (uInt)(p - start - 16)));
    }
    return out;
}

/* ---- module ---------------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"decode_records_v2", (PyCFunction)(void (*)(void))decode_records_v2, METH_FASTCALL,
     "decode_records_v2(data, view, pos, end, count, base_offset, base_timestamp, log_append_time) -> (records, end)"},
    {"iterate_records_v2", (PyCFunction)(void (*)(void))iterate_records_v2, METH_FASTCALL,
     "iterate_records_v2(...) -> (iterator, end): decode_records_v2's records as an iterator"},
    {"legacy_record", (PyCFunction)(void (*)(void))legacy_record, METH_FASTCALL,
     "legacy_record(data, key_pos, end, offset, timestamp) -> Record"},
    {"encode_legacy_plain", (PyCFunction)(void (*)(void))encode_legacy_plain, METH_FASTCALL,
     "encode_legacy_plain(records, magic, attributes, base_offset, default_timestamp, log_append_time) -> bytes | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafka_wire._compiled.recordwalk",
    "Record and the per-record walks that make records (see kafka_wire.records.loops).", -1, module_methods,
};

PyMODINIT_FUNC PyInit_recordwalk(void) {
    PyObject *errors = PyImport_ImportModule("kafka_wire.errors");
    if (errors == NULL) return NULL;
    CorruptBatchError = PyObject_GetAttrString(errors, "CorruptBatchError");
    InvalidValueError = PyObject_GetAttrString(errors, "InvalidValueError");
    Py_DECREF(errors);
    if (CorruptBatchError == NULL || InvalidValueError == NULL) return NULL;
    if ((key_cache = PyDict_New()) == NULL) return NULL;
    if (PyType_Ready(&RecordType) < 0 || PyType_Ready(&RecordIteratorType) < 0) return NULL;
    PyObject *match_args = Py_BuildValue("(sssss)", "offset", "timestamp", "key", "value", "headers");
    if (match_args == NULL || PyDict_SetItemString(RecordType.tp_dict, "__match_args__", match_args) < 0) {
        Py_XDECREF(match_args);
        return NULL;
    }
    Py_DECREF(match_args);
    PyType_Modified(&RecordType);
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Record", (PyObject *)&RecordType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
