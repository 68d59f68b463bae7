/*
 * jitter.c — the machine's own pause floor: how long the same fixed piece
 * of work takes, again and again, with no collector at all.
 *
 *   jitter [--threads N] [--seconds S] [--unit-us U]
 *
 * Each of N threads (default: the online CPUs) repeats one unit of work for
 * S seconds (default 10) and times every unit with CLOCK_MONOTONIC. A unit
 * is shaped like a minor collection's work: it copies 800 KiB from one
 * buffer to another and makes read-modify-writes at pseudo-random places of
 * a 256 MiB array shared by the threads (cards of an old heap), repeated so
 * that one unit takes about U microseconds (default 2000, a 2 ms pause
 * target). A single-thread calibration before the timed part picks the
 * repeat count. No locks, no system calls and no allocation in the timed
 * part: every unit does exactly the same work, so the spread of the unit
 * times is the machine's (other tenants of the host, the hypervisor, the
 * kernel), not the program's.
 *
 * A collector's pause percentiles on the same machine read against these:
 * a pause of fixed work cannot have a p99 or a maximum below the machine's.
 *
 * Prints a human summary on stderr and one line on stdout:
 *   RESULT gc=none bench=jitter threads=N seconds=S unit_target_us=U units=...
 *          unit_p50_us=... unit_p99_us=... unit_p999_us=... unit_max_us=...
 *          over_3x_median_pct=... over_16ms=... slow_oncpu_pct=...
 * slow_oncpu_pct: of the wall time of units over 3x the median, the share
 * the threads' CPU clocks (CLOCK_THREAD_CPUTIME_ID) counted as running. On
 * a guest with steal-time accounting, near 100% means the thread was on
 * its virtual CPU and simply ran slower (a noisy host); low means it was
 * descheduled.
 * Percentiles are nearest-rank over all threads' units (as in gcshim.h).
 * Exit status 2 on a bad argument, 1 if the machine cannot run it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COPY_BYTES (800u << 10)
#define TOUCHES 5000u
#define SHARED_BYTES ((size_t)256 << 20)
#define MAX_THREADS 64

static unsigned char *shared;

typedef struct {
    pthread_t tid;
    unsigned id;
    unsigned reps;
    uint64_t deadline;
    uint64_t *wall;        /* ns per unit */
    size_t n, cap;
    uint64_t *cpu;         /* thread CPU ns per unit */
    uint64_t sink;
    int err;
} worker;

/* A clock reading the compiler cannot move work across: the buffers are
 * made visible to it (escape), and each reading clobbers memory. */
static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    __asm__ volatile("" ::: "memory");
    clock_gettime(c, &ts);
    __asm__ volatile("" ::: "memory");
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void escape(void *p)
{
    __asm__ volatile("" : : "g"(p) : "memory");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: jitter [--threads N] [--seconds S] [--unit-us U]\n"
               "  N: 1..%d threads (default: online CPUs); S: 0.1..3600 seconds (default 10);\n"
               "  U: 100..1000000 microseconds of work per unit (default 2000)\n", MAX_THREADS);
}

/* One unit: reps times (copy 800 KiB, TOUCHES scattered read-modify-writes). */
static uint64_t unit(unsigned char *src, unsigned char *dst, unsigned reps, uint64_t x)
{
    for (unsigned r = 0; r < reps; r++) {
        memcpy(dst, src, COPY_BYTES);
        for (unsigned i = 0; i < TOUCHES; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            shared[(x >> 17) % SHARED_BYTES] += 1;
        }
        src[x % COPY_BYTES] = dst[(x >> 7) % COPY_BYTES];   /* keep the copy observable */
    }
    return x;
}

