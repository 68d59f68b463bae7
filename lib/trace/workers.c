/* workers.c — the collector's worker threads (workers.h). */
#include "trace/workers.h"
#include "base/gclock.h"
#include "base/config.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/timeline.h"
#include "base/util.h"

/* The pool. `lock` protects every field but the tracers; a tracer belongs
 * to its worker thread while a job runs and to nobody otherwise. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t  wake;        /* a new job, or quit */
    pthread_cond_t  done;        /* the last worker finished the job */
    unsigned        nthreads;    /* started and not yet joined */
    unsigned        wanted;      /* what lull_init asked for */
    uint64_t        job_seq;     /* bumped for every job */
    uint64_t        start_seq;   /* job_seq when the threads were started */
    atomic_uint     running;     /* workers that joined the current job and are still in it
                                    (written under `lock`, read without it by spin_until_zero) */
    bool            job_closed;  /* the caller's own call returned: no worker joins any more */
    atomic_int     *job_active;  /* the job's termination count, bumped by each joiner */
    unsigned        width;       /* workers that take part in pause jobs */
    unsigned        pause_wanted;
    bool            spin;        /* more than one CPU allowed: spin_until_zero polls */
    uint64_t        waits_slept; /* lull_workers_waits_slept */
    lull_worker_job job;
    void           *arg;
    bool            quit;
    /* The background job (workers.h): posted for workers 0..bg_width-1;
     * each takes it once (bg_seq tells a new job from the one it ran). */
    pthread_cond_t  bg_done;     /* the last thread inside it returned */
    pthread_cond_t  bg_kick;     /* lull_workers_background_kick, or a stop */
    lull_worker_job bg_job;
    void           *bg_arg;
    uint64_t        bg_seq;      /* bumped for every background job */
    unsigned        bg_width;
    bool            bg_posted;   /* may still be taken (false once stopped) */
    bool            bg_pending;  /* started, to be posted at the gc lock's release */
    atomic_uint     bg_running;  /* threads inside bg_job (the same) */
    uint64_t        bg_taken;    /* background jobs taken by a thread, all told */
    uint64_t        bg_kicks;    /* lull_workers_background_kick calls */
    uint64_t        bg_stop_cpu_ns;   /* lull_workers_last_stop_cpu_ns */
    pthread_t       threads[LULL_MAX_WORKERS];
    lull_tracer     tracers[LULL_MAX_WORKERS];
} workers_g = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                .done = PTHREAD_COND_INITIALIZER, .bg_done = PTHREAD_COND_INITIALIZER,
                .bg_kick = PTHREAD_COND_INITIALIZER };

static void *worker_main(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    lull_tracer *tr = &workers_g.tracers[id];
    lull_timeline_set_worker(id);
    pthread_mutex_lock(&workers_g.lock);
    /* Not job_seq as it is now: a job posted between pthread_create and
     * this line would be missed, and its stopper would wait forever. */
    uint64_t seen = workers_g.start_seq;
    /* 0, not bg_seq as it is now: a background job posted before this
     * line (the child of fork() posts one at once) is still to be run. */
    uint64_t bg_seen = 0;
    for (;;) {
        if (workers_g.quit)
            break;
        if (workers_g.job_seq != seen) {
            seen = workers_g.job_seq;
            if (id >= workers_g.width || workers_g.job_closed)
                continue;          /* a pause job for fewer workers, or one already over */
            if (lull_cfg.join_delay_us) {
                /* LULL_GC_DEBUG=join-delay: a worker that comes late to
                 * the job, as a descheduled one does. */
                pthread_mutex_unlock(&workers_g.lock);
                usleep(lull_cfg.join_delay_us);
                pthread_mutex_lock(&workers_g.lock);
                if (workers_g.job_seq != seen || workers_g.job_closed)
                    continue;
            }
            atomic_fetch_add(&workers_g.running, 1);
            if (workers_g.job_active)
                atomic_fetch_add(workers_g.job_active, 1);
            lull_worker_job job = workers_g.job;
            void *jarg = workers_g.arg;
            pthread_mutex_unlock(&workers_g.lock);
            uint64_t t0 = lull_now_ns();
            job(tr, jarg);
            LULL_TL(LULL_TL_WORKER_JOB, t0, lull_now_ns() - t0, 0, 0, 0, NULL);
            pthread_mutex_lock(&workers_g.lock);
            if (atomic_fetch_sub(&workers_g.running, 1) == 1)
                pthread_cond_signal(&workers_g.done);
            continue;
        }
        if (workers_g.bg_posted && id < workers_g.bg_width && bg_seen != workers_g.bg_seq) {
            bg_seen = workers_g.bg_seq;
            atomic_fetch_add(&workers_g.bg_running, 1);
            workers_g.bg_taken++;
            lull_worker_job job = workers_g.bg_job;
            void *jarg = workers_g.bg_arg;
            pthread_mutex_unlock(&workers_g.lock);
            job(tr, jarg);
            pthread_mutex_lock(&workers_g.lock);
            if (atomic_fetch_sub(&workers_g.bg_running, 1) == 1)
                pthread_cond_broadcast(&workers_g.bg_done);
            continue;
        }
        pthread_cond_wait(&workers_g.wake, &workers_g.lock);
    }
    pthread_mutex_unlock(&workers_g.lock);
    return NULL;
}

