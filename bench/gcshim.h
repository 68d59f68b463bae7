/*
 * gcshim.h — the few operations a benchmark needs, mapped to lull (default)
 * or to the Boehm-Demers-Weiser collector (-DUSE_BOEHM), so that each
 * benchmark is written once and both binaries run the same code on objects
 * of the same sizes.
 *
 *   GCSHIM_TYPE(ident, T, refs)              a fixed-size type; refs: GCSHIM_REF bits, 0 = pointer-free
 *   GCSHIM_ARRAY_TYPE(ident, T, esize, erefs)  an array type; elements of esize bytes
 *   gcshim_alloc(&ident), gcshim_alloc_array(&ident, n)   zeroed; abort on failure
 *   GCSHIM_SET(obj, field, value)            store a reference into a heap object
 *   gcshim_init(), gcshim_shutdown(), gcshim_thread_attach(), gcshim_thread_detach()
 *   gcshim_report(bench, time_ns, checksum, extra)
 *                                            print the RESULT line (pause figures from the
 *                                            pause log, a checksum of the final live data,
 *                                            extra "k=v ..."), then a PAUSES line with every
 *                                            pause (us)
 *   gcshim_fold(h, w)                        fold a word into a checksum
 *   gcshim_rank_index(n, pct)                nearest-rank percentile index into n sorted values
 *   gcshim_series(bench, name, v, n)         print a SERIES line (e.g. frame times, ms)
 *   gcshim_name()                            "lull", "boehm" or "boehm-incr"
 *   GCSHIM_STORE(obj, slot_ptr, value)       store a reference through a pointer to a slot
 *                                            inside obj (array elements): lull_store / plain store
 *
 * Boehm's incremental mode: gcshim_init() enables it (GC_enable_incremental,
 * GC_set_time_limit) when the environment has GCSHIM_BOEHM_INCREMENTAL=<ms>;
 * results then say gc=boehm-incr.
 *
 * Every object starts with a header word (lull's lull_header; an unused word
 * under Boehm), arrays with a header word and a length, so sizes match.
 * Boehm gets pointer-free objects from GC_MALLOC_ATOMIC, the rest from
 * GC_MALLOC; its pauses are timed from GC_EVENT_PRE_STOP_WORLD to
 * GC_EVENT_POST_START_WORLD, lull's come from its pause hook, and both go
 * into one log of the same records, summarised by one routine.
 * Boehm's parallel marking follows GC_MARKERS (bench/run's boehm-m1 sets
 * it to 1); the RESULT line says how many threads marked (markers=).
 */
#ifndef GCSHIM_H
#define GCSHIM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t gcshim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void *gcshim_check(void *p, const char *what)
{
    if (!p) {
        fprintf(stderr, "gcshim: %s: out of memory\n", what);
        abort();
    }
    return p;
}

/* Nearest-rank percentile: the index into n sorted values (n >= 1) of the
 * smallest value that at least pct percent of the values do not exceed,
 * i.e. rank ceil(pct * n / 100), at least 1. Every percentile a benchmark
 * prints (pauses of either collector, frame times, request latencies)
 * comes from this one rule. */
static inline size_t gcshim_rank_index(size_t n, unsigned pct)
{
    size_t rank = (size_t)(((uint64_t)n * pct + 99) / 100);
    return rank ? rank - 1 : 0;
}

static int gcshim_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every pause, in order, as the same kind of record for both collectors:
 * its duration in ns and whether it belonged to a major (full) collection.
 * Filled by lull's pause hook or Boehm's collection-event callback (neither
 * may allocate); each runs under its collector's lock, so there is one
 * writer at a time, and the count is published after the entry. A run
 * with more pauses than the log holds fails in gcshim_report rather than
 * report figures over a part of them. */
