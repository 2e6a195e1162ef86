/* The records C extension's parts (see recordwalk.c, the module): what they share. */
#ifndef KAFKA_WIRE_RECORDWALK_H
#define KAFKA_WIRE_RECORDWALK_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

extern PyObject *CorruptBatchError; /* kafka_wire.errors, imported at module init */
extern PyObject *InvalidValueError;
extern PyObject *key_cache;         /* header key bytes -> str (v2.c) */
extern PyTypeObject RecordType;
extern PyTypeObject RecordIteratorType;

/* errors (record.c): raise cls(reason, offset=offset), or IndexError as indexing bytes does; both return -1 */
int fail(PyObject *cls, Py_ssize_t offset, const char *format, ...);
int ends(void);

/* A new record owning the five references it is given (NULL, with them released, on failure). */
PyObject *record_make(PyObject *offset, PyObject *timestamp, PyObject *key, PyObject *value, PyObject *headers);

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

/* data[a:b] (or view[a:b] for zero-copy reads). */
static inline PyObject *slice(const Walk *w, Py_ssize_t a, Py_ssize_t b) {
    if (w->view == NULL) return PyBytes_FromStringAndSize((const char *)w->d + a, b - a);
    return PySequence_GetSlice(w->view, a, b);
}

static inline int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}


PyObject *decode_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *iterate_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *summarize_records_v2(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *legacy_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *legacy_record_at(PyObject *data, Py_ssize_t key_pos, Py_ssize_t end, PyObject *offset, PyObject *timestamp);
PyObject *encode_legacy_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *bind_views(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *batches(PyObject *module, PyObject *reader);
PyObject *crc32c_of(PyObject *module, PyObject *data); /* batches.c: its CRC-32C, for tests */
int batches_init(void); /* batches.c's types and tables */
int add_view_iters(PyObject *module); /* batches.c: the views' __iter__ methods */

#endif
