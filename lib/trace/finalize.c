/* finalize.c — finalizers (finalize.h has the design).
 *
 * The table: a chained hash table on the object's address, whose entries
 * are malloc'ed at registration (never during a pause: a stopped thread may
 * hold malloc's lock), plus the array of entries whose objects are young
 * (in the nursery, or young large objects), which are all a minor looks
 * at. A minor moves young objects: their entries are relinked under their
 * new addresses then, without allocating. Everything here is under the gc
 * lock (registration, runners taking from the queue) or the world stopped
 * (the collection's side, whose thread holds the gc lock too). */
#include "trace/finalize.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/config.h"
#include "base/gclock.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "base/probes.h"
#include "base/registry.h"
#include "base/util.h"

#define NO_YOUNG SIZE_MAX

typedef struct fin_entry {
    struct fin_entry *next;      /* hash chain; the queue's link once queued */
    uintptr_t obj;
    lull_finalizer_fn fn;
    void *data;
    size_t young;                /* index in fin_g.young, or NO_YOUNG */
} fin_entry;

/* One instance; see the file comment for what protects what. */
static struct {
    fin_entry **bucket;
    size_t nbuckets;             /* a power of two, or 0 before the first registration */
    unsigned shift;              /* 64 - log2(nbuckets) */
    size_t count;                /* entries in the table */
    fin_entry **young;
    size_t nyoung, young_cap;
    fin_entry *qhead, *qtail;    /* the queue (FIFO) */
    uint64_t queued_since_wake;
    atomic_uint_fast64_t queued_total;   /* since lull_init (lull_stats) */
} fin_g;

static inline size_t hash(uintptr_t obj)
{
    return (size_t)(((obj >> 4) * 0x9e3779b97f4a7c15ull) >> fin_g.shift);
}

void lull_finalize_init(void)
{
    fin_g.bucket = NULL;
    fin_g.nbuckets = fin_g.count = 0;
    fin_g.young = NULL;
    fin_g.nyoung = fin_g.young_cap = 0;
    fin_g.qhead = fin_g.qtail = NULL;
    fin_g.queued_since_wake = 0;
    atomic_store_explicit(&fin_g.queued_total, 0, memory_order_relaxed);
}

static void link_entry(fin_entry *e)
{
    size_t h = hash(e->obj);
    e->next = fin_g.bucket[h];
    fin_g.bucket[h] = e;
}

static void unlink_entry(fin_entry *e)
{
    fin_entry **p = &fin_g.bucket[hash(e->obj)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
}

static void young_remove(fin_entry *e)
{
    if (e->young == NO_YOUNG)
        return;
    fin_entry *last = fin_g.young[--fin_g.nyoung];
    fin_g.young[e->young] = last;
    last->young = e->young;
    e->young = NO_YOUNG;
}

static fin_entry *lookup(uintptr_t obj)
{
    if (!fin_g.nbuckets)
        return NULL;
    for (fin_entry *e = fin_g.bucket[hash(obj)]; e; e = e->next)
        if (e->obj == obj)
            return e;
    return NULL;
}

static bool is_young(uintptr_t obj)
{
    return lull_in_nursery(obj) || lull_young_large_at(obj) == obj;
}

/* Room for one more entry in the buckets (load at most 1) and the young
 * array (gc lock held, world running: malloc is fine here). */
static bool reserve_one(void)
{
    if (fin_g.count + 1 > fin_g.nbuckets) {
        size_t n = fin_g.nbuckets ? fin_g.nbuckets * 2 : 256;
        fin_entry **nb = calloc(n, sizeof *nb);
        if (!nb)
            return false;
        fin_entry **old = fin_g.bucket;
        size_t oldn = fin_g.nbuckets;
        fin_g.bucket = nb;
        fin_g.nbuckets = n;
        fin_g.shift = 64u - (unsigned)__builtin_ctzll(n);
        for (size_t i = 0; i < oldn; i++)
            for (fin_entry *e = old[i], *next; e; e = next) {
                next = e->next;
                link_entry(e);
            }
        free(old);
    }
    if (fin_g.nyoung == fin_g.young_cap) {
        size_t n = fin_g.young_cap ? fin_g.young_cap * 2 : 256;
        fin_entry **ny = realloc(fin_g.young, n * sizeof *ny);
        if (!ny)
            return false;
        fin_g.young = ny;
        fin_g.young_cap = n;
    }
    return true;
}

int lull_register_finalizer(void *obj, lull_finalizer_fn fn, void *data)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!obj || !lull_object_plausible(obj))
        return -EINVAL;
    uintptr_t a = (uintptr_t)obj;
    lull_gc_lock();
    fin_entry *e = lookup(a);
    if (e) {
        if (fn) {
            e->fn = fn;
            e->data = data;
        } else {
            unlink_entry(e);
            young_remove(e);
            fin_g.count--;
            free(e);
        }
        lull_gc_unlock();
        return 0;
    }
    if (!fn) {
        lull_gc_unlock();
        return 0;
    }
    e = malloc(sizeof *e);
    if (!e || !reserve_one()) {
        lull_gc_unlock();
        free(e);
        return -ENOMEM;
    }
    *e = (fin_entry){ .obj = a, .fn = fn, .data = data, .young = NO_YOUNG };
    link_entry(e);
    fin_g.count++;
    if (is_young(a)) {
        e->young = fin_g.nyoung;
        fin_g.young[fin_g.nyoung++] = e;
    }
    lull_gc_unlock();
    __asm__ __volatile__("" : : "r"(obj) : "memory");   /* obj held until registered */
    return 0;
}

