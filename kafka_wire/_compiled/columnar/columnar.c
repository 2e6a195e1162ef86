/* Columnar record decoding: v2 records straight into Arrow buffers (kafka_wire.records.columnar).
 *
 * Hand-written; built by setup.py with the compiled flavour (KAFKA_WIRE_COMPILE=1) from the files
 * of this folder, which share columnar.h; loaded by kafka_wire.records.columnar through
 * kafka_wire.flavour. Its pure-Python twin with the same interface and the same output is
 * kafka_wire/records/columnar_pure.py; docs/internals/compiled.md describes both.
 *
 *   columnar.c  the module and the Columns type: init, record() (one record given as Python
 *               values: the legacy path), the buffers' owner until export().
 *   buffers.c   growing malloc'd buffers, validity bitmaps (written from the first null only),
 *               binary columns.
 *   pool.c      released buffers kept for the next batch's (by role, bounded, lock-free): their
 *               pages are mapped already, where fresh memory costs a page fault per 4 KiB written.
 *   walk.c      v2(): the records of one v2 batch (decompressed by the caller) walked once, every
 *               field checked, the wanted columns of each record whose offset is in [lo, hi)
 *               written straight into buffers sized once per batch.
 *   export.c    export(): the buffers handed to Arrow as one struct array (the record batch)
 *               through Arrow's C data interface, given back to the pool by its release
 *               callback; pyarrow imports it with one call and copies nothing.
 *
 * Every check of the per-record decoder (kafka_wire/_compiled/records.py) is made here too; bad
 * input raises ValueError(reason, offset relative to data), which the caller turns into its
 * DecodeError. Nothing here allocates a Python object per record.
 */
#include "columnar.h"

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
    if (buf_init(&self->offset, 0, ROLE_OFFSET) < 0 || buf_init(&self->timestamp, 0, ROLE_TIMESTAMP) < 0 ||
        buf_init(&self->ts_type, 0, ROLE_TS_TYPE) < 0 || binary_init(&self->key, ROLE_KEY) < 0 ||
        binary_init(&self->value, ROLE_VALUE) < 0 || buf_init(&self->has_headers.bits, 0, ROLE_HAS_HEADERS) < 0 ||
        buf_init(&self->header_ends, 4, ROLE_HEADER_ENDS) < 0 || binary_init(&self->header_key, ROLE_HEADER_KEY) < 0 ||
        binary_init(&self->header_value, ROLE_HEADER_VALUE) < 0)
        return -1;
    self->has_headers.nulls = 0;
    put_i32(&self->header_ends, 0);
    self->ready = 1;
    return 0;
}

static inline int append_row(Columns *self, int64_t offset, int64_t timestamp, int32_t ts_type) {
    if (buf_reserve(&self->offset, 8) < 0 || buf_reserve(&self->timestamp, 8) < 0 || buf_reserve(&self->ts_type, 4) < 0)
        return -1;
    put_i64(&self->offset, offset);
    put_i64(&self->timestamp, (int64_t)((uint64_t)timestamp * (uint64_t)self->ts_scale));
    put_i32(&self->ts_type, ts_type);
    return 0;
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

static PyObject *module_trim_pool(PyObject *module, PyObject *unused) { return PyLong_FromSsize_t(pool_trim()); }

static PyObject *module_pooled_bytes(PyObject *module, PyObject *unused) { return PyLong_FromSsize_t(pool_size()); }

static PyMethodDef module_methods[] = {
    {"trim_pool", module_trim_pool, METH_NOARGS, "Free the released buffers kept for reuse; the bytes they held."},
    {"pooled_bytes", module_pooled_bytes, METH_NOARGS, "The bytes of released buffers kept for reuse."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafka_wire._compiled.columnar",
    "Columnar record decoding into Arrow buffers (see kafka_wire.records.columnar).", -1, module_methods,
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
