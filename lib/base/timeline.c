/* timeline.c — trace-file=PATH: the rings, their writer thread, and the
 * pause record's listener (timeline.h describes the design).
 *
 * Producers: ring 0 by the thread holding the gc lock (the pause
 * listener, the phases inside a minor, the sweep before a mark), ring
 * 1 + i by worker i only; neither takes a lock nor allocates. The writer thread, never attached, is the only consumer
 * until lull_timeline_stop, which joins it and drains the rest itself.
 * Invariant: a pause's event carries the start and duration of its
 * record, which lull_stats and the pause hook also report. */
#include "base/timeline.h"

#include <ck_ring.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/tsan.h"
#include "base/util.h"
#include "base/config.h"     /* LULL_MAX_WORKERS */

struct tl_event {
    uint64_t ts, dur, a, b, c;
    const char *s;          /* a string literal (a collection's reason) or NULL */
    uint32_t tid;
    uint16_t kind;
};
CK_RING_PROTOTYPE(tl, tl_event)

#define RING0_EVENTS  8192u         /* powers of two; capacity one less */
#define WORKER_EVENTS 2048u
#define NRINGS        (LULL_MAX_WORKERS + 1)
#define WRITE_EVERY_NS 20000000L
#define OUT_BUF       (64u << 10)
#define MAX_NAMED     256

typedef struct tl_ring {
    ck_ring_t ring;
    struct tl_event *buf;
    unsigned events;
    atomic_ulong dropped;
} tl_ring;

atomic_bool lull_timeline_on;

static struct {
    tl_ring rings[NRINGS];
    unsigned nrings;
    int fd;
    pthread_t writer;
    bool writer_started;
    pthread_mutex_t lock;         /* the writer's wake-up and stop flag; never taken by a producer */
    pthread_cond_t wake;
    bool stop;
    bool open;                    /* between start and stop */
    char out[OUT_BUF];            /* the writer's (or the stopping thread's) output buffer */
    size_t out_n;
    bool first_event;
    uint32_t named[MAX_NAMED];    /* threads whose name was written */
    unsigned nnamed;
    uint64_t events_written;
    uint64_t writer_cpu_ns;       /* the writer thread's CPU time, when it ended (the file's otherData) */
    pthread_once_t atexit_once;
} tl_g = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .atexit_once = PTHREAD_ONCE_INIT };

static __thread unsigned tl_ring_index;
static __thread uint32_t tl_tid;

typedef struct kind_info {
    const char *name, *cat;
    char ph;                      /* 'X' complete, 'C' counter */
    const char *a, *b, *c;        /* argument names; NULL: not written */
} kind_info;

static const kind_info kinds[LULL_TL_NKINDS] = {
    [LULL_TL_PAUSE_MINOR]    = { "minor collection", "pause", 'X', "collection", "promoted_bytes", NULL },
    [LULL_TL_PAUSE_MAJOR]    = { "major collection (synchronous)", "pause", 'X', "collection", "promoted_bytes",
                                 "live_bytes" },
    [LULL_TL_PAUSE_INITIAL]  = { "major: initial pause", "pause", 'X', "collection", "promoted_bytes", NULL },
    [LULL_TL_PAUSE_FINAL]    = { "major: final pause", "pause", 'X', "collection", "promoted_bytes", "live_bytes" },
    [LULL_TL_STOP_WORLD]     = { "stop the world", "phase", 'X', "threads", NULL, NULL },
    [LULL_TL_MINOR]          = { "minor", "phase", 'X', "promoted_bytes", NULL, NULL },
    [LULL_TL_MINOR_PIN]      = { "pin", "phase", 'X', "pinned", NULL, NULL },
    [LULL_TL_MINOR_COPY]     = { "copy", "phase", 'X', NULL, NULL, NULL },
    [LULL_TL_MINOR_WEAK]     = { "weak references and finalizers", "phase", 'X', NULL, NULL, NULL },
    [LULL_TL_MINOR_REBUILD]  = { "rebuild free space", "phase", 'X', NULL, NULL, NULL },
    [LULL_TL_MARK]           = { "mark", "phase", 'X', "overflows", NULL, NULL },
    [LULL_TL_SWEEP]          = { "sweep", "phase", 'X', "live_bytes", NULL, NULL },
    [LULL_TL_SWEEP_REST]     = { "finish the last sweep", "phase", 'X', NULL, NULL, NULL },
    [LULL_TL_RESTART]        = { "restart the world", "phase", 'X', NULL, NULL, NULL },
    [LULL_TL_WORKER_JOB]     = { "parallel work", "worker", 'X', NULL, NULL, NULL },
    [LULL_TL_CONCURRENT_MARK] = { "concurrent mark", "background", 'X', "cycle", "objects", NULL },
    [LULL_TL_PRECLEAN]       = { "preclean", "background", 'X', "cards", NULL, NULL },
    [LULL_TL_BG_SWEEP]       = { "background sweep", "background", 'X', "blocks", NULL, NULL },
    [LULL_TL_COUNTERS]       = { "heap", "counter", 'C', "heap_bytes", "nursery_bytes", "live_bytes" },
    [LULL_TL_GOAL]           = { "heap goal", "counter", 'C', "goal_bytes", "limit_bytes", NULL },
};

