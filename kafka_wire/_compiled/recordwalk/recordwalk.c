/* Records in C for the compiled flavour: Record, the loops that make records, and batch views
 * (kafka_wire.records.loops chooses this module; docs/internals/compiled.md describes it).
 *
 * Hand-written; built by setup.py with the compiled flavour (KAFKA_WIRE_COMPILE=1) from the files
 * of this folder, which share recordwalk.h:
 *
 *   record.c   Record: the five fields as object slots (member descriptors, which CPython's
 *              attribute cache reads as fast as a __slots__ class's), the surface of the pure
 *              class plus pickling; the errors the walks raise.
 *   v2.c       decode_records_v2 / iterate_records_v2: one v2 batch's records, as a list or
 *              checked first and then made one at a time as iterated.
 *   legacy.c   legacy_record (one uncompressed legacy message's record) and encode_legacy_plain
 *              (a plain legacy message set written in one call, or None for other input).
 *   batches.c  bind_views / batches: a RecordsReader's batches with their views (RecordBatch,
 *              LegacyBatch) made without a Python call, the common case only.
 *
 * Its pure-Python twin is kafka_wire/_compiled/records.py run as Python (and the Python classes'
 * own __init__ / __next__ for batches.c): same interface, checks, errors and output. Bad input
 * raises what the pure loop raises at the same byte: CorruptBatchError / InvalidValueError with the
 * offset relative to data, IndexError where the input ends inside a field, UnicodeDecodeError
 * for a header key that is not UTF-8 (the callers turn the last two into DecodeErrors).
 */
#include "recordwalk.h"

PyObject *CorruptBatchError;
PyObject *InvalidValueError;

/* ---- module ---------------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"decode_records_v2", (PyCFunction)(void (*)(void))decode_records_v2, METH_FASTCALL,
     "decode_records_v2(data, view, pos, end, count, base_offset, base_timestamp, log_append_time) -> (records, end)"},
    {"iterate_records_v2", (PyCFunction)(void (*)(void))iterate_records_v2, METH_FASTCALL,
     "iterate_records_v2(...) -> (iterator, end): decode_records_v2's records as an iterator"},
    {"summarize_records_v2", (PyCFunction)(void (*)(void))summarize_records_v2, METH_FASTCALL,
     "summarize_records_v2(...) -> (end, lowest timestamp, highest timestamp, first offset gap, first keyless, key and value bytes)"},
    {"legacy_record", (PyCFunction)(void (*)(void))legacy_record, METH_FASTCALL,
     "legacy_record(data, key_pos, end, offset, timestamp) -> Record"},
    {"encode_legacy_plain", (PyCFunction)(void (*)(void))encode_legacy_plain, METH_FASTCALL,
     "encode_legacy_plain(records, magic, attributes, base_offset, default_timestamp, log_append_time) -> bytes | None"},
    {"bind_views", (PyCFunction)(void (*)(void))bind_views, METH_FASTCALL,
     "bind_views(reader_class, v2_batch_class, legacy_batch_class): where their slots are"},
    {"batches", (PyCFunction)batches, METH_O, "batches(reader) -> iterator of its batches, views made in C"},
    {"crc32c", (PyCFunction)crc32c_of, METH_O, "crc32c(data) -> the CRC-32C the batch views check"},
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
    if (PyType_Ready(&RecordType) < 0 || PyType_Ready(&RecordIteratorType) < 0 || batches_init() < 0) return NULL;
    PyObject *match_args = Py_BuildValue("(sssss)", "offset", "timestamp", "key", "value", "headers");
    if (match_args == NULL || PyDict_SetItemString(RecordType.tp_dict, "__match_args__", match_args) < 0) {
        Py_XDECREF(match_args);
        return NULL;
    }
    Py_DECREF(match_args);
    PyType_Modified(&RecordType);
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Record", (PyObject *)&RecordType) < 0 || add_view_iters(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

