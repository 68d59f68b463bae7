/* threads.c — attach and detach: a thread's record made, linked into the
 * registry (base/registry.c) and unlinked, its allocation state handed back. */
#include "gc/threads.h"
#include "space/meter.h"
#include "space/nursery.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gc/collect.h"
#include "gc/policy.h"
#include "base/util.h"


/* Attach and detach: one instance; the counters of detached threads are
 * written with the gc lock and the registry lock held (detach, the exit
 * destructor), read with the registry lock. The exit key is created once
 * per process. */
static struct {
    uint64_t allocated_by_detached;
    uint64_t outside_tlab_by_detached, locked_by_detached;
    atomic_uint parked;          /* parked records in the registry (registry.h) */
    pthread_key_t exit_key;
    pthread_once_t exit_key_once;
} threads_g = { .exit_key_once = PTHREAD_ONCE_INIT };

/* A thread that exits attached is detached here, by its key's destructor,
 * before the thread is gone: the collector never signals a dead thread. */
static void thread_exit_destructor(void *p)
{
    if (p && lull_thread_self == p)
        lull_threads_detach();
}

static void make_exit_key(void)
{
    if (pthread_key_create(&threads_g.exit_key, thread_exit_destructor) != 0)
        lull_fatal("lull_init", "pthread_key_create failed");
}

void lull_threads_init(void)
{
    pthread_once(&threads_g.exit_key_once, make_exit_key);
    lull_registry_init();
    threads_g.allocated_by_detached = 0;
    threads_g.outside_tlab_by_detached = threads_g.locked_by_detached = 0;
    atomic_store_explicit(&threads_g.parked, 0, memory_order_relaxed);
}

void lull_threads_alloc_counts_locked(uint64_t *outside_tlab, uint64_t *locked)
{
    lull_registry_lock();
    uint64_t o = threads_g.outside_tlab_by_detached, l = threads_g.locked_by_detached;
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        o += atomic_load_explicit(&t->alloc_outside_tlab, memory_order_relaxed);
        l += atomic_load_explicit(&t->alloc_locked, memory_order_relaxed);
    }
    lull_registry_unlock();
    *outside_tlab = o;
    *locked = l;
}

void lull_threads_alloc_counts(uint64_t *outside_tlab, uint64_t *locked)
{
    lull_gc_lock();
    lull_threads_alloc_counts_locked(outside_tlab, locked);
    lull_gc_unlock();
}

uint64_t lull_threads_allocated_bytes_locked(void)
{
    lull_registry_lock();
    uint64_t sum = threads_g.allocated_by_detached;
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        sum += atomic_load_explicit(&t->allocated, memory_order_relaxed);
    lull_registry_unlock();
    return sum;
}

uint64_t lull_threads_allocated_bytes(void)
{
    lull_gc_lock();
    uint64_t sum = lull_threads_allocated_bytes_locked();
    lull_gc_unlock();
    return sum;
}

static int stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return -1;
    int r = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (r != 0)
        return -1;
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
    return 0;
}

void lull_threads_after_fork_child(void)
{
    lull_thread *self = lull_thread_self, *next;
    for (lull_thread *t = lull_threads_first(); t; t = next) {
        next = t->next;
        if (t == self)
            continue;
        lull_nursery_retire_tlab(t);   /* its TLS is still mapped in the child */
        threads_g.allocated_by_detached += atomic_load_explicit(&t->allocated, memory_order_relaxed);
        threads_g.outside_tlab_by_detached += atomic_load_explicit(&t->alloc_outside_tlab, memory_order_relaxed);
        threads_g.locked_by_detached += atomic_load_explicit(&t->alloc_locked, memory_order_relaxed);
        lull_major_drop_caches(&t->caches);
        lull_los_reserve_return(&t->los, true);
        free(t);
    }
    lull_registry_keep_only(self);
    atomic_store_explicit(&threads_g.parked, 0, memory_order_relaxed);
}

int lull_threads_attach(void)
{
    if (lull_thread_self)
        return 0;
    lull_thread *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    if (stack_bounds(&t->stack_lo, &t->stack_hi) != 0) {
        free(t);
        lull_warn("lull_thread_attach", "cannot find the thread's stack bounds");
        return -ENOMEM;
    }
    t->pthread = pthread_self();
    t->tlab = &lull__tlab;
    t->tlab_log = UINT32_MAX;
    t->cards_granted = lull_policy_card_grant();
    lull__tlab = (lull__tlab_t){ NULL, NULL, LULL__NO_TYPE, LULL__NO_TYPE, t->cards_granted,
                                 LULL__MARK_STORE_BATCH };
    lull_registry_lock();     /* not the gc lock: see registry.h */
    lull_registry_link(t);
    lull_thread_self = t;
    lull_registry_unlock();
    pthread_setspecific(threads_g.exit_key, t);
    return 0;
}

/* Hand a detached thread's TLAB and free lists back, fold its counters
 * into the detached ones, unlink and free its record (gc lock held). */
static void finish_detach(lull_thread *t)
{
    lull_nursery_retire_tlab(t);
    lull_meter_unused(lull_major_return_caches(&t->caches));   /* for other threads at once */
    lull_los_reserve_return(&t->los, true);
    threads_g.allocated_by_detached += atomic_load_explicit(&t->allocated, memory_order_relaxed);
    threads_g.outside_tlab_by_detached += atomic_load_explicit(&t->alloc_outside_tlab, memory_order_relaxed);
    threads_g.locked_by_detached += atomic_load_explicit(&t->alloc_locked, memory_order_relaxed);
    lull_registry_lock();
    lull_registry_unlink(t);
    if (t->parked)
        atomic_fetch_sub_explicit(&threads_g.parked, 1, memory_order_relaxed);
    lull_registry_unlock();
    free(t);
}

void lull_threads_finish_parked(void)
{
    if (LULL_LIKELY(!atomic_load_explicit(&threads_g.parked, memory_order_relaxed)))
        return;
    lull_registry_lock();
    lull_thread *next;
    for (lull_thread *t = lull_threads_first(); t; t = next) {
        next = t->next;
        if (t->parked)
            finish_detach(t);        /* takes the registry lock again: re-entrant */
    }
    lull_registry_unlock();
}

bool lull_threads_parked_pending(void)
{
    return atomic_load_explicit(&threads_g.parked, memory_order_relaxed) != 0;
}

/* Detach. With the gc lock free, at once; while another thread holds it
 * (a collection, a sweep, a slow path), the record is parked instead
 * (registry.h): its TLAB copied into it, skipped by pauses and root scans
 * from then on, and handed back by the next holder of the gc lock. Either
 * way the thread waits at most for a pause's stopped world. */
void lull_threads_detach(void)
{
    lull_thread *t = lull_thread_self;
    if (!t)
        return;
    if (lull_gc_trylock()) {
        finish_detach(t);
        lull_registry_lock();
        lull_thread_self = NULL;
        lull_registry_unlock();
        lull_threads_finish_parked();
        lull_gc_unlock();
    } else {
        lull_registry_lock();
        t->parked_tlab = lull__tlab;
        t->tlab = &t->parked_tlab;
        t->parked = true;
        atomic_fetch_add_explicit(&threads_g.parked, 1, memory_order_relaxed);
        lull_thread_self = NULL;
        lull_registry_unlock();
    }
    lull__tlab = (lull__tlab_t){ NULL, NULL, LULL__NO_TYPE, LULL__NO_TYPE, UINT32_MAX, LULL__MARK_STORE_BATCH };
    pthread_setspecific(threads_g.exit_key, NULL);
}
