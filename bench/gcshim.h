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
 *   gcshim_get_stats(&s)                     collections and pause percentiles
 *   gcshim_report(bench, time_ns, extra)     print the RESULT line (+ extra "k=v ..."),
 *                                            then a PAUSES line with every pause (us)
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
 * GC_EVENT_POST_START_WORLD.
 */
#ifndef GCSHIM_H
#define GCSHIM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gcshim_stats {
    uint64_t collections;
    uint64_t pauses;
    uint64_t pause_max_ns, pause_p50_ns, pause_p99_ns;
} gcshim_stats;

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

/* Every pause, in order: filled by lull's pause hook or Boehm's collection
 * event callback (neither may allocate). Beyond the capacity only the
 * count grows. */
#define GCSHIM_PAUSE_LOG_CAP (1u << 18)
static uint64_t gcshim_pause_log[GCSHIM_PAUSE_LOG_CAP];
static uint64_t gcshim_pause_log_n;

static inline void gcshim_log_pause(uint64_t ns)
{
    if (gcshim_pause_log_n < GCSHIM_PAUSE_LOG_CAP)
        gcshim_pause_log[gcshim_pause_log_n] = ns;
    gcshim_pause_log_n++;
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
    gcshim_log_pause(e->duration_ns);
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
static inline void gcshim_thread_attach(void) { lull_thread_attach(); }
static inline void gcshim_thread_detach(void) { lull_thread_detach(); }

static inline void gcshim_get_stats(gcshim_stats *s)
{
    lull_stats st;
    lull_get_stats(&st);
    s->collections = st.collections_minor + st.collections_major;
    s->pauses = st.pauses;
    s->pause_max_ns = st.pause_max_ns;
    s->pause_p50_ns = st.pause_p50_ns;
    s->pause_p99_ns = st.pause_p99_ns;
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

/* Pause durations in a log-linear histogram: 16 sub-buckets per power of two
 * (error < 6.25 %), filled from the collection-event callback, which must
 * not allocate (it may run while other threads are stopped). */
#define GCSHIM_SUB 16
static uint64_t gcshim_hist[64 * GCSHIM_SUB];
static uint64_t gcshim_pauses, gcshim_pause_max, gcshim_stop_start;

static inline unsigned gcshim_bucket(uint64_t v)
{
    if (v < GCSHIM_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    return (msb - 3) * GCSHIM_SUB + (unsigned)((v >> (msb - 4)) & (GCSHIM_SUB - 1));
}
static inline uint64_t gcshim_bucket_high(unsigned b)  /* largest value in bucket b */
{
    if (b < GCSHIM_SUB)
        return b;
    unsigned msb = b / GCSHIM_SUB + 3, sub = b % GCSHIM_SUB;
    return ((uint64_t)(GCSHIM_SUB + sub + 1) << (msb - 4)) - 1;
}

static void gcshim_on_event(GC_EventType e)
{
    if (e == GC_EVENT_PRE_STOP_WORLD) {
        gcshim_stop_start = gcshim_now_ns();
    } else if (e == GC_EVENT_POST_START_WORLD && gcshim_stop_start) {
        uint64_t d = gcshim_now_ns() - gcshim_stop_start;
        gcshim_stop_start = 0;
        gcshim_hist[gcshim_bucket(d)]++;
        gcshim_pauses++;
        gcshim_log_pause(d);
        if (d > gcshim_pause_max)
            gcshim_pause_max = d;
    }
}

static inline uint64_t gcshim_percentile(double p)
{
    uint64_t rank = (uint64_t)(p / 100.0 * (double)gcshim_pauses + 0.5), seen = 0;
    if (rank == 0)
        rank = 1;
    for (unsigned b = 0; b < sizeof gcshim_hist / sizeof gcshim_hist[0]; b++) {
        seen += gcshim_hist[b];
        if (seen >= rank) {
            uint64_t v = gcshim_bucket_high(b);
            return v < gcshim_pause_max ? v : gcshim_pause_max;
        }
    }
    return gcshim_pause_max;
}

static int gcshim_incremental;

static inline const char *gcshim_name(void) { return gcshim_incremental ? "boehm-incr" : "boehm"; }

static inline void gcshim_init(void)
{
    GC_INIT();
    GC_allow_register_threads();
    GC_set_on_collection_event(gcshim_on_event);
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

static inline void gcshim_get_stats(gcshim_stats *s)
{
    GC_alloc_lock();                  /* the callback runs with the allocation lock held */
    s->collections = (uint64_t)GC_get_gc_no();
    s->pauses = gcshim_pauses;
    s->pause_max_ns = gcshim_pause_max;
    s->pause_p50_ns = gcshim_percentile(50);
    s->pause_p99_ns = gcshim_percentile(99);
    GC_alloc_unlock();
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

/* Peak resident set size in KiB. */
#include <sys/resource.h>
static inline long gcshim_peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* RESULT gc=<name> bench=<bench> time_ms=... peak_rss_kb=... collections=...
 * pauses=... pause_max_us=... pause_p99_us=... pause_p50_us=... <extra>
 * PAUSES gc=<name> bench=<bench> n=<count> us=<d1>,<d2>,...   (every pause logged) */
static inline void gcshim_report(const char *bench, uint64_t time_ns, const char *extra)
{
    gcshim_stats s;
    gcshim_get_stats(&s);
    char kinds[256] = "";
#ifndef USE_BOEHM
    /* lull: minor and major pauses apart. */
    lull_stats ls;
    lull_get_stats(&ls);
    snprintf(kinds, sizeof kinds,
             " minor_pauses=%llu minor_p50_us=%.1f minor_p99_us=%.1f minor_max_us=%.1f major_pauses=%llu "
             "major_max_us=%.1f",
             (unsigned long long)ls.pauses_minor, ls.pause_minor_p50_ns / 1e3, ls.pause_minor_p99_ns / 1e3,
             ls.pause_minor_max_ns / 1e3, (unsigned long long)ls.pauses_major, ls.pause_major_max_ns / 1e3);
#endif
    printf("RESULT gc=%s bench=%s time_ms=%.1f peak_rss_kb=%ld collections=%llu pauses=%llu "
           "pause_max_us=%.1f pause_p99_us=%.1f pause_p50_us=%.1f%s%s%s\n",
           gcshim_name(), bench, time_ns / 1e6, gcshim_peak_rss_kb(), (unsigned long long)s.collections,
           (unsigned long long)s.pauses, s.pause_max_ns / 1e3, s.pause_p99_ns / 1e3, s.pause_p50_ns / 1e3,
           kinds, extra && *extra ? " " : "", extra ? extra : "");
    uint64_t n = gcshim_pause_log_n < GCSHIM_PAUSE_LOG_CAP ? gcshim_pause_log_n : GCSHIM_PAUSE_LOG_CAP;
    printf("PAUSES gc=%s bench=%s n=%llu us=", gcshim_name(), bench, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
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