/* ---- recording (any thread; no lock, no allocation) ---- */

void lull_timeline_set_worker(unsigned index)
{
    tl_ring_index = index + 1 < NRINGS ? index + 1 : 0;
}

void lull_timeline_record(enum lull_tl_kind kind, uint64_t start_ns, uint64_t dur_ns, uint64_t a, uint64_t b,
                          uint64_t c, const char *s)
{
    if (!atomic_load_explicit(&lull_timeline_on, memory_order_acquire))
        return;
    tl_ring *r = &tl_g.rings[tl_ring_index];
    if (!r->buf)
        return;
    if (!tl_tid)
        tl_tid = (uint32_t)syscall(SYS_gettid);
    struct tl_event *e = ck_ring_enqueue_reserve_spsc_tl(&r->ring, r->buf);
    if (!e) {
        atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
        return;
    }
    /* ck_ring's atomics are inline assembly, unseen by ThreadSanitizer: the
     * slot is handed over with explicit annotations (tsan.h). */
    lull_tsan_acquire(e);
    *e = (struct tl_event){ .ts = start_ns, .dur = dur_ns, .a = a, .b = b, .c = c, .s = s, .tid = tl_tid,
                            .kind = (uint16_t)kind };
    lull_tsan_release(e);
    ck_ring_enqueue_commit_spsc(&r->ring);
}

/* The phases in the order the pause ran them, then the pause, then the
 * counters; each with the times the record's steps stamped. */
void lull_timeline_pause_listener(const lull_pause_record *r, void *data)
{
    static const enum lull_tl_kind pause_kind[] = {
        [LULL_PAUSE_MINOR] = LULL_TL_PAUSE_MINOR, [LULL_PAUSE_MAJOR] = LULL_TL_PAUSE_MAJOR,
        [LULL_PAUSE_INITIAL] = LULL_TL_PAUSE_INITIAL, [LULL_PAUSE_FINAL] = LULL_TL_PAUSE_FINAL,
    };
    (void)data;
    if (!atomic_load_explicit(&lull_timeline_on, memory_order_relaxed))
        return;
    const uint64_t *at = r->at;
    bool ends_major = r->kind == LULL_PAUSE_MAJOR || r->kind == LULL_PAUSE_FINAL;
    lull_timeline_record(LULL_TL_STOP_WORLD, at[LULL_STEP_STOP], at[LULL_STEP_STOPPED] - at[LULL_STEP_STOP],
                         r->threads, 0, 0, NULL);
    if (r->minor)
        lull_timeline_record(LULL_TL_MINOR, at[LULL_STEP_STOPPED], at[LULL_STEP_NURSERY] - at[LULL_STEP_STOPPED],
                             r->promoted, 0, 0, NULL);
    if (r->sweep_rest_t)
        lull_timeline_record(LULL_TL_SWEEP_REST, r->sweep_rest_t, r->sweep_rest_ns, 0, 0, 0, NULL);
    if (ends_major) {
        lull_timeline_record(LULL_TL_MARK, at[LULL_STEP_NURSERY], at[LULL_STEP_MARKED] - at[LULL_STEP_NURSERY],
                             r->overflows, 0, 0, NULL);
        lull_timeline_record(LULL_TL_SWEEP, at[LULL_STEP_MARKED], at[LULL_STEP_SWEPT] - at[LULL_STEP_MARKED],
                             r->live, 0, 0, NULL);
    }
    lull_timeline_record(LULL_TL_RESTART, at[LULL_STEP_RESTART], at[LULL_STEP_END] - at[LULL_STEP_RESTART], 0, 0,
                         0, NULL);
    lull_timeline_record(pause_kind[r->kind], r->t0, r->pause_ns, r->collection, r->promoted, r->live, r->reason);
    lull_timeline_record(LULL_TL_COUNTERS, at[LULL_STEP_END], 0, r->heap_at_end, r->nursery_before, r->last_live,
                         NULL);
    lull_timeline_record(LULL_TL_GOAL, at[LULL_STEP_END], 0, r->heap_goal, r->memory_limit, 0, NULL);
}

/* ---- writing (the writer thread; at the end, the stopping thread) ---- */

