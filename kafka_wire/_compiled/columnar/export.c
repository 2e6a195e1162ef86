/* Columns.export: the columns as one Arrow record batch, through Arrow's C data interface (see
 * columnar.c). */
#include "columnar.h"

#define MAX_COLUMNS 8
#define MAX_OWNED 32

/* Everything one export holds: the child arrays and their buffer lists (the root array is the
 * Columns object's, which pyarrow moves out of it), and the buffers, freed by the root's release. */
typedef struct {
    struct ArrowArray columns[MAX_COLUMNS], pairs, fields[2];
    struct ArrowArray *column_list[MAX_COLUMNS], *pairs_list[1], *field_list[2];
    const void *root_buffers[1], *column_buffers[MAX_COLUMNS][3], *pairs_buffers[1], *field_buffers[2][3];
    struct {
        char *p;
        Py_ssize_t cap;
        int role;
    } owned[MAX_OWNED];
    int n_owned;
} Export;

/* The buffers back to the pool (which keeps or frees them), from whichever thread Arrow releases. */
static void export_free(Export *e) {
    for (int i = 0; i < e->n_owned; i++) pool_give(e->owned[i].role, e->owned[i].p, e->owned[i].cap);
    free(e);
}

/* A child's memory is its root's: releasing it only marks it released. */
static void release_child(struct ArrowArray *a) { a->release = NULL; }

static void release_root(struct ArrowArray *a) {
    if (a->release == NULL) return;
    Export *e = a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL) a->children[i]->release(a->children[i]);
    if (e->pairs.release != NULL) e->pairs.release(&e->pairs);
    for (int i = 0; i < 2; i++)
        if (e->fields[i].release != NULL) e->fields[i].release(&e->fields[i]);
    export_free(e);
    a->release = NULL;
}

/* A buffer's memory, taken from it: now the export's (Arrow wants a pointer even for no bytes). */
static const void *own(Export *e, Buf *b) {
    if (e->n_owned == MAX_OWNED) { /* cannot happen: at most 20 buffers */
        PyErr_SetString(PyExc_RuntimeError, "too many buffers");
        return NULL;
    }
    if (b->p == NULL && buf_grow(b, 1) < 0) return NULL;
    int role = b->role;
    Py_ssize_t cap;
    char *p = buf_take(b, &cap);
    e->owned[e->n_owned].p = p;
    e->owned[e->n_owned].cap = cap;
    e->owned[e->n_owned].role = role;
    e->n_owned++;
    return p;
}

static void array_init(struct ArrowArray *a, int64_t length, int64_t nulls, const void **buffers, int64_t n_buffers) {
    memset(a, 0, sizeof *a);
    a->length = length;
    a->null_count = nulls;
    a->buffers = buffers;
    a->n_buffers = n_buffers;
    a->release = release_child;
}

static int export_fixed(Export *e, struct ArrowArray *a, const void **bufs, Buf *b, int64_t rows) {
    bufs[0] = NULL;
    if ((bufs[1] = own(e, b)) == NULL) return -1;
    array_init(a, rows, 0, bufs, 2);
    return 0;
}

static int export_binary(Export *e, struct ArrowArray *a, const void **bufs, Binary *c, int64_t rows) {
    bufs[0] = NULL;
    if (c->valid.nulls > 0 && (bufs[0] = own(e, &c->valid.bits)) == NULL) return -1;
    if ((bufs[1] = own(e, &c->offsets)) == NULL || (bufs[2] = own(e, &c->data)) == NULL) return -1;
    array_init(a, rows, c->valid.nulls, bufs, 3);
    return 0;
}

/* The topic column's offsets and data: rows copies of the topic (the room is there). Through local
 * pointers, so that the loops keep nothing in memory but what they write; no copy call per row. */
static void fill_topic(Buf *offs, Buf *data, int64_t rows, const char *topic, Py_ssize_t topic_len) {
    int32_t *o = (int32_t *)offs->p;
    for (int64_t r = 0; r <= rows; r++) o[r] = (int32_t)(r * topic_len);
    offs->len = 4 * (rows + 1);
    char *d = data->p; /* NULL when there is nothing to write (no rows, or an empty topic) */
    if (topic_len == 1 && rows > 0) {
        memset(d, topic[0], (size_t)rows);
    } else if (topic_len > 1) {
        for (int64_t r = 0; r < rows; r++, d += topic_len) memcpy(d, topic, (size_t)topic_len);
    }
    data->len = topic_len * rows;
}

/* Columns.export(layout, topic, partition) -> address of an ArrowArray (a struct array: the
 * record batch) for pyarrow.RecordBatch._import_from_c with the batch's schema. layout has one
 * letter per column, in the schema's order: k(ey) v(alue) t(opic) p(artition) o(ffset)
 * s (timestamp) y (timestampType) h(eaders); topic is its UTF-8. The object is spent after. */
