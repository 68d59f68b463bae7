/* threads.h — the thread registry and per-thread state.
 *
 * The registry is a list protected by the gc lock (collect.h): attach and
 * detach take it, and the collector holds it for a whole stop-the-world,
 * so a thread attaching during a pause waits until the world restarts.
 *
 * Critical regions: a thread that is between taking a slot from its free
 * list and writing the object's header must not be stopped there (the slot
 * would look free to the sweep), or between loading a handle's slot word
 * and extracting the plain pointer from it (handles.c: the word is no
 * address the conservative scan knows). It sets in_critical; the suspend handler,
 * finding it set, only notes pending_suspend and returns, and the thread
 * suspends itself when it leaves the region. Both fields are touched only
 * by the thread itself and its own signal handler. */
#ifndef LULL_THREADS_H
#define LULL_THREADS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "space/heap.h"

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
    /* allocation */
    lull__tlab_t *tlab;                  /* the thread's lull__tlab (TLS) */
    uint32_t  tlab_log;                  /* its range in the nursery log (nursery.c) */
    lull_alloc_caches caches;
    atomic_uint_fast64_t allocated;      /* bytes; written by this thread only */
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

/* The registry, gc lock held. */
lull_thread *lull_threads_first(void);
unsigned     lull_threads_count(void);

void lull_threads_init(void);   /* once per lull_init */
int  lull_threads_attach(void); /* 0, -ENOMEM */
void lull_threads_detach(void);

void lull_stw_suspend_self(lull_thread *t);

/* In the child of fork(), gc lock held: only the forking thread exists;
 * forget every other thread (their stacks are no longer roots). */
void lull_threads_after_fork_child(void);

/* Bytes allocated by every thread since lull_init, attached or gone
 * (takes the gc lock; _locked: the caller holds it). */
uint64_t lull_threads_allocated_bytes(void);
uint64_t lull_threads_allocated_bytes_locked(void);

/* Count an allocation. Only the owning thread writes its counter, so a
 * relaxed load and store (no locked instruction) is enough; readers sum
 * the counters with relaxed loads. */
static inline void lull_thread_count_alloc(lull_thread *t, size_t bytes)
{
    atomic_store_explicit(&t->allocated,
                          atomic_load_explicit(&t->allocated, memory_order_relaxed) + bytes,
                          memory_order_relaxed);
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