static void out_flush(void)
{
    size_t done = 0;
    while (done < tl_g.out_n) {
        ssize_t w = write(tl_g.fd, tl_g.out + done, tl_g.out_n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;                /* disk full or closed: what cannot be written is lost */
        done += (size_t)w;
    }
    tl_g.out_n = 0;
}

static void out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_printf(const char *fmt, ...)
{
    if (OUT_BUF - tl_g.out_n < 1024)
        out_flush();
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tl_g.out + tl_g.out_n, OUT_BUF - tl_g.out_n, fmt, ap);
    va_end(ap);
    if (n > 0)
        tl_g.out_n += (size_t)n < OUT_BUF - tl_g.out_n ? (size_t)n : OUT_BUF - tl_g.out_n - 1;
}

/* ns as microseconds with three decimals: exact. */
#define US_FMT "%llu.%03llu"
#define US(ns) (unsigned long long)((ns) / 1000), (unsigned long long)((ns) % 1000)

static const char *sep(void)
{
    if (tl_g.first_event) {
        tl_g.first_event = false;
        return "";
    }
    return ",\n";
}

/* A thread's name, once, from /proc (it may have exited: then a number). */
static void name_thread(uint32_t tid)
{
    for (unsigned i = 0; i < tl_g.nnamed; i++)
        if (tl_g.named[i] == tid)
            return;
    if (tl_g.nnamed == MAX_NAMED)
        return;
    tl_g.named[tl_g.nnamed++] = tid;
    char path[64], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof name - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        name[strcspn(name, "\n\"\\")] = 0;
    }
    if (!name[0])
        snprintf(name, sizeof name, "thread %u", tid);
    out_printf("%s{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"%s\"}}", sep(),
               tid, name);
}

/* A reason is a string literal of lull's own (collect.c): no escaping
 * needed, but quotes and backslashes are dropped to be sure. */
static void write_event(const struct tl_event *e)
{
    if (e->kind >= LULL_TL_NKINDS)
        return;
    name_thread(e->tid);
    const kind_info *k = &kinds[e->kind];
    if (k->ph == 'C') {
        out_printf("%s{\"ph\":\"C\",\"pid\":1,\"tid\":%u,\"ts\":" US_FMT ",\"name\":\"%s\",\"args\":{\"%s\":%llu,"
                   "\"%s\":%llu,\"%s\":%llu}}", sep(), e->tid, US(e->ts), k->name, k->a,
                   (unsigned long long)e->a, k->b, (unsigned long long)e->b, k->c, (unsigned long long)e->c);
    } else {
        out_printf("%s{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":" US_FMT ",\"dur\":" US_FMT ",\"name\":\"%s\","
                   "\"cat\":\"%s\",\"args\":{", sep(), e->tid, US(e->ts), US(e->dur), k->name, k->cat);
        const char *comma = "";
        if (k->a)
            out_printf("\"%s\":%llu", k->a, (unsigned long long)e->a), comma = ",";
        if (k->b)
            out_printf("%s\"%s\":%llu", comma, k->b, (unsigned long long)e->b), comma = ",";
        if (k->c)
            out_printf("%s\"%s\":%llu", comma, k->c, (unsigned long long)e->c), comma = ",";
        if (e->s) {
            char reason[96];
            size_t n = 0;
            for (const char *p = e->s; *p && n < sizeof reason - 1; p++)
                if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                    reason[n++] = *p;
            reason[n] = 0;
            out_printf("%s\"reason\":\"%s\"", comma, reason);
        }
        out_printf("}}");
    }
    tl_g.events_written++;
}

static void drain(void)
{
    for (unsigned i = 0; i < tl_g.nrings; i++) {
        tl_ring *r = &tl_g.rings[i];
        if (!r->buf)
            continue;
        for (;;) {
            unsigned head = ck_pr_load_uint(&r->ring.c_head);
            if (head == ck_pr_load_uint(&r->ring.p_tail))
                break;
            struct tl_event *slot = &r->buf[head & r->ring.mask], e;
            lull_tsan_acquire(slot);
            if (!ck_ring_dequeue_spsc_tl(&r->ring, r->buf, &e))
                break;
            lull_tsan_release(slot);
            write_event(&e);
        }
    }
    out_flush();
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tl_g.lock);
    while (!tl_g.stop) {
        struct timespec until = lull_deadline_in(CLOCK_MONOTONIC, WRITE_EVERY_NS);
        pthread_cond_timedwait(&tl_g.wake, &tl_g.lock, &until);
        if (tl_g.stop)
            break;
        pthread_mutex_unlock(&tl_g.lock);
        drain();
        pthread_mutex_lock(&tl_g.lock);
    }
    pthread_mutex_unlock(&tl_g.lock);
    /* What writing the file cost (the recording's share is in the threads
     * that record, a few stores per event): read before the join. */
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        tl_g.writer_cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    return NULL;
}

static void stop_at_exit(void)
{
    lull_timeline_stop();
}