static void *run(void *arg)
{
    worker *w = arg;
    unsigned char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
    if (!src || !dst) {
        w->err = ENOMEM;
        free(src);
        free(dst);
        return NULL;
    }
    escape(src);
    escape(dst);
    memset(src, (int)w->id + 1, COPY_BYTES);
    memset(dst, 0, COPY_BYTES);
    uint64_t x = 0x9e3779b97f4a7c15u * (w->id + 1);
    x = unit(src, dst, 1, x);                /* warm the buffers up */
    while (clock_ns(CLOCK_MONOTONIC) < w->deadline) {
        if (w->n == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 4096;
            uint64_t *a = realloc(w->wall, cap * sizeof *a), *b = a ? realloc(w->cpu, cap * sizeof *b) : NULL;
            if (!a || !b) {
                if (a)
                    w->wall = a;
                w->err = ENOMEM;
                break;
            }
            w->wall = a;
            w->cpu = b;
            w->cap = cap;
        }
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        x = unit(src, dst, w->reps, x);
        uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t1 = clock_ns(CLOCK_MONOTONIC);
        w->wall[w->n] = t1 - t0;
        w->cpu[w->n] = c1 - c0;
        w->n++;
    }
    w->sink = x ^ dst[x % COPY_BYTES];
    free(src);
    free(dst);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank, gcshim_rank_index's rule in tenths of a percent: the value
 * of rank ceil(permille * n / 1000), at least 1. */
static uint64_t rank(const uint64_t *sorted, size_t n, unsigned permille)
{
    size_t r = (size_t)(((uint64_t)n * permille + 999) / 1000);
    return sorted[r ? r - 1 : 0];
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double threads = ncpu > 0 && ncpu <= MAX_THREADS ? (double)ncpu : 2, seconds = 10, unit_us = 2000;
    for (int i = 1; i < argc; i += 2) {     /* each option takes a value */
        double *into = !strcmp(argv[i], "--threads") ? &threads : !strcmp(argv[i], "--seconds") ? &seconds
                     : !strcmp(argv[i], "--unit-us") ? &unit_us : NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        double lo = into == &threads ? 1 : into == &seconds ? 0.1 : 100;
        double hi = into == &threads ? MAX_THREADS : into == &seconds ? 3600 : 1000000;
        if (!into || i + 1 >= argc || parse_num(argv[i + 1], lo, hi, into) ||
            (into == &threads && threads != (unsigned)threads)) {
            fprintf(stderr, "jitter: bad argument '%s'%s%s\n", argv[i], i + 1 < argc ? " " : "",
                    i + 1 < argc ? argv[i + 1] : "");
            usage(stderr);
            return 2;
        }
    }
    unsigned nt = (unsigned)threads;

    shared = malloc(SHARED_BYTES);
    if (!shared) {
        fprintf(stderr, "jitter: cannot allocate the %zu MiB shared array\n", SHARED_BYTES >> 20);
        return 1;
    }
    /* Not 0: malloc and memset(0) may become a calloc that leaves the pages
     * untouched, and the timed units would take the page faults. */
    memset(shared, 1, SHARED_BYTES);
    escape(shared);

    /* Calibrate: the fastest of a few single-rep units on this thread. */
    unsigned char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
    if (!src || !dst) {
        fprintf(stderr, "jitter: out of memory\n");
        return 1;
    }
    escape(src);
    escape(dst);
    memset(src, 1, COPY_BYTES);
    uint64_t x = 1, best = UINT64_MAX;
    for (int k = 0; k < 20; k++) {
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
        x = unit(src, dst, 1, x);
        uint64_t d = clock_ns(CLOCK_MONOTONIC) - t0;
        if (d < best)
            best = d;
    }
    free(src);
    free(dst);
    unsigned reps = (unsigned)(unit_us * 1000.0 / (double)(best ? best : 1) + 0.5);
    if (reps < 1)
        reps = 1;

    worker *ws = calloc(nt, sizeof *ws);
    if (!ws) {
        fprintf(stderr, "jitter: out of memory\n");
        return 1;
    }
    uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
    for (unsigned i = 0; i < nt; i++) {
        ws[i] = (worker){ .id = i, .reps = reps, .deadline = deadline };
        int e = pthread_create(&ws[i].tid, NULL, run, &ws[i]);
        if (e) {
            fprintf(stderr, "jitter: pthread_create: %s\n", strerror(e));
            return 1;
        }
    }
    size_t total = 0;
    for (unsigned i = 0; i < nt; i++) {
        pthread_join(ws[i].tid, NULL);
        if (ws[i].err) {
            fprintf(stderr, "jitter: thread %u: %s\n", i, strerror(ws[i].err));
            return 1;
        }
        total += ws[i].n;
        x ^= ws[i].sink;
    }
    if (!total) {
        fprintf(stderr, "jitter: no unit finished in %.1f s (a unit takes longer: lower --unit-us)\n", seconds);
        return 1;
    }
    uint64_t *all = malloc(total * sizeof *all);
    if (!all) {
        fprintf(stderr, "jitter: out of memory\n");
        return 1;
    }
    size_t k = 0;
    for (unsigned i = 0; i < nt; i++) {
        memcpy(all + k, ws[i].wall, ws[i].n * sizeof *all);
        k += ws[i].n;
    }
    qsort(all, total, sizeof *all, cmp_u64);
    uint64_t p50 = rank(all, total, 500), p99 = rank(all, total, 990), p999 = rank(all, total, 999);
    uint64_t max = all[total - 1];
    size_t over3 = 0, over16 = 0;
    uint64_t slow_wall = 0, slow_cpu = 0;
    for (unsigned i = 0; i < nt; i++)
        for (size_t j = 0; j < ws[i].n; j++) {
            if (ws[i].wall[j] > 16600000u)
                over16++;
            if (ws[i].wall[j] > 3 * p50) {
                over3++;
                slow_wall += ws[i].wall[j];
                slow_cpu += ws[i].cpu[j] < ws[i].wall[j] ? ws[i].cpu[j] : ws[i].wall[j];
            }
        }
    double over3_pct = 100.0 * (double)over3 / (double)total;
    double oncpu = slow_wall ? 100.0 * (double)slow_cpu / (double)slow_wall : 100.0;
    fprintf(stderr, "jitter: %u threads, %.1f s, %zu units of %u reps (target %.0f us): p50 %.3f p99 %.3f p99.9 %.3f "
            "max %.3f ms; %.2f%% over 3x the median (on CPU %.0f%% of their time), %zu over 16.6 ms\n",
            nt, seconds, total, reps, unit_us, p50 / 1e6, p99 / 1e6, p999 / 1e6, max / 1e6, over3_pct, oncpu, over16);
    printf("RESULT gc=none bench=jitter threads=%u seconds=%.1f unit_target_us=%.0f reps=%u units=%zu "
           "unit_p50_us=%.1f unit_p99_us=%.1f unit_p999_us=%.1f unit_max_us=%.1f over_3x_median_pct=%.3f "
           "over_16ms=%zu slow_oncpu_pct=%.1f sink=%llx\n",
           nt, seconds, unit_us, reps, total, p50 / 1e3, p99 / 1e3, p999 / 1e3, max / 1e3, over3_pct, over16, oncpu,
           (unsigned long long)(x & 0xff));
    for (unsigned i = 0; i < nt; i++) {
        free(ws[i].wall);
        free(ws[i].cpu);
    }
    free(ws);
    free(all);
    free(shared);
    return 0;
}