/* ---- the collection's side (world stopped) ---- */

void lull_finalize_scan_roots(lull_slot_fn precise, void *ctx)
{
    if (!precise)
        return;
    for (fin_entry *e = fin_g.qhead; e; e = e->next)
        precise((void **)&e->obj, ctx);
}

/* Entry e's object is dead: keep it, queue it. */
static void queue_dead(fin_entry *e, lull_slot_fn keep, void *ctx)
{
    unlink_entry(e);
    young_remove(e);
    fin_g.count--;
    keep((void **)&e->obj, ctx);
    e->next = NULL;
    if (fin_g.qtail)
        fin_g.qtail->next = e;
    else
        fin_g.qhead = e;
    fin_g.qtail = e;
}

uint64_t lull_finalize_collect(lull_fate_fn fate, lull_slot_fn keep, void *ctx, bool young_only)
{
    uint64_t queued = 0;
    if (young_only) {
        for (size_t i = 0; i < fin_g.nyoung;) {
            fin_entry *e = fin_g.young[i];
            uintptr_t now = fate(e->obj, ctx);
            if (!now) {
                queue_dead(e, keep, ctx);   /* the last young entry moves to i */
                queued++;
                continue;
            }
            if (now != e->obj) {
                unlink_entry(e);
                e->obj = now;
                link_entry(e);
            }
            i++;
        }
    } else {
        for (size_t b = 0; b < fin_g.nbuckets; b++)
            for (fin_entry *e = fin_g.bucket[b], *next; e; e = next) {
                next = e->next;
                uintptr_t now = fate(e->obj, ctx);
                if (!now) {
                    queue_dead(e, keep, ctx);
                    queued++;
                } else if (now != e->obj) {
                    /* Evacuated by a synchronous major (mark.h): relinked
                     * under its new address. If that puts it in a bucket
                     * still ahead, it is asked again, and fate of the copy
                     * is the copy. */
                    unlink_entry(e);
                    e->obj = now;
                    link_entry(e);
                }
            }
    }
    if (queued) {
        fin_g.queued_since_wake += queued;
        LULL_PROBE1(finalizers_queued, queued);
        atomic_fetch_add_explicit(&fin_g.queued_total, queued, memory_order_relaxed);
    }
    return queued;
}

void lull_finalize_end_minor(void)
{
    for (size_t i = 0; i < fin_g.nyoung;) {
        fin_entry *e = fin_g.young[i];
        if (is_young(e->obj)) {
            i++;
            continue;
        }
        young_remove(e);   /* the last young entry moves to i */
    }
}

/* ---- the queue's consumers (gc/finalizers.c) ---- */

bool lull_finalize_take(void **obj, lull_finalizer_fn *fn, void **data)
{
    lull_gc_lock();
    fin_entry *e = fin_g.qhead;
    if (!e) {
        lull_gc_unlock();
        return false;
    }
    fin_g.qhead = e->next;
    if (!fin_g.qhead)
        fin_g.qtail = NULL;
    *obj = (void *)e->obj;
    *fn = e->fn;
    *data = e->data;
    lull_gc_unlock();
    free(e);
    return true;
}

bool lull_finalize_pending_wake(void)
{
    return fin_g.queued_since_wake != 0;
}

void lull_finalize_woken(void)
{
    fin_g.queued_since_wake = 0;
}

uint64_t lull_finalize_queued_total(void)
{
    return atomic_load_explicit(&fin_g.queued_total, memory_order_relaxed);
}

void lull_finalize_free_all(void)
{
    for (fin_entry *e = fin_g.qhead, *next; e; e = next) {
        next = e->next;
        free(e);
    }
    for (size_t b = 0; b < fin_g.nbuckets; b++)
        for (fin_entry *e = fin_g.bucket[b], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(fin_g.bucket);
    free(fin_g.young);
    lull_finalize_init();
}

void lull_finalize_queue_after_fork_child(void)
{
    if (fin_g.qhead)
        fin_g.queued_since_wake = 1;
}