#define GCSHIM_PAUSE_LOG_CAP (1u << 20)
static uint64_t gcshim_pause_log[GCSHIM_PAUSE_LOG_CAP];
static unsigned char gcshim_pause_major[GCSHIM_PAUSE_LOG_CAP];
static uint64_t gcshim_pause_log_n;

static inline void gcshim_log_pause(uint64_t ns, int major)
{
    uint64_t n = __atomic_load_n(&gcshim_pause_log_n, __ATOMIC_RELAXED);
    if (n < GCSHIM_PAUSE_LOG_CAP) {
        gcshim_pause_log[n] = ns;
        gcshim_pause_major[n] = (unsigned char)(major != 0);
    }
    __atomic_store_n(&gcshim_pause_log_n, n + 1, __ATOMIC_RELEASE);
}

/* Summary of the logged pauses of one kind (which: 0 minor, 1 major, -1
 * all), computed the same way whichever collector logged them. */
typedef struct gcshim_pause_summary {
    uint64_t n, total_ns, p50_ns, p99_ns, max_ns;
} gcshim_pause_summary;

static inline gcshim_pause_summary gcshim_summarise_pauses(uint64_t logged, int which)
{
    gcshim_pause_summary s = { 0, 0, 0, 0, 0 };
    uint64_t *v = gcshim_check(malloc((logged ? logged : 1) * sizeof *v), "pause summary");
    for (uint64_t i = 0; i < logged; i++)
        if (which < 0 || gcshim_pause_major[i] == which) {
            v[s.n++] = gcshim_pause_log[i];
            s.total_ns += gcshim_pause_log[i];
        }
    if (s.n) {
        qsort(v, s.n, sizeof *v, gcshim_cmp_u64);
        s.p50_ns = v[gcshim_rank_index(s.n, 50)];
        s.p99_ns = v[gcshim_rank_index(s.n, 99)];
        s.max_ns = v[s.n - 1];
    }
    free(v);
    return s;
}

#ifndef USE_BOEHM
/* ------------------------------------------------------------------------ */
/* lull                                                                     */
/* ------------------------------------------------------------------------ */
#include <lull.h>

typedef lull_header gcshim_header;
typedef lull_array_header gcshim_array_header;
typedef lull_type gcshim_type;

