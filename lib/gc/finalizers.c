/* finalizers.c — running queued finalizers: lull_run_finalizers on the
 * calling thread, and the finalizer thread (finalizers=auto), started at
 * the first wake, attached only while it runs them. The queue and the
 * registered objects are trace/finalize.c's. */
#include "gc/finalizers.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/config.h"
#include "base/probes.h"
#include "base/registry.h"
#include "base/util.h"
#include "gc/threads.h"
#include "space/heap.h"

/* One instance: the thread's state, written by the gc lock's holder (wake,
 * fork) or lull_shutdown (stop); the flags are read by the thread. */
static struct {
    pthread_t thread;
    bool thread_started;
    sem_t wake;
    atomic_bool stop, thread_done;
    atomic_uint_fast64_t run;    /* finalizers run since lull_init (lull_stats) */
} runner_g;

/* Take the oldest queued finalizer and run it on this (attached) thread.
 * false: the queue was empty. While it runs, the object is held in this
 * frame (a conservative root: kept, and pinned if it is still in the
 * nursery), no longer in the queue. */
static bool run_one(void)
{
    void *obj_taken, *data;
    lull_finalizer_fn fn;
    if (!lull_finalize_take(&obj_taken, &fn, &data))
        return false;
    void *volatile obj = obj_taken;
    LULL_PROBE2(finalizer_run, obj, LULL_PROBE_TYPE_NAME(lull_header_type(*(uintptr_t *)obj)));
    fn(obj, data);
    atomic_fetch_add_explicit(&runner_g.run, 1, memory_order_relaxed);
    __asm__ __volatile__("" : : "r"(obj) : "memory");
    return true;
}

uint64_t lull_finalizers_run_total(void)
{
    return atomic_load_explicit(&runner_g.run, memory_order_relaxed);
}

void lull_finalizers_reset(void)
{
    atomic_store_explicit(&runner_g.run, 0, memory_order_relaxed);
}

void lull_run_finalizers(void)
{
    if (!lull_thread_self) {
        if (!lull_is_initialised())
            lull_fatal("lull_run_finalizers", "lull is not initialised (call lull_init first)");
        lull_fatal("lull_run_finalizers", "the calling thread is not attached (call lull_thread_attach first)");
    }
    while (run_one())
        ;
}

static void *finalizer_main(void *arg)
{
    (void)arg;
    for (;;) {
        while (sem_wait(&runner_g.wake) != 0)
            ;   /* EINTR */
        /* Attached only while finalizers run: they are program code, which
         * may allocate and store; waiting, the thread is no root and is not
         * stopped by the pauses. */
        if (lull_threads_attach() != 0) {
            lull_warn("lull-finalizer", "cannot attach: finalizers wait for the next wake");
        } else {
            while (run_one())
                ;
            lull_threads_detach();
        }
        if (atomic_load(&runner_g.stop))
            break;
    }
    atomic_store(&runner_g.thread_done, true);
    return NULL;
}

void lull_finalize_wake(void)
{
    lull_finalize_woken();
    if (lull_cfg.finalizers != LULL_FINALIZERS_AUTO)
        return;
    if (!runner_g.thread_started) {
        if (sem_init(&runner_g.wake, 0, 0) != 0 ||
            pthread_create(&runner_g.thread, NULL, finalizer_main, NULL) != 0) {
            lull_warn("lull_collect", "cannot start the finalizer thread: finalizers run in lull_run_finalizers only");
            return;
        }
        pthread_setname_np(runner_g.thread, "lull-finalizer");
        runner_g.thread_started = true;
    }
    sem_post(&runner_g.wake);
}

void lull_finalize_stop(void)
{
    if (runner_g.thread_started) {
        atomic_store(&runner_g.stop, true);
        sem_post(&runner_g.wake);
        /* Polled, not joined at once: this thread is attached, and the
         * finalizers may collect, which stops it; a thread blocked in
         * pthread_join is not reliably signalled under ThreadSanitizer. */
        while (!atomic_load(&runner_g.thread_done))
            usleep(200);
        pthread_join(runner_g.thread, NULL);
        sem_destroy(&runner_g.wake);
        runner_g.thread_started = false;
    }
    atomic_store(&runner_g.stop, false);
    atomic_store(&runner_g.thread_done, false);
    lull_finalize_free_all();
}

void lull_finalize_after_fork_child(void)
{
    /* The parent's thread is not here; the queue is (the child runs what
     * it finds queued, on a thread of its own, at its next wake). */
    runner_g.thread_started = false;
    atomic_store(&runner_g.stop, false);
    atomic_store(&runner_g.thread_done, false);
    lull_finalize_queue_after_fork_child();
}