PyObject *columns_export(Columns *self, PyObject *args) {
    const char *layout, *topic;
    Py_ssize_t n_columns, topic_len;
    int partition;
    if (!self->ready) return PyErr_Format(PyExc_RuntimeError, "Columns is not initialised or already finished");
    if (!PyArg_ParseTuple(args, "s#y#i", &layout, &n_columns, &topic, &topic_len, &partition)) return NULL;
    if (n_columns > MAX_COLUMNS) return PyErr_Format(PyExc_ValueError, "at most %d columns", MAX_COLUMNS);
    const int64_t rows = self->rows;
    Export *e = calloc(1, sizeof(Export));
    if (e == NULL) return PyErr_NoMemory();
    self->ready = 0;
    for (Py_ssize_t i = 0; i < n_columns; i++) {
        struct ArrowArray *a = &e->columns[i];
        const void **bufs = e->column_buffers[i];
        e->column_list[i] = a;
        int rc = 0;
        switch (layout[i]) {
        case 'k':
        case 'v': {
            int wanted = layout[i] == 'k' ? self->want_key : self->want_value;
            if (!wanted) {
                PyErr_SetString(PyExc_ValueError, "a column export() was not asked to collect");
                rc = -1;
            } else {
                rc = export_binary(e, a, bufs, layout[i] == 'k' ? &self->key : &self->value, rows);
            }
            break;
        }
        case 't': {
            if (topic_len > 0 && rows > INT32_MAX / topic_len) {
                PyErr_SetString(PyExc_OverflowError, "a column of one Arrow batch holds at most 2 GiB");
                rc = -1;
                break;
            }
            Buf offs, data;
            if (buf_init(&offs, 4 * (rows + 1), ROLE_TOPIC_OFFSETS) < 0) { rc = -1; break; }
            if (buf_init(&data, topic_len * rows, ROLE_TOPIC_DATA) < 0) { buf_free(&offs); rc = -1; break; }
            fill_topic(&offs, &data, rows, topic, topic_len);
            bufs[0] = NULL;
            if ((bufs[1] = own(e, &offs)) == NULL) { buf_free(&offs); buf_free(&data); rc = -1; break; }
            if ((bufs[2] = own(e, &data)) == NULL) { buf_free(&data); rc = -1; break; }
            array_init(a, rows, 0, bufs, 3);
            break;
        }
        case 'p': {
            Buf b;
            if (buf_init(&b, 4 * rows, ROLE_PARTITION) < 0) { rc = -1; break; }
            int32_t *to = (int32_t *)b.p; /* a local pointer: the loop stores nothing else (vectorised) */
            for (int64_t r = 0; r < rows; r++) to[r] = partition;
            b.len = 4 * rows;
            if ((rc = export_fixed(e, a, bufs, &b, rows)) < 0) buf_free(&b);
            break;
        }
        case 'o': rc = export_fixed(e, a, bufs, &self->offset, rows); break;
        case 's': rc = export_fixed(e, a, bufs, &self->timestamp, rows); break;
        case 'y': rc = export_fixed(e, a, bufs, &self->ts_type, rows); break;
        case 'h': {
            if (!self->want_headers) {
                PyErr_SetString(PyExc_ValueError, "a column export() was not asked to collect");
                rc = -1;
                break;
            }
            int64_t count = self->header_count;
            if (export_binary(e, &e->fields[0], e->field_buffers[0], &self->header_key, count) < 0 ||
                export_binary(e, &e->fields[1], e->field_buffers[1], &self->header_value, count) < 0) {
                rc = -1;
                break;
            }
            e->field_list[0] = &e->fields[0];
            e->field_list[1] = &e->fields[1];
            e->pairs_buffers[0] = NULL;
            array_init(&e->pairs, count, 0, e->pairs_buffers, 1);
            e->pairs.n_children = 2;
            e->pairs.children = e->field_list;
            e->pairs_list[0] = &e->pairs;
            bufs[0] = NULL;
            if (self->has_headers.nulls > 0 && (bufs[0] = own(e, &self->has_headers.bits)) == NULL) {
                rc = -1;
                break;
            }
            if ((bufs[1] = own(e, &self->header_ends)) == NULL) { rc = -1; break; }
            array_init(a, rows, self->has_headers.nulls, bufs, 2);
            a->n_children = 1;
            a->children = e->pairs_list;
            break;
        }
        default:
            PyErr_Format(PyExc_ValueError, "unknown column letter %c", layout[i]);
            rc = -1;
        }
        if (rc < 0) {
            export_free(e);
            columns_clear(self);
            return NULL;
        }
    }
    struct ArrowArray *root = &self->exported;
    e->root_buffers[0] = NULL;
    array_init(root, rows, 0, e->root_buffers, 1);
    root->n_children = n_columns;
    root->children = e->column_list;
    root->private_data = e;
    root->release = release_root;
    columns_clear(self);
    return PyLong_FromVoidPtr(root);
}