#define GCSHIM_REF(T, field) LULL_REF(T, field)
#define GCSHIM_TYPE(ident, T, refbits) \
    static const gcshim_type ident = { .name = #T, .size = sizeof(T), .refs = (refbits) }
#define GCSHIM_ARRAY_TYPE(ident, T, esize, erefs) \
    static const gcshim_type ident = { .name = #T, .size = sizeof(T), .elem_size = (esize), .elem_refs = (erefs) }
#define GCSHIM_SET(obj, field, value) LULL_SET(obj, field, value)
#define GCSHIM_STORE(obj, slot, value) lull_store((obj), (void *)(slot), (value))

static inline void *gcshim_alloc(const gcshim_type *t) { return gcshim_check(lull_alloc(t), t->name); }
static inline void *gcshim_alloc_array(const gcshim_type *t, size_t n)
{
    return gcshim_check(lull_alloc_array(t, n), t->name);
}

static void gcshim_on_pause(const lull_pause_event *e, void *data)
{
    (void)data;
    gcshim_log_pause(e->duration_ns, e->generation == LULL_GEN_MAJOR);
}

static inline const char *gcshim_name(void) { return "lull"; }

static inline void gcshim_init(void)
{
    if (lull_init(NULL) != 0) {
        fprintf(stderr, "gcshim: lull_init failed\n");
        exit(1);
    }
    lull_set_pause_hook(gcshim_on_pause, NULL);
}
static inline void gcshim_shutdown(void) { lull_shutdown(); }
/* Idle time: lull_idle (1: it ran a minor or a major's pause), and what
 * the calls ran so far (lull_stats.minors_idle, majors_idle). */
static inline int gcshim_idle(uint64_t ns) { return lull_idle(ns); }
static inline void gcshim_idle_counts(uint64_t *minors, uint64_t *majors)
{
    lull_stats s;
    lull_get_stats(&s);
    *minors = s.minors_idle;
    *majors = s.majors_idle;
}
static inline void gcshim_thread_attach(void) { lull_thread_attach(); }
static inline void gcshim_thread_detach(void) { lull_thread_detach(); }

/* The pauses logged so far, once the log agrees with lull's own count (a
 * background collection may be between counting a pause and calling the
 * hook: retry a while). A disagreement that persists means the hook missed
 * pauses, and the figures would not cover them: fail. *collections gets
 * the collections (minor + major) so far. */
static inline uint64_t gcshim_logged_pauses(uint64_t *collections)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        lull_stats a, b;
        lull_get_stats(&a);
        uint64_t n = __atomic_load_n(&gcshim_pause_log_n, __ATOMIC_ACQUIRE);
        lull_get_stats(&b);
        if (a.pauses == n && b.pauses == n) {
            *collections = b.collections_minor + b.collections_major;
            return n;
        }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    lull_stats st;
    lull_get_stats(&st);
    fprintf(stderr, "gcshim: FAILED: the pause hook logged %llu pauses, lull_get_stats counts %llu\n",
            (unsigned long long)gcshim_pause_log_n, (unsigned long long)st.pauses);
    exit(1);
}

/* Threads that mark: the stopping thread and lull's mark workers, counted
 * by their names (lull-mark/N) in /proc/self/task. */
#include <dirent.h>
static inline int gcshim_markers(void)
{
    int n = 1;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && !strncmp(comm, "lull-mark/", 10))
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}
#else
/* ------------------------------------------------------------------------ */
/* Boehm GC                                                                 */
/* ------------------------------------------------------------------------ */
#define GC_THREADS
#define GC_NO_THREAD_REDIRECTS   /* threads register through gcshim_thread_attach */
#include <gc.h>

typedef struct gcshim_header { uintptr_t word_; } gcshim_header;
typedef struct gcshim_array_header { gcshim_header header; size_t length; } gcshim_array_header;
typedef struct gcshim_type {
    const char *name;
    size_t size, elem_size;
    int pointer_free;
} gcshim_type;

