/* registry.h — the registry of attached threads and each one's record.
 *
 * The registry is a list protected by its own lock, the registry lock
 * (below), not the gc lock: attach links a record holding only it, so a
 * thread attaches in microseconds whatever the collector does, waiting at
 * most for a pause's stopped world (a pause holds the registry lock from
 * before it stops the world until it has restarted it). A record is
 * unlinked with the gc lock and the registry lock held (order: gc lock,
 * then registry lock; attach takes no other lock); a detach that cannot
 * have the gc lock parks its record (below) with the registry lock alone.
 * Walk the registry with the registry lock held (or inside a pause, which
 * holds it).
 *
 * Critical regions: a thread that is between taking a slot from its free
 * list (or a large object's run) and writing the object's header must not
 * be stopped there (the slot would look free to the sweep, the run's young
 * object unreached and headerless to a minor), or between loading a handle's slot word
 * and extracting the plain pointer from it (trace/handles.c: the word is no
 * address the conservative scan knows). It sets in_critical; the suspend
 * handler (base/stw.c), finding it set, only notes pending_suspend and
 * returns, and the thread suspends itself when it leaves the region. Both
 * fields are touched only by the thread itself and its own signal handler. */
#ifndef LULL_REGISTRY_H
#define LULL_REGISTRY_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lull.h"

/* The small-object space's size classes (space/heap.h) and a thread's free
 * list for each (pointer-free?, size class) pair, kept in its record. */
#define LULL_MAX_CLASSES 48
typedef struct lull_alloc_cache {
    void    *head;
    uint32_t count;
} lull_alloc_cache;

typedef struct lull_alloc_caches {
    lull_alloc_cache c[2][LULL_MAX_CLASSES];   /* [has_refs][class] */
} lull_alloc_caches;

/* A thread's large-object reserve (space/los.c): up to LULL_LOS_RUNS runs
 * of the block space, run i the blocks [next[i], end[i]), taken under the
 * gc lock and carved into large objects by their thread alone, inside a
 * critical region, without a lock. A major's first pause takes every
 * thread's reserve back with the world stopped (a minor keeps them and
 * resets `last`), as detach does with the gc lock. */
#define LULL_LOS_RUNS 8
typedef struct lull_los_reserve {
    uint32_t next[LULL_LOS_RUNS], end[LULL_LOS_RUNS];
    uint32_t nruns;
    uint32_t dirty;      /* bit i: run i was reused, a carved object is zeroed */
    uint32_t last;       /* blocks the last refill asked for (it doubles while the thread carves) */
} lull_los_reserve;

typedef struct lull_thread {
    struct lull_thread *next, *prev;     /* registry, gc lock */
    pthread_t pthread;
    uintptr_t stack_lo, stack_hi;        /* the thread's stack */
    /* stop-the-world (stw.c) */
    atomic_ulong suspended_epoch;        /* last stop this thread acknowledged */
    volatile sig_atomic_t in_critical;
    volatile sig_atomic_t pending_suspend;
    uintptr_t stop_sp;                   /* lowest live stack address when stopped */
    uintptr_t alt_lo, alt_hi;            /* alternate signal stack, if stopped on one */
    /* Detached without the gc lock (gc/threads.c): the thread is gone or
     * going, never signalled, its stack no root; its TLAB (copied into
     * parked_tlab, where `tlab` points) and free lists wait in the registry
     * for the next holder of the gc lock to hand them back. Written with
     * the registry lock held. */
    bool parked;
    lull__tlab_t parked_tlab;
    /* allocation */
    lull__tlab_t *tlab;                  /* the thread's lull__tlab (TLS), or parked_tlab */
    uint32_t  tlab_log;                  /* its range in the nursery log (nursery.c) */
    uint32_t  refills_unasked;           /* TLAB refills since it last asked the policy (alloc.c); this thread only */
    uint32_t  cards_granted;             /* its last card grant (policy.h); this thread, or a pause */
    lull_alloc_caches caches;
    lull_los_reserve los;                /* this thread, or a pause (above) */
    atomic_uint_fast64_t allocated;      /* bytes; written by this thread only */
    /* Allocations outside the TLAB's bump (medium, large, pinned objects
     * and TLAB refills), and those of them that took the gc lock; written
     * by this thread only, like `allocated`. */
    atomic_uint_fast64_t alloc_outside_tlab, alloc_locked;
    /* The last object this thread allocated outside its TLAB (a 2-8 KiB
     * one, a large one, lull_alloc_pinned), until it next refills its TLAB;
     * 0 if none. A root, as is the word below the TLAB's allocation
     * pointer (the last object allocated in it), for a thread stopped
     * outside lull: one filling a new object may hold no address inside
     * it, only one the compiler rebased (lull_roots_scan_threads,
     * tests/disguised.c). Written by this thread (inside a critical region
     * or under the gc lock), read by the collector with the thread
     * stopped. */
    uintptr_t last_alloc;
    /* Set while this thread holds or waits for the gc lock (collect.c):
     * it is then inside a call into lull, not between an allocation and
     * the stores that fill the object, and its last allocations are no
     * roots (so that a program that drops what it allocated and collects
     * sees it freed). Written by this thread only. */
    volatile sig_atomic_t in_gc_lock;
    /* handles (handles.c): per kind, the slot + 1 where this thread's next
     * lull_handle_new looks first; 0 before its first use */
    uint32_t handle_hint[4];
    uint32_t handle_region[4];           /* the region handed to it + 1; 0 before its first use */
    uint32_t handle_rescan[4];           /* no look behind the hint until `high` reaches this */
} lull_thread;

extern __thread lull_thread *lull_thread_self __attribute__((tls_model("initial-exec")));

/* The registry lock. Re-entrant for its holder (a pause's own walks);
 * never taken by a thread blocked for a stop (attach: not yet attached;
 * detach and the others: with the gc lock, so no stop is under way).
 * lull_registry_lock_fork_child: in the child of fork(), which holds it
 * (taken in the parent's prepare handler), or not if `held` is false. */
void lull_registry_lock(void);
void lull_registry_unlock(void);
void lull_registry_lock_after_fork_child(void);

/* The registry, registry lock held. */
lull_thread *lull_threads_first(void);
unsigned     lull_threads_count(void);
/* Link a new record first / unlink one (registry lock held); make `self` the
 * only one (the child of fork(): the other threads are gone). */
void lull_registry_link(lull_thread *t);
void lull_registry_unlink(lull_thread *t);
void lull_registry_keep_only(lull_thread *self);
void lull_registry_init(void);

/* base/stw.c: suspend the calling thread for the pause that asked while
 * it was in a critical region. */
void lull_stw_suspend_self(lull_thread *t);

/* Count an allocation. Only the owning thread writes its counter, so a
 * relaxed load and store (no locked instruction) is enough; readers sum
 * the counters with relaxed loads. */
static inline void lull_thread_count_alloc(lull_thread *t, size_t bytes)
{
    atomic_store_explicit(&t->allocated,
                          atomic_load_explicit(&t->allocated, memory_order_relaxed) + bytes,
                          memory_order_relaxed);
}

/* Count one of the thread's own counters up by one (see above). */
static inline void lull_thread_count(atomic_uint_fast64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static inline void lull_enter_critical(lull_thread *t)
{
    t->in_critical = 1;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline void lull_exit_critical(lull_thread *t)
{
    atomic_signal_fence(memory_order_seq_cst);
    t->in_critical = 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(t->pending_suspend, 0))
        lull_stw_suspend_self(t);
}

#endif
