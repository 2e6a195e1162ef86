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
 * without the GIL, so the slots are atomic pointers (no lock: nothing to be left held by a fork);
 * a kept block holds its capacity in its first bytes. */
#include "columnar.h"

#define POOL_DEPTH 2
#define POOL_MIN_BYTES 4096
#define POOL_MAX_BYTES ((Py_ssize_t)64 << 20)

static char *pool[N_ROLES][POOL_DEPTH]; /* each slot: NULL or a kept block, swapped atomically */
static Py_ssize_t pool_bytes;           /* about what the slots hold (updated atomically) */

static Py_ssize_t block_cap(const char *p) {
    Py_ssize_t cap;
    memcpy(&cap, p, sizeof cap);
    return cap;
}

/* A kept block of the role with room for need bytes (its capacity in *cap), or NULL. */
char *pool_take(int role, Py_ssize_t need, Py_ssize_t *cap) {
    if (role < 0 || role >= N_ROLES) return NULL;
    for (int i = 0; i < POOL_DEPTH; i++) {
        char *p = __atomic_exchange_n(&pool[role][i], NULL, __ATOMIC_ACQUIRE);
        if (p == NULL) continue;
        Py_ssize_t kept = block_cap(p);
        __atomic_sub_fetch(&pool_bytes, kept, __ATOMIC_RELAXED);
        if (kept >= need) {
            *cap = kept;
            return p;
        }
        free(p); /* too small: the role's buffers have grown, the slot is for a bigger one */
    }
    return NULL;
}

/* The block back: kept under its role when a slot is free and the bound allows, else freed. */
void pool_give(int role, char *p, Py_ssize_t cap) {
    if (p == NULL) return;
    if (role >= 0 && role < N_ROLES && cap >= POOL_MIN_BYTES) {
        if (__atomic_add_fetch(&pool_bytes, cap, __ATOMIC_RELAXED) <= POOL_MAX_BYTES) {
            memcpy(p, &cap, sizeof cap);
            for (int i = 0; i < POOL_DEPTH; i++) {
                char *empty = NULL;
                if (__atomic_compare_exchange_n(&pool[role][i], &empty, p, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
                    return;
            }
        }
        __atomic_sub_fetch(&pool_bytes, cap, __ATOMIC_RELAXED);
    }
    free(p);
}

/* Every kept block freed (trim_pool()); the bytes that were kept. */
Py_ssize_t pool_trim(void) {
    Py_ssize_t freed = 0;
    for (int r = 0; r < N_ROLES; r++)
        for (int i = 0; i < POOL_DEPTH; i++) {
            char *p = __atomic_exchange_n(&pool[r][i], NULL, __ATOMIC_ACQUIRE);
            if (p == NULL) continue;
            Py_ssize_t kept = block_cap(p);
            __atomic_sub_fetch(&pool_bytes, kept, __ATOMIC_RELAXED);
            freed += kept;
            free(p);
        }
    return freed;
}

/* The bytes kept now. */
Py_ssize_t pool_size(void) { return __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED); }
