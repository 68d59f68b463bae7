/* collect.c — when to collect, and what a collection does, in order.
 *
 * Two kinds, both run with the world stopped by the thread that asked for
 * them (an allocation, lull_collect, or the debug option collect-every):
 *
 *   minor  (nursery.c) pin what conservative roots point at, copy every
 *          other live nursery object into the major heap, update every
 *          reference to it; the nursery's free space becomes fragments.
 *   major  a minor, then a full mark of the major heap (the nursery's
 *          pinned survivors included) and a sweep of it. Concurrent
 *          marking comes later; until then every major is synchronous.
 *
 * When to collect, and how big the heap is: policy.c. */
#include "collect.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "heap.h"
#include "mark.h"
#include "nursery.h"
#include "policy.h"
#include "probes.h"
#include "roots.h"
#include "stats.h"
#include "stw.h"
#include "threads.h"
#include "util.h"
#include "verify.h"
#include "workers.h"

#define EMPTY_BLOCK_MAX_AGE 2   /* collections an empty block is kept committed */

/* The gc lock is a binary semaphore rather than a mutex: a thread waiting
 * for it must still answer the suspend signal of the thread that holds it
 * and stops the world. ThreadSanitizer delivers signals to a thread
 * blocked in sem_wait, but not to one blocked in pthread_mutex_lock; a
 * trylock-and-sleep loop works there but starves waiters (lull_collect in
 * a busy process). Kernel and libc treat both the same otherwise (a futex).
 *
 * The collection state: one instance; everything but the lock itself is
 * written with the gc lock held. */
static struct {
    sem_t gc_lock;
    pthread_once_t gc_lock_once;
    uint64_t ncollections;         /* the rest: under gc_lock */
    lull_pause_hook pause_hook;
    void *pause_hook_data;
} collect_g = { .gc_lock_once = PTHREAD_ONCE_INIT };

static void gc_lock_init(void)
{
    if (sem_init(&collect_g.gc_lock, 0, 1) != 0)
        lull_fatal("lull_init", "sem_init failed");
}

void lull_gc_lock(void)
{
    pthread_once(&collect_g.gc_lock_once, gc_lock_init);
    while (sem_wait(&collect_g.gc_lock) != 0)
        ;   /* EINTR: a signal handler ran (sem_wait is never restarted) */
}

void lull_gc_unlock(void)
{
    sem_post(&collect_g.gc_lock);
}

void lull_set_pause_hook(lull_pause_hook hook, void *data)
{
    if (!lull_is_initialised())
        lull_fatal("lull_set_pause_hook", "lull is not initialised (call lull_init first)");
    lull_gc_lock();
    collect_g.pause_hook = hook;
    collect_g.pause_hook_data = data;
    lull_gc_unlock();
}

void lull_collect_init(void)
{
    collect_g.pause_hook = NULL;
    collect_g.pause_hook_data = NULL;
    collect_g.ncollections = 0;
    lull_policy_init();
}

uint64_t lull_collect_count(void)
{
    return collect_g.ncollections;
}

/* The collector's frames leave heap addresses on this thread's stack
 * (objects it copied, scanned, swept). The frames the program builds next
 * over that memory would hold them in uninitialised slots, and a later
 * conservative scan would keep those objects, and all they reach, alive.
 * Zero the memory below the caller's frame once the collection is done. */
