/* gclock.c — the gc lock, and the flag that asks the background job to stop.
 *
 * The gc lock protects the block space, the free-block lists, the thread
 * and root registries and the collection itself (gclock.h). Callers: every
 * tier; a pause holds it from before the world stops to after it restarts.
 * The stop flag is set by whoever stops the background job (trace/workers.c)
 * and polled by the job and by lull_gc_lock_background. */
#include "base/gclock.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/probes.h"
#include "base/registry.h"
#include "base/util.h"

atomic_bool lull_bg_stop;

/* The gc lock is a binary semaphore rather than a mutex: a thread waiting
 * for it must still answer the suspend signal of the thread that holds it
 * and stops the world. ThreadSanitizer delivers signals to a thread
 * blocked in sem_wait, but not to one blocked in pthread_mutex_lock; a
 * trylock-and-sleep loop works there but starves waiters (lull_collect in
 * a busy process). Kernel and libc treat both the same otherwise (a futex).
 * One instance. */
static struct {
    sem_t sem;
    pthread_once_t once;
} gclock_g = { .once = PTHREAD_ONCE_INIT };

/* Waiters past STARVE_NS (below): the next ticket to hand out, and the
 * ticket whose holder may take the lock now; the difference is how many
 * hold one. */
static atomic_ulong starve_next, starve_serving;

static void gc_lock_init(void)
{
    if (sem_init(&gclock_g.sem, 0, 1) != 0)
        lull_fatal("lull_init", "sem_init failed");
}

/* Threads waiting in lull_gc_lock (lull_gc_trylock_after_waiters). */
static atomic_int gc_lock_waiters;

/* A thread that waits for the gc lock is often stopped there, by the very
 * pause it waits for, or right after it posts the lock; the red zone under
 * the libc call it is stopped in and the parts of the signal frame the
 * kernel leaves unwritten are scanned as they are, and held what lull's
 * own deeper calls had left: the allocation pointer of a TLAB the thread
 * had just retired, or a collector's address, which would keep a dropped
 * object alive (tests/heap_shot.c). So the stack below is cleared before
 * blocking and after posting. */
