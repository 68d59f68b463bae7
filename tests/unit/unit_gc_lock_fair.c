/* The gc lock serves a starving waiter first (gclock.c): a thread that has
 * waited STARVE_NS takes a ticket, and while any thread holds one nobody
 * else tries the lock; the ticket holders take it in order. Four request
 * threads of a server, each taking the lock for every large object, kept
 * one of them waiting 20-25 ms while no single hold lasted more than 7 ms:
 * the semaphore lets a running thread take the lock ahead of the waiter a
 * release woke, not yet scheduled.
 *
 * Here, 20 times: this thread holds the lock until a waiter has taken a
 * ticket, starts a thread that takes the lock back to back, and releases:
 * the waiter must have the lock before that thread takes it once. Without
 * the tickets that thread took it up to 141 times first, or kept the
 * waiter out for the whole minute the test was given. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/gclock.h"
#include "base/util.h"
#include "unit.h"

#define ROUNDS 20

static atomic_bool waiter_has_it, stop;
static atomic_ulong hammer_taken, hammer_before_waiter;

static void *waiter(void *arg)
{
    (void)arg;
    lull_gc_lock();
    atomic_store(&hammer_before_waiter, atomic_load(&hammer_taken));
    atomic_store(&waiter_has_it, true);
    lull_gc_unlock();
    return NULL;
}

static void *hammer(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        lull_gc_lock();
        atomic_fetch_add(&hammer_taken, 1);
        for (uint64_t t0 = lull_now_ns(); lull_now_ns() - t0 < 5000;)
            ;
        lull_gc_unlock();
    }
    return NULL;
}

static void sleep_us(long us)
{
    struct timespec d = { 0, us * 1000 };
    nanosleep(&d, NULL);
}

int main(void)
{
    unsigned long worst = 0;
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&waiter_has_it, false);
        atomic_store(&stop, false);
        atomic_store(&hammer_taken, 0);
        pthread_t w, h;
        lull_gc_lock();
        UCHECK(pthread_create(&w, NULL, waiter, NULL) == 0, "pthread_create");
        for (int i = 0; i < 20000 && !lull_gc_lock_queued(); i++)
            sleep_us(100);
        UCHECK(lull_gc_lock_queued() == 1, "the waiter did not join the queue (%u queued)", lull_gc_lock_queued());
        UCHECK(pthread_create(&h, NULL, hammer, NULL) == 0, "pthread_create");
        sleep_us(2000);                          /* the hammer is at the lock */
        lull_gc_unlock();
        pthread_join(w, NULL);
        atomic_store(&stop, true);
        pthread_join(h, NULL);
        unsigned long before = atomic_load(&hammer_before_waiter);
        if (before > worst)
            worst = before;
    }
    printf("unit_gc_lock_fair: a newcomer took the lock at most %lu times before a queued waiter had it "
           "(%d rounds)\n", worst, ROUNDS);
    UCHECK(worst == 0, "a newcomer took the lock %lu times before the queued waiter had it", worst);
    return 0;
}