static void start_threads(unsigned n)
{
    if (n > LULL_MAX_WORKERS)
        n = LULL_MAX_WORKERS;
    /* Created with every signal blocked, so they inherit that mask: the
     * suspend and restart signals, and the application's, never land on a
     * collector thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    workers_g.quit = false;
    workers_g.nthreads = 0;
    workers_g.start_seq = workers_g.job_seq;
    for (unsigned i = 0; i < n; i++) {
        memset(&workers_g.tracers[i], 0, sizeof workers_g.tracers[i]);
        workers_g.tracers[i].id = i + 1;
        int r = pthread_create(&workers_g.threads[i], NULL, worker_main, (void *)(uintptr_t)i);
        if (r != 0) {
            lull_warn("lull_init", "cannot start mark worker %u of %u (%s): marking with %u thread(s)",
                      i + 1, n, strerror(r), i + 1);
            break;
        }
        char name[16];
        snprintf(name, sizeof name, "lull-mark/%u", i + 1);
        pthread_setname_np(workers_g.threads[i], name);
        workers_g.nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    workers_g.width = workers_g.pause_wanted < workers_g.nthreads ? workers_g.pause_wanted : workers_g.nthreads;
}

/* The CPUs this process may run on. */
static unsigned cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

void lull_workers_start(unsigned n, bool background)
{
    workers_g.spin = cpus_allowed() > 1;
    workers_g.pause_wanted = n;
    workers_g.wanted = n ? n : background ? 1 : 0;
    start_threads(workers_g.wanted);
}

void lull_workers_stop(void)
{
    lull_workers_stop_background();
    pthread_mutex_lock(&workers_g.lock);
    workers_g.quit = true;
    pthread_cond_broadcast(&workers_g.wake);
    pthread_mutex_unlock(&workers_g.lock);
    for (unsigned i = 0; i < workers_g.nthreads; i++)
        pthread_join(workers_g.threads[i], NULL);
    for (unsigned i = 0; i < workers_g.nthreads; i++)
        lull_tracer_release(&workers_g.tracers[i]);
    workers_g.nthreads = workers_g.width = 0;
    workers_g.quit = false;
}

void lull_workers_after_fork_child(void)
{
    /* The parent's workers do not exist here, and one of them may have held
     * the lock at the instant of fork(): fresh synchronisation objects,
     * fresh threads. Their tracers were empty (no job runs across fork). */
    pthread_mutex_init(&workers_g.lock, NULL);
    pthread_cond_init(&workers_g.wake, NULL);
    pthread_cond_init(&workers_g.done, NULL);
    pthread_cond_init(&workers_g.bg_done, NULL);
    pthread_cond_init(&workers_g.bg_kick, NULL);
    atomic_store(&workers_g.running, 0);
    workers_g.bg_posted = workers_g.bg_pending = false;    /* stopped before fork (init.c) */
    atomic_store(&workers_g.bg_running, 0);
#if LULL_ASAN
    /* AddressSanitizer's allocator does not reset its locks at fork(): one
     * a parent thread held stays held here, and a new thread's start-up
     * (which allocates inside the sanitizer runtime) waits on it for ever
     * (seen in stress_fork, about one run in six). A child of an
     * AddressSanitizer build marks with its one thread. */
    workers_g.nthreads = workers_g.width = 0;
    return;
#endif
    if (workers_g.nthreads)
        start_threads(workers_g.wanted);
}

unsigned lull_workers_count(void)
{
    return workers_g.width;
}

bool lull_workers_can_background(void)
{
    return workers_g.nthreads > 0;
}

unsigned lull_workers_background_threads(void)
{
    return workers_g.nthreads;
}

/* At the release of the gc lock the job was started under: posted (a
 * worker still awake from a pause's parallel work would take it at once)
 * and its threads woken, unless it was stopped meanwhile. */
static void post_background(void)
{
    pthread_mutex_lock(&workers_g.lock);
    if (workers_g.bg_pending) {
        workers_g.bg_pending = false;
        workers_g.bg_posted = true;
        pthread_cond_broadcast(&workers_g.wake);
    }
    pthread_mutex_unlock(&workers_g.lock);
}

void lull_workers_start_background(lull_worker_job job, void *arg, unsigned width)
{
    pthread_mutex_lock(&workers_g.lock);
    LULL_ASSERT(!workers_g.bg_posted && !workers_g.bg_pending && !atomic_load(&workers_g.bg_running) && workers_g.nthreads);
    atomic_store_explicit(&lull_bg_stop, false, memory_order_relaxed);
    workers_g.bg_job = job;
    workers_g.bg_arg = arg;
    workers_g.bg_width = width < 1 ? 1 : width > workers_g.nthreads ? workers_g.nthreads : width;
    workers_g.bg_seq++;
    workers_g.bg_pending = true;
    pthread_mutex_unlock(&workers_g.lock);
    lull_gc_defer(LULL_GC_DEFER_WORKERS, post_background);
}

uint64_t lull_workers_background_taken(void)
{
    pthread_mutex_lock(&workers_g.lock);
    uint64_t n = workers_g.bg_taken;
    pthread_mutex_unlock(&workers_g.lock);
    return n;
}

/* Waiting for workers to leave a job (`lock` held, released meanwhile):
 * they leave within about 0.1 ms once asked, and a thread asleep on a
 * condition variable takes longer than that to wake on a virtual
 * machine whose idle CPU halted. So the waiter first polls the count for
 * up to SPIN_NS, on a machine with more than one CPU (on one, the worker
 * needs the CPU the poll would take), and only then sleeps on the
 * condition variable. */
#define SPIN_NS 200000u
static void spin_until_zero(atomic_uint *count)
{
    if (!workers_g.spin || !atomic_load(count))
        return;
    pthread_mutex_unlock(&workers_g.lock);
    uint64_t t0 = lull_now_ns();
    for (unsigned k = 1; atomic_load_explicit(count, memory_order_acquire); k++) {
        lull_cpu_relax();
        if (k % 64 == 0 && lull_now_ns() - t0 >= SPIN_NS)
            break;
    }
    pthread_mutex_lock(&workers_g.lock);
}

/* Wait until *count is 0 (`lock` held): the poll, then `cond`, which the
 * last worker to leave signals; a wait that had to sleep is counted. */
static void wait_until_zero(atomic_uint *count, pthread_cond_t *cond)
{
    spin_until_zero(count);
    if (atomic_load(count))
        workers_g.waits_slept++;
    while (atomic_load(count))
        pthread_cond_wait(cond, &workers_g.lock);
}

/* The CPU clock of background participant i, in ns (0 if unreadable). */
static uint64_t worker_cpu_ns(unsigned i)
{
    clockid_t c;
    struct timespec ts;
    if (pthread_getcpuclockid(workers_g.threads[i], &c) != 0 || clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lull_workers_stop_background(void)
{
    pthread_mutex_lock(&workers_g.lock);
    workers_g.bg_posted = workers_g.bg_pending = false;   /* not taken yet: never runs */
    workers_g.bg_stop_cpu_ns = 0;
    if (atomic_load(&workers_g.bg_running)) {
        unsigned n = workers_g.bg_width < workers_g.nthreads ? workers_g.bg_width : workers_g.nthreads;
        uint64_t cpu0[LULL_MAX_WORKERS];
        for (unsigned i = 0; i < n; i++)
            cpu0[i] = worker_cpu_ns(i);
        lull_background_request_stop();                 /* one waiting for the gc lock returns */
        pthread_cond_broadcast(&workers_g.bg_kick);     /* parked ones return too */
        wait_until_zero(&workers_g.bg_running, &workers_g.bg_done);
        for (unsigned i = 0; i < n; i++) {
            uint64_t c = worker_cpu_ns(i), d = c > cpu0[i] ? c - cpu0[i] : 0;
            if (d > workers_g.bg_stop_cpu_ns)
                workers_g.bg_stop_cpu_ns = d;
        }
    }
    pthread_mutex_unlock(&workers_g.lock);
}

uint64_t lull_workers_waits_slept(void)
{
    pthread_mutex_lock(&workers_g.lock);
    uint64_t n = workers_g.waits_slept;
    pthread_mutex_unlock(&workers_g.lock);
    return n;
}

uint64_t lull_workers_last_stop_cpu_ns(void)
{
    pthread_mutex_lock(&workers_g.lock);
    uint64_t ns = workers_g.bg_stop_cpu_ns;
    pthread_mutex_unlock(&workers_g.lock);
    return ns;
}

bool lull_workers_background_stopping(void)
{
    return atomic_load_explicit(&lull_bg_stop, memory_order_relaxed);
}

uint64_t lull_workers_background_kicks(void)
{
    pthread_mutex_lock(&workers_g.lock);
    uint64_t k = workers_g.bg_kicks;
    pthread_mutex_unlock(&workers_g.lock);
    return k;
}

void lull_workers_background_wait(uint64_t seen)
{
    pthread_mutex_lock(&workers_g.lock);
    while (workers_g.bg_kicks == seen && !atomic_load_explicit(&lull_bg_stop, memory_order_relaxed))
        pthread_cond_wait(&workers_g.bg_kick, &workers_g.lock);
    pthread_mutex_unlock(&workers_g.lock);
}

void lull_workers_background_nap(uint64_t ns)
{
    struct timespec until = lull_deadline_in(CLOCK_REALTIME, ns);   /* the condition variable's clock */
    pthread_mutex_lock(&workers_g.lock);
    if (!atomic_load_explicit(&lull_bg_stop, memory_order_relaxed))
        pthread_cond_timedwait(&workers_g.bg_kick, &workers_g.lock, &until);
    pthread_mutex_unlock(&workers_g.lock);
}

void lull_workers_background_kick(void)
{
    pthread_mutex_lock(&workers_g.lock);
    workers_g.bg_kicks++;
    pthread_cond_broadcast(&workers_g.bg_kick);
    pthread_mutex_unlock(&workers_g.lock);
}

void lull_workers_run(lull_worker_job job, void *arg, lull_tracer *self, atomic_int *active)
{
    if (!workers_g.width) {
        job(self, arg);
        return;
    }
    pthread_mutex_lock(&workers_g.lock);
    LULL_ASSERT(atomic_load(&workers_g.running) == 0 && !atomic_load(&workers_g.bg_running) && !workers_g.bg_posted &&
                !workers_g.bg_pending);
    workers_g.job = job;
    workers_g.arg = arg;
    workers_g.job_active = active;
    workers_g.job_closed = false;
    workers_g.job_seq++;
    pthread_cond_broadcast(&workers_g.wake);
    pthread_mutex_unlock(&workers_g.lock);

    job(self, arg);

    pthread_mutex_lock(&workers_g.lock);
    workers_g.job_closed = true;
    wait_until_zero(&workers_g.running, &workers_g.done);
    pthread_mutex_unlock(&workers_g.lock);
}