#define GCSHIM_REF(T, field) ((uint64_t)1 << (offsetof(T, field) / sizeof(void *)))
#define GCSHIM_TYPE(ident, T, refbits) \
    static const gcshim_type ident = { #T, sizeof(T), 0, (refbits) == 0 }
#define GCSHIM_ARRAY_TYPE(ident, T, esize, erefs) \
    static const gcshim_type ident = { #T, sizeof(T), (esize), (erefs) == 0 }
#define GCSHIM_SET(obj, field, value) ((obj)->field = (value))
#define GCSHIM_STORE(obj, slot, value) ((void)(obj), *(void **)(slot) = (value))

static inline void *gcshim_alloc_bytes(const gcshim_type *t, size_t bytes)
{
    void *p;
    if (t->pointer_free) {
        p = gcshim_check(GC_MALLOC_ATOMIC(bytes), t->name);
        memset(p, 0, bytes);          /* lull zeroes every object; so do we */
    } else {
        p = gcshim_check(GC_MALLOC(bytes), t->name);
    }
    return p;
}
static inline void *gcshim_alloc(const gcshim_type *t) { return gcshim_alloc_bytes(t, t->size); }
static inline void *gcshim_alloc_array(const gcshim_type *t, size_t n)
{
    gcshim_array_header *a = gcshim_alloc_bytes(t, t->size + n * t->elem_size);
    a->length = n;
    return a;
}

/* A pause runs from GC_EVENT_PRE_STOP_WORLD to GC_EVENT_POST_START_WORLD;
 * the callback runs with the allocation lock held and must not allocate.
 * Boehm's collections are all full ones: its pauses are logged as majors. */
static uint64_t gcshim_stop_start;

static void gcshim_on_event(GC_EventType e)
{
    if (e == GC_EVENT_PRE_STOP_WORLD) {
        gcshim_stop_start = gcshim_now_ns();
    } else if (e == GC_EVENT_POST_START_WORLD && gcshim_stop_start) {
        gcshim_log_pause(gcshim_now_ns() - gcshim_stop_start, 1);
        gcshim_stop_start = 0;
    }
}

static int gcshim_incremental;

static inline const char *gcshim_name(void) { return gcshim_incremental ? "boehm-incr" : "boehm"; }

static inline void gcshim_init(void)
{
    /* Before GC_INIT: it runs a first collection (unless
     * GC_dont_precollect), whose pause counts like any other. */
    GC_set_on_collection_event(gcshim_on_event);
    GC_INIT();
    GC_allow_register_threads();
    const char *inc = getenv("GCSHIM_BOEHM_INCREMENTAL");
    if (inc && *inc) {
        gcshim_incremental = 1;
        GC_enable_incremental();
        GC_set_time_limit(atoi(inc));
    }
}
static inline void gcshim_shutdown(void) {}
static inline void gcshim_thread_attach(void)
{
    struct GC_stack_base sb;
    if (GC_get_stack_base(&sb) != GC_SUCCESS || GC_register_my_thread(&sb) != GC_SUCCESS) {
        fprintf(stderr, "gcshim: GC_register_my_thread failed\n");
        abort();
    }
}
static inline void gcshim_thread_detach(void) { GC_unregister_my_thread(); }

/* The pauses logged so far (under the allocation lock, which the callback
 * holds); *collections gets GC_get_gc_no(). */
static inline uint64_t gcshim_logged_pauses(uint64_t *collections)
{
    GC_alloc_lock();
    uint64_t n = gcshim_pause_log_n;
    *collections = (uint64_t)GC_get_gc_no();
    GC_alloc_unlock();
    return n;
}

/* Threads that mark: the initiating one and GC_get_parallel() helpers
 * (GC_MARKERS, default: one per processor, started with the first thread
 * or collection that needs them). */
static inline int gcshim_markers(void) { return GC_get_parallel() + 1; }
/* Idle time: Boehm GC has no call that collects where the program says its
 * temporaries are dead without a whole collection (GC_collect_a_little
 * does a step of incremental work, and nothing in the default mode). */
static inline int gcshim_idle(uint64_t ns)
{
    (void)ns;
    return 0;
}
static inline void gcshim_idle_counts(uint64_t *minors, uint64_t *majors)
{
    *minors = *majors = 0;
}
#endif

/* Deterministic randomness, so that both collectors do the same work:
 * splitmix64's finaliser, and xorshift64* seeded from it. */
static inline uint64_t gcshim_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t gcshim_rng_state;

static inline void gcshim_rng_seed(uint64_t seed) { gcshim_rng_state = gcshim_mix64(seed) | 1; }

static inline uint64_t gcshim_rng_next(void)
{
    uint64_t x = gcshim_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    gcshim_rng_state = x;
    return x * 0x2545f4914f6cdd1du;
}

/* Uniform in [0, n), n < 2^32. */
static inline uint32_t gcshim_rng_below(uint32_t n) { return (uint32_t)(((gcshim_rng_next() >> 32) * n) >> 32); }

/* A generator of one's own (state *s, one per thread): splitmix64, the
 * state advanced by the golden ratio and finalised by gcshim_mix64. */
static inline uint64_t gcshim_splitmix(uint64_t *s)
{
    uint64_t x = gcshim_mix64(*s);
    *s += 0x9e3779b97f4a7c15u;
    return x;
}

/* Uniform enough in [0, n), from *s. */
static inline uint64_t gcshim_split_below(uint64_t *s, uint64_t n) { return ((gcshim_splitmix(s) >> 32) * n) >> 32; }

/* One step of a running hash of words (murmur3's multiply-xorshift). */
static inline uint64_t gcshim_hash(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xFF51AFD7ED558CCDu;
    return h ^ (h >> 29);
}

/* Usage of a benchmark that takes only the common options. */
static inline void gcshim_usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-v] [--scale F]   (0 < F <= 10, default 1)\n", argv0);
    exit(2);
}