#define CLEAR_STACK_BYTES (64u << 10)
__attribute__((noinline)) static void clear_stack_below(void)
{
    volatile char buf[CLEAR_STACK_BYTES];
    memset((char *)buf, 0, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

void lull_collect_locked(int generation, const char *reason)
{
    lull_thread *self = lull_thread_self;
    bool major = generation == LULL_GEN_MAJOR;
    uint64_t t0 = lull_now_ns();

    /* This thread's roots are its registers and stack as they are here, on
     * entry, like a stopped thread's at its suspend point: `entry` holds the
     * registers, and the scan starts at it. The collector's own frames
     * below are not roots: they hold addresses from the work of this very
     * pause (the minor before a major copies and scans objects, then the
     * frames of the root scan reuse that memory), and a word left in one
     * kept a dead object and all it reaches alive. */
    ucontext_t entry;
    if (self) {
        lull_capture_registers(&entry);
        lull_stw_record_roots(self, (uintptr_t)&entry);
    }

    /* Stop: afterwards every other attached thread sits in the suspend
     * handler with its live stack range recorded, outside any critical
     * region. */
    LULL_PROBE2(collection_begin, generation, reason);
    lull_stw_stop(self);
    LULL_PROBE1(world_stopped, lull_threads_count());

    /* Minor: empty the nursery into the major heap. */
    uint64_t promoted = lull_nursery_collect();
    LULL_PROBE1(minor_end, promoted);

    uint64_t live = 0;
    if (major) {
        /* Retire the allocation caches: the slots they still hold are free
         * (word 0 is 0) and the sweep re-lists them. */
        uint64_t unused = 0;
        for (lull_thread *t = lull_threads_first(); t; t = t->next)
            unused += lull_major_drop_caches(&t->caches);
        lull_policy_note_unused(unused);

        /* Mark: every mark bit is clear before (checked in checked
         * builds); afterwards exactly the objects reachable from stacks,
         * registers and registered roots are marked, the nursery's pinned
         * survivors included. */
        lull_mark_assert_all_clear();
        lull_tracer tr = { .id = 0 };
        lull_roots_scan_threads(lull_mark_conservative, &tr);
        lull_roots_scan(lull_mark_conservative, lull_mark_precise_slot, &tr);
        if (lull_cfg.verify_parallel)
            lull_mark_verify_parallel_save();
        lull_mark_drain(&tr);
        if (lull_cfg.verify_parallel && lull_workers_count())
            lull_mark_verify_parallel_check(&tr);
        lull_tracer_release(&tr);
        LULL_PROBE1(mark_end, lull_mark_overflows());
        if (lull_cfg.verify)
            lull_verify_marked();

        /* Sweep: unmarked objects are freed, mark bits cleared again. Empty
         * blocks kept long enough go back to the OS. */
        live = lull_major_sweep(lull_cfg.poison) + lull_los_sweep() + lull_nursery_after_major();
        lull_major_release_empty(EMPTY_BLOCK_MAX_AGE);
        LULL_PROBE1(sweep_end, live);

        lull_policy_after_major(live);
    }
    collect_g.ncollections++;

    lull_stw_restart(self);
    uint64_t pause = lull_now_ns() - t0;
    LULL_PROBE2(pause_end, collect_g.ncollections, pause);

    /* The world runs again; this thread still holds the gc lock, so the
     * runs freed by the sweep can be given back to the OS before anyone
     * can allocate from them. */
    lull_space_release_pending();
    clear_stack_below();
    __asm__ __volatile__("" : : "r"(&entry) : "memory");   /* `entry` lives until here */

    enum lull_pause_kind kind = major ? LULL_PAUSE_MAJOR : LULL_PAUSE_MINOR;
    lull_stats_record_pause(kind, pause);
    lull_stats_record_collection(kind, 1, live);
    if (collect_g.pause_hook) {
        lull_pause_event ev = { .generation = generation, .collection = collect_g.ncollections,
                                .start_ns = t0, .duration_ns = pause };
        collect_g.pause_hook(&ev, collect_g.pause_hook_data);
    }
    if (lull_cfg.log) {
        if (major) {
            uint64_t marked, by_stopper;
            lull_mark_last_work(&marked, &by_stopper);
            fprintf(stderr, "lull: collection %llu (major, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
                    "workers), live %.1f MiB, heap %.1f MiB, scanned %llu objects (%llu by workers)%s\n",
                    (unsigned long long)collect_g.ncollections, reason, (double)pause / 1e6,
                    (double)promoted / 1024.0, (double)lull_nursery_promoted_by_workers() / 1024.0,
                    (double)live / 1048576.0,
                    (double)lull_heap_bytes_held() / 1048576.0, (unsigned long long)marked,
                    (unsigned long long)(marked - by_stopper),
                    lull_mark_overflows() ? " (mark stack overflowed)" : "");
        } else
            fprintf(stderr, "lull: collection %llu (minor, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
                    "workers)\n", (unsigned long long)collect_g.ncollections, reason, (double)pause / 1e6,
                    (double)promoted / 1024.0, (double)lull_nursery_promoted_by_workers() / 1024.0);
    }
}

void lull_collect(int generation)
{
    if (!lull_is_initialised())
        lull_fatal("lull_collect", "lull is not initialised (call lull_init first)");
    if (generation != LULL_GEN_NURSERY && generation != LULL_GEN_MAJOR)
        lull_fatal("lull_collect", "unknown generation %d (LULL_GEN_NURSERY or LULL_GEN_MAJOR)", generation);
    lull_gc_lock();
    lull_collect_locked(generation, "explicit");
    lull_gc_unlock();
}

bool lull_set_allow_synchronous_major(bool allow)
{
    /* Every major is synchronous until concurrent marking exists: the
     * request cannot be honoured. */
    (void)allow;
    return false;
}
