#include "trace/roots.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/gclock.h"
#include "trace/finalize.h"
#include "trace/handles.h"
#include "base/registry.h"
#include "base/util.h"

typedef struct root {
    void  *start;
    size_t size;      /* bytes */
    bool   precise;   /* every word a reference or NULL */
} root;

/* The registered roots: one instance, under the gc lock (added and
 * removed by any thread, scanned by the thread that stops the world). */
static struct {
    root  *roots;
    size_t nroots, cap;
} roots_g;

void lull_roots_reset(void)
{
    free(roots_g.roots);
    roots_g.roots = NULL;
    roots_g.nroots = roots_g.cap = 0;
}

static int add(void *start, size_t size, bool precise)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!start || !size)
        return -EINVAL;
    if ((uintptr_t)start + size < (uintptr_t)start)
        return -EINVAL;
    lull_gc_lock();
    for (size_t i = 0; i < roots_g.nroots; i++)
        if (roots_g.roots[i].start == start) {
            lull_gc_unlock();
            return -EEXIST;
        }
    if (roots_g.nroots == roots_g.cap) {
        size_t ncap = roots_g.cap ? roots_g.cap * 2 : 16;
        root *n = realloc(roots_g.roots, ncap * sizeof *n);
        if (!n) {
            lull_gc_unlock();
            return -ENOMEM;
        }
        roots_g.roots = n;
        roots_g.cap = ncap;
    }
    roots_g.roots[roots_g.nroots++] = (root){ start, size, precise };
    lull_gc_unlock();
    return 0;
}

int lull_root_add(void *start, size_t size)
{
    return add(start, size, false);
}

int lull_root_add_refs(void **refs, size_t count)
{
    if (count > SIZE_MAX / sizeof(void *))
        return -EINVAL;
    if ((uintptr_t)refs % sizeof(void *))
        return -EINVAL;
    return add(refs, count * sizeof(void *), true);
}

void lull_root_remove(void *start)
{
    if (!lull_is_initialised())
        return;
    lull_gc_lock();
    for (size_t i = 0; i < roots_g.nroots; i++)
        if (roots_g.roots[i].start == start) {
            roots_g.roots[i] = roots_g.roots[--roots_g.nroots];
            break;
        }
    lull_gc_unlock();
}

void lull_roots_scan(lull_range_fn conservative, lull_slot_fn precise, void *ctx)
{
    for (size_t i = 0; i < roots_g.nroots; i++) {
        uintptr_t lo = (uintptr_t)roots_g.roots[i].start, hi = lo + roots_g.roots[i].size;
        if (roots_g.roots[i].precise) {
            if (precise)
                for (void **slot = (void **)lo; (uintptr_t)slot < hi; slot++)
                    precise(slot, ctx);
        } else if (conservative) {
            conservative(lo, hi, ctx);
        }
    }
    /* Handles and the objects queued for finalization are roots too. */
    lull_handles_scan_roots(conservative, precise, ctx);
    lull_finalize_scan_roots(precise, ctx);
}

void lull_roots_scan_threads(lull_range_fn fn, void *ctx)
{
    /* Every thread's roots were recorded where it stopped; the collecting
     * thread's, where it entered the collection (collect.c). */
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t->parked)
            continue;           /* detached: its stack is gone (registry.h) */
        fn(t->stop_sp, t->stack_hi, ctx);
        if (t->alt_hi)
            fn(t->alt_lo, t->alt_hi, ctx);
        /* Stopped outside lull: its last allocations (base/registry.h), an
         * interior address of the last object in its TLAB and the last one
         * outside it. */
        if (!t->in_gc_lock) {
            uintptr_t next = (uintptr_t)t->tlab->next;
            uintptr_t last[2] = { next ? next - 1 : 0, t->last_alloc };
            fn((uintptr_t)last, (uintptr_t)(last + 2), ctx);
        }
    }
}