/* The options every benchmark takes: -v, and --scale F (0 < F <= 10).
 * Returns 1 when argv[*i] was one of them (its value consumed), 0 when it
 * is the caller's to parse; a bad value calls usage(argv[0]), which exits. */
static inline int gcshim_common_option(int argc, char **argv, int *i, double *scale, int *verbose,
                                       void (*usage)(const char *))
{
    if (!strcmp(argv[*i], "-v")) {
        *verbose = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--scale") && *i + 1 < argc) {
        char *end;
        const char *v = argv[++*i];
        *scale = strtod(v, &end);
        if (end == v || *end || !(*scale > 0 && *scale <= 10))
            usage(argv[0]);
        return 1;
    }
    return 0;
}

/* The options of a benchmark that runs several threads: -v, --scale F and
 * --threads N (1 <= N <= max_threads); anything else prints the usage and
 * exits 2. */
static inline void gcshim_threads_usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-v] [--scale F] [--threads N]\n", argv0);
    exit(2);
}
static inline void gcshim_parse_threads_args(int argc, char **argv, double *scale, int *verbose, int *threads,
                                             int max_threads)
{
    for (int i = 1; i < argc; i++) {
        if (gcshim_common_option(argc, argv, &i, scale, verbose, gcshim_threads_usage))
            continue;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            long t = strtol(argv[++i], &end, 10);
            if (*end || t < 1 || t > max_threads)
                gcshim_threads_usage(argv[0]);
            *threads = (int)t;
        } else {
            gcshim_threads_usage(argv[0]);
        }
    }
}

/* Peak resident set size in KiB. */
#include <sys/resource.h>
static inline long gcshim_peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* A checksum of the final live data: fold 64-bit words in order. Each
 * benchmark walks its live structure at the end and folds what it finds
 * (ids, values, shapes, never addresses), so the result depends on the
 * work done alone and must be the same on every collector. */
static inline uint64_t gcshim_fold(uint64_t h, uint64_t w) { return gcshim_mix64(h ^ w) + 0x9e3779b97f4a7c15u; }

/* RESULT gc=<name> bench=<bench> time_ms=... peak_rss_kb=... collections=...
 *        pauses=... pause_total_ms=... pause_max_us=... pause_p99_us=... pause_p50_us=...
 *        [minor_pauses=... minor_p50_us=... minor_p99_us=... minor_max_us=...
 *         major_pauses=... major_max_us=... majors_sync=... promoted_mib=... survival_pct=... aged_mib=...
 *         (lull only; major_pauses counts a concurrent major's initial and final
 *         pauses, majors_sync the majors that marked with the world stopped,
 *         promoted_mib what minors copied out of the nursery and survival_pct
 *         that over all allocation: lull_stats.bytes_promoted; aged_mib what they
 *         copied into the nursery's aging space, lull_stats.bytes_aged;
 *         live_mib what the last major found live, heap_exit_mib the heap at
 *         the end, heap_to_live their ratio, goal_mib the heap goal,
 *         sync_finishes the concurrent marks finished with the world stopped,
 *         paced_waits/paced_ms the program's waits for the markers)]
 *        [markers=N   (Boehm: marker threads)] checksum=<16 hex digits> <extra>
 * PAUSES gc=<name> bench=<bench> n=<count> us=<d1>,<d2>,...   (every pause logged)
 * All pause figures come from the pause log through gcshim_summarise_pauses
 * (nearest rank), the same for both collectors. */
