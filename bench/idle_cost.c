/*
 * idle_cost.c — what a call of lull_idle costs when it has nothing to do
 * (lull only: Boehm GC has no such call).
 *
 *   idle_cost [--threads N] [--calls C]
 *
 * N attached threads (1..16, default 1) each call lull_idle(1 ms) C times
 * (default 1,000,000) back to back, allocating nothing, so that no call
 * runs a minor. Prints
 *   RESULT bench=idle_cost threads=N calls=C ns_per_call=... minors_idle=0
 * where ns_per_call is the wall time over the calls of one thread (each
 * call takes the gc lock: this is its cost alone and under contention).
 * Exits 1 if a call failed or ran a minor.
 */
#include <lull.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long calls = 1000000;
static int failed;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *caller(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0) {
        __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (long i = 0; i < calls; i++)
        if (lull_idle(1000000) != 0)
            __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
    lull_thread_detach();
    return NULL;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--threads N (1..16)] [--calls C (1..1e9)]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = (int)strtol(argv[++i], &end, 10);
            if (*end || threads < 1 || threads > 16)
                usage(argv[0]);
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            calls = strtol(argv[++i], &end, 10);
            if (*end || calls < 1 || calls > 1000000000)
                usage(argv[0]);
        } else {
            usage(argv[0]);
        }
    }
    if (lull_init(NULL) != 0) {
        fprintf(stderr, "idle_cost: lull_init failed\n");
        return 1;
    }
    pthread_t t[16];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, caller, NULL) != 0) {
            fprintf(stderr, "idle_cost: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double wall = now_s() - t0;
    lull_stats s;
    lull_get_stats(&s);
    lull_shutdown();
    if (failed || s.minors_idle) {
        fprintf(stderr, "idle_cost: a call failed or ran a minor (%llu minors in idle time)\n",
                (unsigned long long)s.minors_idle);
        return 1;
    }
    printf("RESULT bench=idle_cost threads=%d calls=%ld ns_per_call=%.1f minors_idle=%llu\n", threads, calls,
           wall / (double)calls * 1e9, (unsigned long long)s.minors_idle);
    return 0;
}