#define WAIT_CLEAR_BYTES (8u << 10)
#define POST_CLEAR_BYTES 1024u
__attribute__((noinline)) static void clear_stack_for_wait(void)
{
    volatile char buf[WAIT_CLEAR_BYTES];
    memset((char *)buf, 0, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}
__attribute__((noinline)) static void clear_stack_for_post(void)
{
    volatile char buf[POST_CLEAR_BYTES];
    memset((char *)buf, 0, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

/* The semaphore is not fair: a running thread takes the lock ahead of the
 * waiter a release woke, which may not be scheduled for milliseconds, and
 * threads that take it at a high rate (a large object each) kept one
 * waiter out for tens of milliseconds. So a waiter that has waited
 * STARVE_NS takes a ticket, and while any thread holds one nobody else
 * tries the lock: lull_gc_lock's other callers wait at the gate and
 * trylocks fail. The ticket holders take the lock in ticket order, each
 * waiting for its turn at the gate and then on the semaphore. The gate
 * polls every GATE_NS in nanosleep, where a suspend signal reaches the
 * thread as it does in sem_wait (no other lock is involved). */
#define STARVE_NS 1000000L
#define GATE_NS   100000L

/* Serving first: both only grow, and serving never passes next. */
static unsigned long starving(void)
{
    unsigned long s = atomic_load_explicit(&starve_serving, memory_order_seq_cst);
    return atomic_load_explicit(&starve_next, memory_order_seq_cst) - s;
}

unsigned lull_gc_lock_queued(void)
{
    return (unsigned)starving();
}

static void gate_nap(void)
{
    struct timespec d = { 0, GATE_NS };
    nanosleep(&d, NULL);
}

static void wait_for_turn(void)
{
    unsigned long ticket = atomic_fetch_add_explicit(&starve_next, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&starve_serving, memory_order_acquire) != ticket)
        gate_nap();
    while (sem_wait(&gclock_g.sem) != 0)
        ;   /* EINTR: a signal handler ran (sem_wait is never restarted) */
    atomic_fetch_add_explicit(&starve_serving, 1, memory_order_seq_cst);
}

/* The blocking part of lull_gc_lock. */
static void wait_for_lock(void)
{
    atomic_fetch_add_explicit(&gc_lock_waiters, 1, memory_order_relaxed);
    clear_stack_for_wait();      /* about to block: see above */
    uint64_t since = lull_now_ns();
    for (;;) {
        uint64_t waited = lull_now_ns() - since;
        if (waited >= (uint64_t)STARVE_NS) {
            wait_for_turn();
            break;
        }
        if (starving()) {
            gate_nap();
            continue;
        }
        struct timespec until = lull_deadline_in(CLOCK_REALTIME, STARVE_NS - waited);   /* sem_timedwait's clock */
        if (sem_timedwait(&gclock_g.sem, &until) == 0)
            break;
    }
    atomic_fetch_sub_explicit(&gc_lock_waiters, 1, memory_order_relaxed);
}

/* The calling thread's in_gc_lock (threads.h), if it is attached. */
static inline void note_in_gc_lock(int in)
{
    lull_thread *self = lull_thread_self;
    if (self)
        self->in_gc_lock = in;
}

void lull_gc_lock(void)
{
    pthread_once(&gclock_g.once, gc_lock_init);
    note_in_gc_lock(1);
    if (starving() || sem_trywait(&gclock_g.sem) != 0)
        wait_for_lock();
    LULL_PROBE0(gc_lock_acquired);
}

void lull_gc_lock_after_fork_child(void)
{
    /* Threads of the parent that waited for the lock are not here. */
    atomic_store_explicit(&gc_lock_waiters, 0, memory_order_relaxed);
    atomic_store_explicit(&starve_next, 0, memory_order_relaxed);
    atomic_store_explicit(&starve_serving, 0, memory_order_relaxed);
}

bool lull_gc_trylock(void)
{
    pthread_once(&gclock_g.once, gc_lock_init);
    if (starving() || sem_trywait(&gclock_g.sem) != 0)
        return false;
    note_in_gc_lock(1);
    LULL_PROBE0(gc_lock_acquired);
    return true;
}

/* A background job that cannot have the lock waits on release_seq, which
 * lull_gc_unlock bumps and wakes while bg_waiting says someone waits, and
 * lull_background_request_stop bumps when the job is asked to stop: the
 * job neither spins nor sleeps past the release it waits for. The wait is
 * bounded (WAIT_NS) as well. */
#define WAIT_NS 1000000L
static _Atomic unsigned release_seq;
static atomic_int bg_waiting;

static void wake_background(void)
{
    atomic_fetch_add_explicit(&release_seq, 1, memory_order_seq_cst);
    lull_futex_wake(&release_seq, INT_MAX);
}

static bool lock_held(void)
{
    int v = 1;
    sem_getvalue(&gclock_g.sem, &v);
    return v <= 0;
}

/* Wait for the next release (or stop request), at most ns; with
 * if_held, not at all while the lock is free. false once the job is
 * asked to stop. */
static bool wait_for_release(long ns, bool if_held)
{
    unsigned seen = atomic_load_explicit(&release_seq, memory_order_seq_cst);
    atomic_fetch_add_explicit(&bg_waiting, 1, memory_order_seq_cst);
    /* Dekker with lull_gc_unlock: our count is visible before we look at
     * the lock again, its post before it looks at the count. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!lull_background_stop_requested() && (!if_held || lock_held()))
        lull_futex_wait(&release_seq, seen, ns);
    atomic_fetch_sub_explicit(&bg_waiting, 1, memory_order_relaxed);
    return !lull_background_stop_requested();
}

/* A semaphore is not fair: a background job that takes the lock again a
 * few microseconds after each release can starve a program thread that
 * waits for it. So a background job lets the threads that wait for the
 * lock have it before it takes it again, waiting for their releases (for
 * at most 100 us: a waiter that is slow to be scheduled does not stall the
 * job). */
bool lull_gc_trylock_after_waiters(void)
{
    if (atomic_load_explicit(&gc_lock_waiters, memory_order_relaxed)) {
        uint64_t t0 = lull_now_ns(), now;
        while (atomic_load_explicit(&gc_lock_waiters, memory_order_relaxed) &&
               (now = lull_now_ns()) - t0 < 100000 && wait_for_release((long)(100000 - (now - t0)), false))
            ;
    }
    return lull_gc_trylock();
}

bool lull_gc_lock_background(unsigned sleep_us)
{
    long ns = sleep_us ? (long)sleep_us * 1000 : WAIT_NS;
    while (!lull_gc_trylock_after_waiters())
        if (!wait_for_release(ns, true))
            return false;
    return true;
}

void lull_background_request_stop(void)
{
    atomic_store_explicit(&lull_bg_stop, true, memory_order_seq_cst);
    wake_background();
}

/* Deferred wakes (gclock.h): a bit per slot, set under the lock, taken
 * by the releasing thread after sem_post. A bit another holder sets
 * meanwhile may be taken by this thread: its wake runs a little early. */
static void (*_Atomic deferred_fn[LULL_GC_DEFER_SLOTS])(void);
static atomic_uint deferred;

void lull_gc_defer(unsigned slot, void (*fn)(void))
{
    LULL_ASSERT(slot < LULL_GC_DEFER_SLOTS);
    atomic_store_explicit(&deferred_fn[slot], fn, memory_order_relaxed);
    atomic_fetch_or_explicit(&deferred, 1u << slot, memory_order_release);
}

/* The wakes run inside a critical region of the releasing thread (when
 * it is attached and not in one already): a wake may take a lock a pause
 * needs (the workers' mutex), and a thread stopped holding it would hold
 * up that pause for good. */
static void run_deferred(void)
{
    lull_thread *self = lull_thread_self;
    bool enter = self && !self->in_critical;
    if (enter)
        lull_enter_critical(self);
    unsigned d = atomic_exchange_explicit(&deferred, 0, memory_order_acquire);
    for (unsigned slot = 0; d; slot++, d >>= 1)
        if (d & 1)
            atomic_load_explicit(&deferred_fn[slot], memory_order_relaxed)();
    if (enter)
        lull_exit_critical(self);
}

void lull_gc_unlock(void)
{
    LULL_PROBE0(gc_lock_released);
    clear_stack_for_post();
    note_in_gc_lock(0);
    sem_post(&gclock_g.sem);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&bg_waiting, memory_order_relaxed))
        wake_background();
    if (atomic_load_explicit(&deferred, memory_order_relaxed))
        run_deferred();
}

