/*
 * stress/stress_common.h — what the stress programs share: the command line
 * (--seconds N, --seed S, --default-seconds N, -v), the first-failure-wins
 * report, a seeded random generator, checksums, relative sleeps and a lock
 * that is safe to wait for under ThreadSanitizer.
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds
 * (else the program's own default).
 *
 * Everything is static inline: each program includes it once and uses part
 * of it.
 */
#ifndef LULL_STRESS_COMMON_H
#define LULL_STRESS_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lull.h>

/* Built with -fsanitize=thread (gcc defines __SANITIZE_THREAD__, clang has
 * __has_feature). */
#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#ifndef STRESS_TSAN
#define STRESS_TSAN 0
#endif

/* ------------------------------------------------------------------------ */
/* Options and the failure report                                           */
/* ------------------------------------------------------------------------ */

static const char *stress_name = "stress";   /* set by stress_parse_args */
static uint64_t stress_seed = 1;
static double stress_seconds;
static int stress_verbose;
static int stress_failed;                     /* atomic: the first failure wins */

/* One line on stderr, exit status 1. A second failing thread parks: the
 * first one's message is the one that counts. Async-signal-unsafe (stdio):
 * call it from a thread, not from a signal handler. */
__attribute__((format(printf, 1, 2), noreturn))
static inline void stress_fail(const char *fmt, ...)
{
    if (__atomic_exchange_n(&stress_failed, 1, __ATOMIC_ACQ_REL)) {
        for (;;)
            pause();
    }
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "%s: FAIL (seed %" PRIu64 "): %s\n", stress_name, stress_seed, buf);
    fflush(stderr);
    _exit(1);
}

/* A program's own options: return how many arguments it used (1 for a flag,
 * 2 for an option with a value in `val`), 0 if `arg` is not one of them. */
typedef int (*stress_option_fn)(const char *arg, const char *val);

static inline void stress_usage(const char *extra)
{
    fprintf(stderr, "usage: %s [--seconds N] [--seed S] [--default-seconds N] [-v]%s%s\n"
                    "  seconds: --seconds, else $LULL_STRESS_SECONDS, else --default-seconds\n",
            stress_name, extra && *extra ? " " : "", extra ? extra : "");
    exit(2);
}

static inline double stress_parse_num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(s ? s : "", &end);
    if (!s || *s == 0 || *end != 0 || errno || v < 0) {
        fprintf(stderr, "%s: bad %s '%s'\n", stress_name, what, s ? s : "");
        exit(2);
    }
    return v;
}

static inline void stress_parse_args(const char *name, int argc, char **argv, double default_seconds,
                                     stress_option_fn own, const char *own_usage)
{
    double seconds = -1;
    stress_name = name;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used;
        if (!strcmp(a, "--seconds"))
            seconds = stress_parse_num(v, "--seconds"), i++;
        else if (!strcmp(a, "--default-seconds"))
            default_seconds = stress_parse_num(v, "--default-seconds"), i++;
        else if (!strcmp(a, "--seed"))
            stress_seed = (uint64_t)stress_parse_num(v, "--seed"), i++;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v"))
            stress_verbose = 1;
        else if (own && (used = own(a, v)) > 0)
            i += used - 1;
        else
            stress_usage(own_usage);
    }
    if (seconds < 0) {
        const char *env = getenv("LULL_STRESS_SECONDS");
        seconds = env && *env ? stress_parse_num(env, "LULL_STRESS_SECONDS") : default_seconds;
    }
    stress_seconds = seconds;
}

/* Concurrent marks as the pause hook sees them (stress_start installs it;
 * counted with the gc lock held, one pause at a time): the programs that
 * race a mark check that marks ended and minors ran inside them. */
static struct {
    int in_mark;
    uint64_t initial, final, minors_in_mark;
} stress_marks;
static int stress_concurrent;   /* majors are concurrent (stress_start) */

static inline void stress_count(uint64_t *n)
{
    __atomic_store_n(n, *n + 1, __ATOMIC_RELAXED);   /* only the hook writes; mutators read */
}

