/* Released column buffers kept for the next Columns (see columnar.c).
 *
 * Without it every batch's buffers were fresh memory: malloc serves blocks of a megabyte or more
 * with new pages from the kernel (mmap, or the heap's top, trimmed again when they are freed), and
 * writing them costs a page fault per 4 KiB, about 1.8 MB and 450 faults for the 10,000 records
 * of bench/bench_columnar.py: 0.85 ms in the kernel of a 1.3 ms round. A buffer released by Arrow
 * (or by a Columns that never exported it) is kept here, at its whole capacity, under its role
 * (the offsets column, the values' data, ...: a role's sizes are alike from batch to batch), and
 * the next buffer of that role starts from it; its pages are already mapped and written.
 *
 * Bounded: POOL_DEPTH blocks per role, POOL_MAX_BYTES in all; blocks under POOL_MIN_BYTES are
 * freed (malloc reuses small blocks without faults). Arrow may release from any thread, with or
 * without the GIL: a PyThread lock (an OS lock, usable without the GIL) guards the pool. */
#include "columnar.h"
#include <pythread.h>

#define POOL_DEPTH 2
#define POOL_MIN_BYTES 4096
#define POOL_MAX_BYTES ((Py_ssize_t)64 << 20)

typedef struct {
    char *p;
    Py_ssize_t cap;
} Block;

static Block pool[N_ROLES][POOL_DEPTH];
static Py_ssize_t pool_bytes;
static PyThread_type_lock pool_lock;

int pool_init(void) {
    if (pool_lock == NULL && (pool_lock = PyThread_allocate_lock()) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* A kept block of the role with room for need bytes (its capacity in *cap), or NULL. */
char *pool_take(int role, Py_ssize_t need, Py_ssize_t *cap) {
    char *p = NULL;
    if (pool_lock == NULL || role < 0 || role >= N_ROLES) return NULL;
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    for (int i = 0; i < POOL_DEPTH; i++) {
        Block *b = &pool[role][i];
        if (b->p != NULL && b->cap >= need) {
            p = b->p;
            *cap = b->cap;
            pool_bytes -= b->cap;
            b->p = NULL;
            b->cap = 0;
            break;
        }
    }
    PyThread_release_lock(pool_lock);
    return p;
}

/* The block back: kept under its role when there is room, else freed. */
void pool_give(int role, char *p, Py_ssize_t cap) {
    if (p == NULL) return;
    if (pool_lock != NULL && role >= 0 && role < N_ROLES && cap >= POOL_MIN_BYTES) {
        PyThread_acquire_lock(pool_lock, WAIT_LOCK);
        Block *slot = NULL;
        for (int i = 0; i < POOL_DEPTH && slot == NULL; i++)
            if (pool[role][i].p == NULL) slot = &pool[role][i];
        if (slot != NULL && cap <= POOL_MAX_BYTES - pool_bytes) {
            slot->p = p;
            slot->cap = cap;
            pool_bytes += cap;
            p = NULL;
        }
        PyThread_release_lock(pool_lock);
    }
    free(p);
}

/* Every kept block freed (Columns.trim_pool()); the bytes that were kept. */
Py_ssize_t pool_trim(void) {
    Py_ssize_t freed = 0;
    if (pool_lock == NULL) return 0;
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    for (int r = 0; r < N_ROLES; r++)
        for (int i = 0; i < POOL_DEPTH; i++) {
            free(pool[r][i].p);
            freed += pool[r][i].cap;
            pool[r][i].p = NULL;
            pool[r][i].cap = 0;
        }
    pool_bytes = 0;
    PyThread_release_lock(pool_lock);
    return freed;
}

/* The bytes kept now. */
Py_ssize_t pool_size(void) {
    if (pool_lock == NULL) return 0;
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    Py_ssize_t n = pool_bytes;
    PyThread_release_lock(pool_lock);
    return n;
}