static inline void gcshim_report(const char *bench, uint64_t time_ns, uint64_t checksum, const char *extra)
{
    uint64_t collections, logged = gcshim_logged_pauses(&collections);
    if (logged > GCSHIM_PAUSE_LOG_CAP) {
        fprintf(stderr, "gcshim: FAILED: %llu pauses, more than the %u the log holds: no figures over a part\n",
                (unsigned long long)logged, GCSHIM_PAUSE_LOG_CAP);
        exit(1);
    }
    gcshim_pause_summary all = gcshim_summarise_pauses(logged, -1);
    char kinds[640] = "";
#ifndef USE_BOEHM
    gcshim_pause_summary mi = gcshim_summarise_pauses(logged, 0), ma = gcshim_summarise_pauses(logged, 1);
    lull_stats ls;
    lull_get_stats(&ls);
    snprintf(kinds, sizeof kinds,
             " markers=%d minor_pauses=%llu minor_p50_us=%.1f minor_p99_us=%.1f minor_max_us=%.1f major_pauses=%llu "
             "major_max_us=%.1f majors_sync=%llu promoted_mib=%.1f survival_pct=%.1f aged_mib=%.1f "
             "live_mib=%.1f heap_exit_mib=%.1f heap_to_live=%.2f goal_mib=%.1f sync_finishes=%llu paced_waits=%llu "
             "paced_ms=%.1f", gcshim_markers(),
             (unsigned long long)mi.n, mi.p50_ns / 1e3, mi.p99_ns / 1e3, mi.max_ns / 1e3, (unsigned long long)ma.n,
             ma.max_ns / 1e3, (unsigned long long)ls.collections_major_sync, ls.bytes_promoted / 1048576.0,
             ls.bytes_allocated ? 100.0 * (double)ls.bytes_promoted / (double)ls.bytes_allocated : 0.0,
             ls.bytes_aged / 1048576.0, ls.live_bytes_after_major / 1048576.0, ls.heap_bytes / 1048576.0,
             ls.live_bytes_after_major ? (double)ls.heap_bytes / (double)ls.live_bytes_after_major : 0.0,
             ls.heap_goal_bytes / 1048576.0, (unsigned long long)ls.mark_finishes_sync,
             (unsigned long long)ls.paced_waits, ls.paced_wait_ns / 1e6);
#else
    snprintf(kinds, sizeof kinds, " markers=%d", gcshim_markers());
#endif
    printf("RESULT gc=%s bench=%s time_ms=%.1f peak_rss_kb=%ld collections=%llu pauses=%llu pause_total_ms=%.3f "
           "pause_max_us=%.1f pause_p99_us=%.1f pause_p50_us=%.1f%s checksum=%016llx%s%s\n",
           gcshim_name(), bench, time_ns / 1e6, gcshim_peak_rss_kb(), (unsigned long long)collections,
           (unsigned long long)all.n, all.total_ns / 1e6, all.max_ns / 1e3, all.p99_ns / 1e3, all.p50_ns / 1e3, kinds,
           (unsigned long long)checksum, extra && *extra ? " " : "", extra ? extra : "");
    printf("PAUSES gc=%s bench=%s n=%llu us=", gcshim_name(), bench, (unsigned long long)logged);
    for (uint64_t i = 0; i < logged; i++)
        printf(i ? ",%.1f" : "%.1f", gcshim_pause_log[i] / 1e3);
    printf("\n");
    fflush(stdout);
}

/* SERIES gc=<name> bench=<bench> name=<name> n=<count> values=<v1>,<v2>,... */
static inline void gcshim_series(const char *bench, const char *name, const double *v, size_t n)
{
    printf("SERIES gc=%s bench=%s name=%s n=%zu values=", gcshim_name(), bench, name, n);
    for (size_t i = 0; i < n; i++)
        printf(i ? ",%.3f" : "%.3f", v[i]);
    printf("\n");
    fflush(stdout);
}

#endif /* GCSHIM_H */