static inline void stress_on_pause(const lull_pause_event *e, void *data)
{
    (void)data;
    if (e->phase == LULL_PHASE_INITIAL) {
        stress_count(&stress_marks.initial);
        stress_marks.in_mark = 1;
    } else if (e->phase == LULL_PHASE_FINAL) {
        stress_count(&stress_marks.final);
        stress_marks.in_mark = 0;
    } else if (e->generation == LULL_GEN_NURSERY && stress_marks.in_mark) {
        stress_count(&stress_marks.minors_in_mark);
    } else if (e->generation == LULL_GEN_MAJOR) {
        stress_marks.in_mark = 0;    /* a synchronous major ends any mark */
    }
}

/* Whether the run raced marks enough: two marks ended, a minor inside one. */
static inline int stress_marks_covered(void)
{
    return __atomic_load_n(&stress_marks.final, __ATOMIC_RELAXED) >= 2 &&
           __atomic_load_n(&stress_marks.minors_in_mark, __ATOMIC_RELAXED) >= 1;
}

/* The banner line, lull_init and the mark-counting pause hook. Returns
 * whether majors are concurrent (LULL_GC_PARAMS has no major=stw). */
static inline int stress_start(int threads)
{
    const char *params = getenv("LULL_GC_PARAMS"), *debug = getenv("LULL_GC_DEBUG");
    printf("%s: seed %" PRIu64 ", %d threads, %.0f s, LULL_GC_PARAMS='%s' LULL_GC_DEBUG='%s'\n", stress_name,
           stress_seed, threads, stress_seconds, params ? params : "", debug ? debug : "");
    int rc = lull_init(NULL);
    if (rc)
        stress_fail("lull_init: %s", strerror(-rc));
    lull_set_pause_hook(stress_on_pause, NULL);
    stress_concurrent = !(params && strstr(params, "major=stw"));
    return stress_concurrent;
}

static inline const char *stress_env(const char *var)
{
    const char *v = getenv(var);
    return v ? v : "";
}

/* ------------------------------------------------------------------------ */
/* Random numbers and checksums                                             */
/* ------------------------------------------------------------------------ */

static inline uint64_t stress_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* The word an object with id `id` must hold at payload index i, and the
 * checksum of its (id, length). */
static inline uint64_t stress_payload(uint64_t id, size_t i) { return stress_mix64(id * 31 + i + 1); }
static inline uint64_t stress_sum(uint64_t id, size_t len)
{
    return stress_mix64(id ^ (len * 0x9e3779b97f4a7c15ull));
}

/* xorshift64*, one per thread; seeded from the run's seed and a stream. */
typedef struct { uint64_t s; } stress_rng;

static inline stress_rng stress_rng_for(uint64_t stream)
{
    stress_rng r = { stress_mix64(stress_seed * 0x9e3779b97f4a7c15ull + stream * 0xd1b54a32d192ed03ull + 1) | 1 };
    return r;
}
static inline uint64_t stress_rnd(stress_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}
static inline size_t stress_below(stress_rng *r, size_t n) { return n ? (size_t)((stress_rnd(r) >> 11) % n) : 0; }
static inline size_t stress_range(stress_rng *r, size_t lo, size_t hi) { return lo + stress_below(r, hi - lo + 1); }
static inline int stress_chance(stress_rng *r, unsigned percent) { return stress_below(r, 100) < percent; }

/* ------------------------------------------------------------------------ */
/* Time                                                                     */
/* ------------------------------------------------------------------------ */

static inline double stress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A mutator's loop condition: until stop_at; with concurrent majors, on
 * past it until stress_marks_covered, for at most three times as long
 * again. On a loaded machine a few seconds may hold only a mark or two,
 * and a run that raced nothing proves nothing (the programs fail then). */
static inline int stress_keep_going(double stop_at)
{
    double now = stress_now();
    if (now < stop_at)
        return 1;
    return stress_concurrent && !stress_marks_covered() && now < stop_at + 3 * stress_seconds;
}

/* Sleep `ns` in relative nanosleep slices of at most 10 ms (ThreadSanitizer
 * delivers the collector's suspend signal there; it never does in an
 * absolute clock_nanosleep). EINTR just continues with what is left. */
static inline void stress_sleep_ns(uint64_t ns)
{
    while (ns) {
        uint64_t slice = ns > 10000000u ? 10000000u : ns;
        struct timespec ts = { 0, (long)slice }, rem;
        if (nanosleep(&ts, &rem) != 0 && errno == EINTR)
            slice -= (uint64_t)rem.tv_sec * 1000000000u + (uint64_t)rem.tv_nsec;
        ns -= slice;
    }
}

