/* gclock.h — the gc lock, and the background job's stop flag.
 * Every tier may take the lock; no thread is ever stopped holding it
 * (a pause's stopper holds it for the whole pause). */
#ifndef LULL_GCLOCK_H
#define LULL_GCLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

/* The gc lock protects the block space, the free-block lists, the thread
 * and root registries and the collection itself. Whoever stops the world
 * holds it for the whole pause, so no thread is ever stopped holding it.
 * A waiter past 1 ms is served before anyone who comes after (gclock.c). */
void lull_gc_lock(void);
void lull_gc_unlock(void);
/* Take it if free and no starving waiter is owed it (a collector thread
 * that must not wait for it). */
bool lull_gc_trylock(void);
/* The same, for a background job that takes it again and again: the
 * threads waiting for it have it first. */
bool lull_gc_trylock_after_waiters(void);
/* The lock for a background job, tried until had (the thread that holds
 * it may be stopping the job: blocking on it could deadlock); false when
 * the job is asked to stop meanwhile. Between tries the job waits for the
 * lock's next release or a stop request, at most sleep_us (1 ms if 0),
 * without spinning. */
bool lull_gc_lock_background(unsigned sleep_us);
/* A wake-up deferred to the gc lock's release (gc lock held): a thread
 * woken while the lock is held may take the CPU from its holder (a woken
 * sleeper preempts its waker), and every thread that needs the lock then
 * waits for the scheduler. fn runs on the releasing thread right after
 * the release, once however often it was deferred in the hold, inside a
 * critical region of that thread (no pause stops it there: fn must not
 * wait for one); `slot` (below LULL_GC_DEFER_SLOTS) names it. */
#define LULL_GC_DEFER_SLOTS 4u
enum {
    LULL_GC_DEFER_MEMORY = 0,      /* the memory thread's kick (gc/background.c) */
    LULL_GC_DEFER_WORKERS = 1,     /* a posted background job's threads (trace/workers.c) */
};
void lull_gc_defer(unsigned slot, void (*fn)(void));
/* Waiters holding a ticket: they waited for the lock too long and are
 * served first, in order (gclock.c). */
unsigned lull_gc_lock_queued(void);
/* In the child of fork() (the forking thread holds the lock): forget the
 * parent's waiters. */
void lull_gc_lock_after_fork_child(void);

/* The background job is asked to stop (set by trace/workers.c when the
 * gc lock's holder stops the job; polled by the job, without the lock). */
extern atomic_bool lull_bg_stop;
/* Ask the background job to stop: set the flag and wake a job waiting for
 * the gc lock (trace/workers.c, by the lock's holder). */
void lull_background_request_stop(void);
static inline bool lull_background_stop_requested(void)
{
    return atomic_load_explicit(&lull_bg_stop, memory_order_relaxed);
}

#endif
