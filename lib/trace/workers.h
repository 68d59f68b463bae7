/* workers.h — the collector's worker threads.
 *
 * mark-workers=N means at most N threads trace in a pause; the thread that
 * stopped the world is one of them, so N - 1 worker threads are started by
 * lull_init (at least one with major=concurrent: the background jobs,
 * the concurrent mark on all of them and the sweep on worker 0, need a
 * thread besides the mutators) and joined by lull_shutdown. They are not attached: they are
 * never stopped by the suspend signal (every signal is blocked in them) and
 * cooperate through the jobs handed to them instead. Idle, they sleep on a
 * condition variable (no spinning). Each has a name (`lull-mark/1`, ...,
 * shown by `ps -L`) and its own tracer (trace.h).
 *
 * fork(): the forking thread holds the gc lock and stops the background
 * job (init.c), so no job runs and every worker is parked; the parent's workers stay parked and carry on.
 * The child has none of those threads: it starts its own set (except
 * under AddressSanitizer: workers.c says why). */
#ifndef LULL_WORKERS_H
#define LULL_WORKERS_H

#include <stdbool.h>

#include "base/config.h"   /* LULL_MAX_WORKERS */
#include "trace/trace.h"


typedef void (*lull_worker_job)(lull_tracer *tr, void *arg);

/* Start n worker threads for pause jobs (lull_init), at least one when
 * `background` (concurrent marking needs a thread besides the mutators
 * even with mark-workers=1; that one then takes no part in pauses).
 * Threads that cannot be created are reported once and the collector runs
 * with fewer. */
void lull_workers_start(unsigned n, bool background);
/* Stop and join them (lull_shutdown). */
void lull_workers_stop(void);
/* In the child of fork(): forget the parent's threads, start new ones. */
void lull_workers_after_fork_child(void);

/* Worker threads that take part in pause jobs (markers besides the
 * stopping thread). */
unsigned lull_workers_count(void);

/* The background job: one job at a time, while the world runs, on the
 * first `width` worker threads at once (the concurrent mark: every one;
 * the background sweep: worker 0 alone), each calling job(its tracer,
 * arg) once. Posted and stopped by the thread that holds the gc lock. The
 * job polls lull_workers_background_stopping() and returns soon after it
 * turns true; stop returns once every thread that took the job has
 * returned, and no thread takes it afterwards (a thread that had not
 * taken it yet never runs it). So a thread may join a job late, or not at
 * all: the job cannot count on how many run it. Every pause stops it
 * first: lull_workers_run must not find it running. can_background: a
 * thread exists to run it; background_threads: how many. Started with
 * the gc lock held, the job's threads are woken at the lock's release
 * (lull_gc_defer): woken inside a pause, a worker took the CPU from the
 * thread that still had to restart the world. */
bool lull_workers_can_background(void);
unsigned lull_workers_background_threads(void);
void lull_workers_start_background(lull_worker_job job, void *arg, unsigned width);
void lull_workers_stop_background(void);
/* The CPU time the background job's threads spent, from the last
 * lull_workers_stop_background's request until the job had returned, the
 * longest of them (0 when no job ran): how promptly the job stops when it
 * has a CPU, whatever the wall-clock wait for the scheduler added. Read
 * by the stopper after the call (gc lock held). */
uint64_t lull_workers_last_stop_cpu_ns(void);
/* How many waits for workers to leave a job (a background job's stop, the
 * end of a pause's job) ended asleep on a condition variable rather than
 * in the short poll before it (workers.c: spin_until_zero), all told. */
uint64_t lull_workers_waits_slept(void);
bool lull_workers_background_stopping(void);
/* How many times a thread has taken a background job, all told. */
uint64_t lull_workers_background_taken(void);

/* Parking for a background job's thread that has nothing to do (only
 * from inside the job). Read kicks() before looking for work; if there is
 * none, wait(seen) sleeps until kick() has been called after that read,
 * or a stop is asked for (whichever came first: no wake-up is lost). */
uint64_t lull_workers_background_kicks(void);
void lull_workers_background_wait(uint64_t seen);
void lull_workers_background_kick(void);
/* Sleep up to ns, or until a kick or a stop, whichever comes first. */
void lull_workers_background_nap(uint64_t ns);

/* Run job(tracer, arg) on the calling thread with `self` and on every
 * worker that joins in time, and return when every call has returned.
 * A worker joins when it wakes to the job before the caller's own call
 * has returned; one that wakes later (descheduled) never runs it, so the
 * caller waits only for workers that are working, never for one to be
 * scheduled. The job therefore claims its work dynamically and cannot
 * count on how many run it. `active` (may be NULL): a joining worker adds
 * 1 to it before its call, so a drain's termination count (trace.h)
 * starts at 1, the caller. Only the thread that stopped the world calls
 * it, with the gc lock held. */
void lull_workers_run(lull_worker_job job, void *arg, lull_tracer *self, atomic_int *active);

#endif