static void free_rings(void)
{
    for (unsigned i = 0; i < NRINGS; i++) {
        tl_ring *r = &tl_g.rings[i];
        if (r->buf)
            free(r->buf);
        r->buf = NULL;
    }
}

static void install_atexit(void)
{
    if (atexit(stop_at_exit) != 0)
        lull_warn("lull_init", "trace-file: atexit failed: the file is finished only by lull_shutdown");
}

int lull_timeline_start(const char *path, unsigned workers)
{
    LULL_ASSERT(!tl_g.open);
    tl_g.nrings = 1 + (workers < LULL_MAX_WORKERS ? workers : LULL_MAX_WORKERS);
    for (unsigned i = 0; i < tl_g.nrings; i++) {
        tl_ring *r = &tl_g.rings[i];
        unsigned want = i ? WORKER_EVENTS : RING0_EVENTS;
        if (r->buf && r->events != want) {
            free(r->buf);
            r->buf = NULL;
        }
        r->events = want;
        if (!r->buf)
            r->buf = calloc(r->events, sizeof *r->buf);   /* kept by stop, reused here */
        if (!r->buf) {
            free_rings();
            lull_warn("lull_init", "trace-file: no memory for the event buffers");
            return -ENOMEM;
        }
        ck_ring_init(&r->ring, r->events);
        atomic_store_explicit(&r->dropped, 0, memory_order_relaxed);
    }
    tl_g.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tl_g.fd < 0) {
        int e = errno;
        free_rings();
        lull_warn("lull_init", "trace-file: cannot open '%s' for writing: %s", path, strerror(e));
        return -e;
    }
    tl_g.out_n = 0;
    tl_g.first_event = true;
    tl_g.nnamed = 0;
    tl_g.events_written = 0;
    tl_g.writer_cpu_ns = 0;
    tl_g.stop = false;
    out_printf("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    out_printf("%s{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"lull\"}}", sep());
    out_flush();
    pthread_condattr_t ca;              /* the writer's timed wait is on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tl_g.wake, &ca);  /* destroyed by stop, after the join */
    pthread_condattr_destroy(&ca);
    /* Never a pause's target: every signal blocked, never attached. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&tl_g.writer, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        pthread_cond_destroy(&tl_g.wake);
        close(tl_g.fd);
        tl_g.fd = -1;
        free_rings();
        lull_warn("lull_init", "trace-file: cannot start the writer thread: %s", strerror(r));
        return -r;
    }
    pthread_setname_np(tl_g.writer, "lull-trace");
    tl_g.writer_started = true;
    tl_g.open = true;
    pthread_once(&tl_g.atexit_once, install_atexit);
    atomic_store_explicit(&lull_timeline_on, true, memory_order_release);
    return 0;
}

void lull_timeline_stop(void)
{
    if (!tl_g.open)
        return;
    atomic_store_explicit(&lull_timeline_on, false, memory_order_release);
    pthread_mutex_lock(&tl_g.lock);
    tl_g.stop = true;
    pthread_cond_signal(&tl_g.wake);
    pthread_mutex_unlock(&tl_g.lock);
    if (tl_g.writer_started)
        pthread_join(tl_g.writer, NULL);
    tl_g.writer_started = false;
    pthread_cond_destroy(&tl_g.wake);
    /* The writer is gone: this thread is the rings' only consumer now. An
     * event a producer was putting in just as tracing stopped may be lost. */
    drain();
    unsigned long dropped = 0;
    for (unsigned i = 0; i < tl_g.nrings; i++)
        dropped += atomic_load_explicit(&tl_g.rings[i].dropped, memory_order_relaxed);
    out_printf("\n],\"otherData\":{\"producer\":\"lull\",\"events\":\"%llu\",\"dropped_events\":\"%lu\","
               "\"writer_cpu_ms\":\"%.3f\"}}\n",
               (unsigned long long)tl_g.events_written, dropped, (double)tl_g.writer_cpu_ns / 1e6);
    out_flush();
    close(tl_g.fd);
    tl_g.fd = -1;
    tl_g.open = false;
    if (dropped)
        lull_warn("lull_shutdown", "trace-file: %lu events were dropped (the writer fell behind)", dropped);
    /* The rings stay allocated: a producer may still be inside record()
     * after seeing tracing on. They are reused by the next start. */
}

void lull_timeline_after_fork_child(void)
{
    if (!tl_g.open)
        return;
    atomic_store_explicit(&lull_timeline_on, false, memory_order_relaxed);
    /* The writer thread does not exist here; the descriptor is the
     * parent's file: close the child's copy, write nothing. */
    close(tl_g.fd);
    tl_g.fd = -1;
    tl_g.writer_started = false;
    tl_g.open = false;
    pthread_mutex_init(&tl_g.lock, NULL);
}
