/* Legacy (magic 0/1) records: one message's record, and plain message sets written in one call. */
#include "recordwalk.h"
#include <libdeflate.h>

/* ---- legacy records --------------------------------------------------------------------------- */

/* The record of the message whose key length is at data[key_pos:] and which ends at `end` (its
 * offset and timestamp given, borrowed); NULL with CorruptBatchError or IndexError set. */
PyObject *legacy_record_at(PyObject *data, Py_ssize_t key_pos, Py_ssize_t end, PyObject *offset, PyObject *timestamp) {
    Walk w;
    memset(&w, 0, sizeof(w));
    Py_buffer buf = {0};
    int is_bytes = PyBytes_Check(data);
    if (is_bytes) {
        w.d = (const unsigned char *)PyBytes_AS_STRING(data);
        w.n = PyBytes_GET_SIZE(data);
    } else {
        if (PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE) < 0) return NULL;
        w.d = buf.buf;
        w.n = buf.len;
        w.view = data;
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
    PyObject *r = record_make(Py_NewRef(offset), Py_NewRef(timestamp), key, value, headers);
    if (!is_bytes) PyBuffer_Release(&buf);
    return r;
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (!is_bytes) PyBuffer_Release(&buf);
    return NULL;
}

/* legacy_record(data, key_pos, end, offset, timestamp) -> Record: see records.py's legacy_record. */
PyObject *legacy_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "legacy_record takes 5 arguments");
        return NULL;
    }
    Py_ssize_t key_pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    return legacy_record_at(args[0], key_pos, end, args[3], args[4]);
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
PyObject *encode_legacy_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
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
        put_be32(start + 12, libdeflate_crc32(0, start + 16, (size_t)(p - start - 16)));
    }
    return out;
}