/* ------------------------------------------------------------------------ */
/* A lock attached threads may wait for                                     */
/* ------------------------------------------------------------------------ */

/* Test-and-set with short sleeps, not a pthread mutex: ThreadSanitizer does
 * not deliver signals to a thread blocked in pthread_mutex_lock, so a thread
 * waiting for a lock whose owner the collector has already stopped would
 * never stop itself, and the pause would never complete. Never allocate
 * while holding one. */
static inline void stress_lock(int *l)
{
    for (unsigned spins = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); spins++) {
        if (spins < 16)
            sched_yield();
        else
            stress_sleep_ns(20000);
    }
}
static inline void stress_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* Acquire/relaxed loads of reference and data words written by others. */
static inline void *stress_load_ref(void *slot) { return __atomic_load_n((void **)slot, __ATOMIC_ACQUIRE); }
static inline uint64_t stress_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void stress_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline uint64_t stress_add_u64(uint64_t *p, uint64_t v) { return __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------------ */
/* A checksummed object                                                     */
/* ------------------------------------------------------------------------ */

/* An array of pointer-free payload words with two references in its fixed
 * part: 64 bytes up to large objects, depending on the length. Its id,
 * length, sum and payload are written before it is published and never
 * again; payload[i] == stress_payload(id, i), sum == stress_sum(id, length).
 * Every reference slot has a pointer-free twin holding the id the slot
 * should point to (0: NULL), written by the object's owner with the slot.
 * A live object that the collector freed, reused, poisoned or let be
 * overwritten shows up as a wrong type, id, sum or payload word. */
#define STRESS_NREF 2
struct sobj {
    lull_array_header a;
    uint64_t id;
    uint64_t sum;
    struct sobj *ref[STRESS_NREF];
    uint64_t expect[STRESS_NREF];
    uint64_t payload[];
};

static const lull_type stress_sobj_type = {
    .name = "stress.sobj", .size = sizeof(struct sobj),
    .refs = LULL_REF(struct sobj, ref[0]) | LULL_REF(struct sobj, ref[1]),
    .elem_size = sizeof(uint64_t),
};

/* The largest length that is still a small object (the header and fixed
 * part included, 8 KiB). */
#define STRESS_SMALL_MAX_LEN ((8192 - sizeof(struct sobj)) / sizeof(uint64_t))

/* A new object of `len` payload words with id `id`, or NULL with errno as
 * lull_alloc_array left it. Checks that it came back zeroed. */
static inline struct sobj *stress_sobj_new(uint64_t id, size_t len)
{
    struct sobj *o = lull_alloc_array(&stress_sobj_type, len);
    if (!o)
        return NULL;
    if (o->a.length != len || o->id || o->sum || o->ref[0] || o->ref[1] || o->expect[0] || o->expect[1])
        stress_fail("new object %p (length %zu): header length %zu, or not zeroed", (void *)o, len,
                    o->a.length);
    for (size_t i = 0; i < len; i++)
        if (o->payload[i])
            stress_fail("new object %p (length %zu): payload[%zu] = 0x%" PRIx64 ", not zeroed",
                        (void *)o, len, i, o->payload[i]);
    o->id = id;
    o->sum = stress_sum(id, len);
    for (size_t i = 0; i < len; i++)
        o->payload[i] = stress_payload(id, i);
    return o;
}

/* Point o->ref[i] at `target` and record its id. Only o's owner does this. */
static inline void stress_sobj_set(struct sobj *o, int i, struct sobj *target)
{
    lull_store(o, &o->ref[i], target);
    stress_store_u64(&o->expect[i], target ? target->id : 0);
}

/* Check the immutable part of `o` and that it is the object `expect_id`.
 * `where` names what held it. */
static inline void stress_sobj_check(const struct sobj *o, uint64_t expect_id, const char *where)
{
    if (!o)
        stress_fail("%s: expected object 0x%" PRIx64 ", found NULL", where, expect_id);
    /* The id first: a freed object (zeroed or poisoned) is reported here,
     * before lull_type_of would abort on it. */
    if (o->id != expect_id)
        stress_fail("%s: object %p: expected id 0x%" PRIx64 ", found id 0x%" PRIx64 " (freed or overwritten)",
                    where, (const void *)o, expect_id, o->id);
    const lull_type *t = lull_type_of(o);
    if (t != &stress_sobj_type)
        stress_fail("%s: object %p (expected id 0x%" PRIx64 "): type is %p '%s', not stress.sobj", where,
                    (const void *)o, expect_id, (const void *)t, t && t->name ? t->name : "?");
    size_t len = o->a.length;
    if (lull_array_length(o) != len)
        stress_fail("%s: object 0x%" PRIx64 ": length %zu in the header, lull_array_length says %zu",
                    where, expect_id, len, lull_array_length(o));
    if (o->sum != stress_sum(o->id, len))
        stress_fail("%s: object 0x%" PRIx64 " field sum: expected 0x%" PRIx64 ", found 0x%" PRIx64
                    " (length %zu)", where, expect_id, stress_sum(o->id, len), o->sum, len);
    for (size_t i = 0; i < len; i++) {
        lull_keep(o);   /* the compiler rebases `o` in this loop otherwise (lull.h) */
        if (o->payload[i] != stress_payload(o->id, i))
            stress_fail("%s: object 0x%" PRIx64 " (%p, length %zu) payload[%zu]: expected 0x%" PRIx64
                        ", found 0x%" PRIx64, where, expect_id, (const void *)o, len, i,
                        stress_payload(o->id, i), o->payload[i]);
    }
}

/* The same checks without a report: 1 if `o` is the intact object
 * `expect_id`. Loops use it and build the report's text only on failure. */
static inline int stress_sobj_ok(const struct sobj *o, uint64_t expect_id)
{
    if (!o || o->id != expect_id || lull_type_of(o) != &stress_sobj_type)
        return 0;
    size_t len = o->a.length;
    if (o->sum != stress_sum(expect_id, len))
        return 0;
    for (size_t i = 0; i < len; i++) {
        lull_keep(o);   /* the compiler rebases `o` in this loop otherwise (lull.h) */
        if (o->payload[i] != stress_payload(expect_id, i))
            return 0;
    }
    return 1;
}

/* stress_sobj_ok for `o` and the targets of its references. */
static inline int stress_sobj_refs_ok(const struct sobj *o, uint64_t expect_id)
{
    if (!stress_sobj_ok(o, expect_id))
        return 0;
    for (int i = 0; i < STRESS_NREF; i++) {
        const struct sobj *t = stress_load_ref((void *)&o->ref[i]);
        uint64_t e = stress_load_u64(&o->expect[i]);
        if ((t == NULL) != (e == 0) || (t && !stress_sobj_ok(t, e)))
            return 0;
    }
    return 1;
}

/* Check `o` and then its references against their recorded ids (one level:
 * the targets' own fields are checked, not theirs in turn). The caller
 * owns `o` or holds what keeps its references from changing. */
static inline void stress_sobj_check_refs(const struct sobj *o, uint64_t expect_id, const char *where)
{
    stress_sobj_check(o, expect_id, where);
    for (int i = 0; i < STRESS_NREF; i++) {
        const struct sobj *t = stress_load_ref((void *)&o->ref[i]);
        uint64_t e = stress_load_u64(&o->expect[i]);
        if (!t && !e)
            continue;
        char w[400];
        snprintf(w, sizeof w, "%.320s -> object 0x%" PRIx64 " ref[%d]", where, expect_id, i);
        if (!e)
            stress_fail("%s: expected NULL, found %p", w, (const void *)t);
        stress_sobj_check(t, e, w);
    }
}

/* Check `o` (and its references' targets) is the intact object `id`; on
 * failure report it, the text of `where` made from the printf-style
 * arguments, and exit. The text is only formatted on failure. */
#define STRESS_CHECK(o, id, ...)                                                     \
    do {                                                                             \
        if (!stress_sobj_refs_ok((o), (id))) {                                       \
            char where_[320];                                                        \
            snprintf(where_, sizeof where_, __VA_ARGS__);                            \
            stress_sobj_check_refs((o), (id), where_);                               \
            stress_fail("%s: object %p (id 0x%" PRIx64 ") failed a check and then "   \
                        "passed it: changed under the checker", where_,              \
                        (const void *)(o), (uint64_t)(id));                          \
        }                                                                            \
    } while (0)

#endif
