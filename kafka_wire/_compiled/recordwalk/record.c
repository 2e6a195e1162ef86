/* Record: the compiled flavour's record class (see recordwalk.c, the module), and the errors the walks raise. */
#include "recordwalk.h"
#include <structmember.h>

/* ---- Record -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *offset;
    PyObject *timestamp;
    PyObject *key;
    PyObject *value;
    PyObject *headers;
} Record;


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

PyObject *record_make(PyObject *offset, PyObject *timestamp, PyObject *key, PyObject *value, PyObject *headers) {
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

PyTypeObject RecordType = {
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
int fail(PyObject *cls, Py_ssize_t offset, const char *format, ...) {
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
int ends(void) {
    PyErr_SetString(PyExc_IndexError, "index out of range");
    return -1;
}

