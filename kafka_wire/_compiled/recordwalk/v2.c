/* v2 records: the list and the iterator of one batch's records (see recordwalk.c, the module). */
#include "recordwalk.h"

/* ---- v2 records ----------------------------------------------------------------------------- */

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

PyObject *key_cache; /* header key bytes -> str, across batches (producers repeat their keys) */
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

/* What summarize_records_v2 keeps of a record checked without being made. */
typedef struct {
    int64_t timestamp_delta;
    int64_t offset_delta;
    Py_ssize_t key_len; /* -1: null */
    Py_ssize_t value_len;
} Fields;

/* Walk the next record (w->index of w->count, at w->pos): with `made`, make it there (a new
 * reference); without, only check it (and with `fields`, note its fields there). -1 with an
 * exception set on bad input. */
static int next_record(Walk *w, PyObject **made, Fields *fields) {
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
    if (fields != NULL) {
        fields->timestamp_delta = (int64_t)(tsd >> 1) ^ -(int64_t)(tsd & 1);
        fields->offset_delta = ZZ32(od);
        fields->key_len = kend < 0 ? -1 : kend - kpos;
        fields->value_len = vend < 0 ? -1 : vend - vpos;
    }
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
PyObject *decode_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
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
    while (w.index < w.count && !failed) failed = next_record(&w, &PyList_GET_ITEM(out, w.index), NULL) < 0;
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
    if (next_record(&self->w, &r, NULL) < 0) return NULL;
    return r;
}

static PyObject *iterator_length_hint(RecordIterator *self, PyObject *unused) {
    return PyLong_FromSsize_t(self->w.count - self->w.index);
}

static PyMethodDef iterator_methods[] = {
    {"__length_hint__", (PyCFunction)iterator_length_hint, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject RecordIteratorType = {
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
PyObject *iterate_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    RecordIterator *it = PyObject_New(RecordIterator, &RecordIteratorType);
    if (it == NULL) return NULL;
    if (walk_start(&it->w, args, nargs) < 0) {
        Py_DECREF(it);
        return NULL;
    }
    Walk *w = &it->w;
    Py_ssize_t start = w->pos;
    while (w->index < w->count) {
        if (next_record(w, NULL, NULL) < 0) {
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


/* summarize_records_v2(data, view, pos, end, count, base_offset, base_timestamp, log_append_time)
 *   -> (end position, lowest timestamp, highest timestamp, index of the first record whose offset
 *       delta is not its index or -1, index of the first record without a key or -1, bytes of
 *       keys and values)
 * Every record checked as decode_records_v2 checks it (same errors), none made: what a broker's
 * log validator needs of a batch it keeps as it is. The timestamps are None without records. */
PyObject *summarize_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Walk w;
    if (walk_start(&w, args, nargs) < 0) {
        walk_release(&w);
        return NULL;
    }
    Fields f;
    int64_t low = INT64_MAX, high = INT64_MIN;
    Py_ssize_t gap = -1, keyless = -1, bytes = 0;
    while (w.index < w.count) {
        Py_ssize_t i = w.index;
        if (next_record(&w, NULL, &f) < 0) {
            walk_release(&w);
            return NULL;
        }
        if (f.timestamp_delta < low) low = f.timestamp_delta;
        if (f.timestamp_delta > high) high = f.timestamp_delta;
        if (gap < 0 && f.offset_delta != i) gap = i;
        if (keyless < 0 && f.key_len < 0) keyless = i;
        bytes += (f.key_len > 0 ? f.key_len : 0) + (f.value_len > 0 ? f.value_len : 0);
    }
    PyObject *lowest, *highest;
    if (w.count == 0) {
        lowest = Py_NewRef(Py_None);
        highest = Py_NewRef(Py_None);
    } else if (w.lat != NULL) {
        lowest = Py_NewRef(w.lat);
        highest = Py_NewRef(w.lat);
    } else {
        lowest = add64(w.base_timestamp, low);
        highest = add64(w.base_timestamp, high);
    }
    walk_release(&w);
    if (lowest == NULL || highest == NULL) {
        Py_XDECREF(lowest);
        Py_XDECREF(highest);
        return NULL;
    }
    return Py_BuildValue("(nNNnnn)", w.pos, lowest, highest, gap, keyless, bytes);
}
