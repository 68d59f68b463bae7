/*
 * handles — GC handles and finalizers, written only against the public API
 * (lull.h as doc/api.md describes it), as an outside user would.
 *
 *   handles [rounds]   (default 200000 per thread; LULL_GC_PARAMS tunes the
 *                       collector: run it with and without major=stw)
 *
 * Part 1: four threads, `rounds` rounds each. Every round allocates an
 * object (id, payload, checksum) and gives it a handle, WEAK, NORMAL or
 * PINNED in turn, in a ring of 64 handles per thread; the handle it
 * replaces is checked and freed. Every round also checks one handle of
 * the ring at random:
 *   - WEAK reads NULL or its very object, intact;
 *   - NORMAL reads its object intact, wherever it moved (moves are
 *     counted: the run needs some);
 *   - PINNED reads its object intact at the address it had when the
 *     handle was made;
 * NORMAL handles are sometimes re-targeted with lull_handle_set. Garbage,
 * small and large, and a thread forcing minors and majors keep collections
 * running; the run needs weak handles cleared and majors completed.
 *
 * Part 2: 10,000 finalizable objects are made and dropped (in threads that
 * then exit, so no stack keeps one), and 100 more are kept through NORMAL
 * handles. Majors run until the 10,000 are finalized: each exactly once,
 * its contents intact; none of the 100 may be. Then the 100 are released:
 * they are finalized too. With finalizers=manual in LULL_GC_PARAMS the
 * program runs them itself with lull_run_finalizers.
 *
 * With concurrent majors (the default), at least one must have completed.
 * Any inconsistency exits with status 1 and one message.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <lull.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Conservative stack scanning cannot see AddressSanitizer's fake stacks. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_stack_use_after_return=0"; }

#define NTHREADS 4
#define RING     64
#define NDROPPED 10000
#define NKEPT    100
#define MAKERS   4

struct obj {
    lull_array_header a;
    struct obj *next;        /* a reference: finalizable objects keep a child */
    uint64_t id;
    uint64_t sum;
    uint64_t payload[];
};

static const lull_type obj_type = {
    .name = "consumer-handles-obj",
    .size = sizeof(struct obj),
    .refs = LULL_REF(struct obj, next),
    .elem_size = sizeof(uint64_t),
};

static void fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "handles: FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(1);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return *s = x;
}

static uint64_t obj_sum(const struct obj *o, size_t len)
{
    uint64_t s = o->id;
    for (size_t i = 0; i < len; i++)
        s = mix64(s ^ o->payload[i]);
    return s;
}

static struct obj *obj_new(uint64_t id, size_t len)
{
    struct obj *o = lull_alloc_array(&obj_type, len);
    if (!o)
        fail("allocation of %zu payload words failed", len);
    o->id = id;
    for (size_t i = 0; i < len; i++)
        o->payload[i] = mix64(id + i);
    o->sum = obj_sum(o, len);
    return o;
}

static void obj_check(const struct obj *o, uint64_t id, const char *what)
{
    if (o->id != id)
        fail("%s: object %p has id %#" PRIx64 ", expected %#" PRIx64, what, (const void *)o, o->id, id);
    size_t len = lull_array_length(o);
    for (size_t i = 0; i < len; i++)
        if (o->payload[i] != mix64(id + i))
            fail("%s: object %#" PRIx64 " payload[%zu] is %#" PRIx64, what, id, i, o->payload[i]);
    if (o->sum != obj_sum(o, len))
        fail("%s: object %#" PRIx64 " checksum mismatch", what, id);
}

/* ---- part 1: handles from four threads ---- */

struct entry {
    lull_handle h;
    enum lull_handle_kind kind;
    uint64_t id;
    uintptr_t made_at;      /* the target's address when the handle was made (or set) */
};

struct worker {
    int index;
    long rounds;
    uint64_t rng;
    struct entry ring[RING];
    unsigned long weak_nulls, weak_alive, moved, pinned_checked, sets, checks;
};

static atomic_bool workers_done;
static atomic_ulong forced_minors, forced_majors;

static void check_entry(struct worker *w, struct entry *e, const char *when)
{
    char what[96];
    snprintf(what, sizeof what, "thread %d, %s handle %#x (%s)", w->index,
             e->kind == LULL_HANDLE_WEAK ? "WEAK" : e->kind == LULL_HANDLE_NORMAL ? "NORMAL" : "PINNED",
             (unsigned)e->h, when);
    struct obj *o = lull_handle_get(e->h);
    w->checks++;
    switch (e->kind) {
    case LULL_HANDLE_WEAK:
        if (!o) {
            w->weak_nulls++;
            return;
        }
        w->weak_alive++;
        obj_check(o, e->id, what);
        return;
    case LULL_HANDLE_NORMAL:
        if (!o)
            fail("%s: reads NULL", what);
        obj_check(o, e->id, what);
        if ((uintptr_t)o != e->made_at) {
            w->moved++;
            e->made_at = (uintptr_t)o;
        }
        if (xorshift(&w->rng) % 8 == 0) {
            e->id = ((uint64_t)(w->index + 1) << 40) | (xorshift(&w->rng) & 0xffffffffffull);
            struct obj *n = obj_new(e->id, xorshift(&w->rng) % 8);
            lull_handle_set(e->h, n);
            e->made_at = (uintptr_t)n;
            w->sets++;
        }
        return;
    default:
        if (!o)
            fail("%s: reads NULL", what);
        if ((uintptr_t)o != e->made_at)
            fail("%s: its object moved from %#" PRIxPTR " to %p", what, e->made_at, (void *)o);
        obj_check(o, e->id, what);
        w->pinned_checked++;
        return;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (lull_thread_attach())
        fail("lull_thread_attach failed");
    uint64_t next = 1;
    /* Past `rounds` until the forcer has completed a major: on a fast
     * machine the rounds alone may end before it forces one. */
    for (long r = 0; r < w->rounds || !atomic_load(&forced_majors); r++) {
        struct entry *e = &w->ring[r % RING];
        if (e->h) {
            check_entry(w, e, "before it is freed");
            lull_handle_free(e->h);
        }
        e->kind = r % 3 == 0 ? LULL_HANDLE_WEAK : r % 3 == 1 ? LULL_HANDLE_NORMAL : LULL_HANDLE_PINNED;
        e->id = ((uint64_t)(w->index + 1) << 40) | next++;
        struct obj *o = obj_new(e->id, xorshift(&w->rng) % 16);
        e->h = lull_handle_new(o, e->kind);
        if (!e->h)
            fail("lull_handle_new failed");
        e->made_at = (uintptr_t)o;
        struct entry *any = &w->ring[xorshift(&w->rng) % RING];
        if (any->h)
            check_entry(w, any, "at random");
        for (int g = 0; g < 4; g++)
            (void)obj_new(0, xorshift(&w->rng) % 24);                  /* garbage: minors */
        if (r % 512 == 0)
            (void)obj_new(0, 4096 + xorshift(&w->rng) % 8192);         /* large garbage: majors */
    }
    for (int i = 0; i < RING; i++)
        if (w->ring[i].h) {
            check_entry(w, &w->ring[i], "at the end");
            lull_handle_free(w->ring[i].h);
        }
    lull_thread_detach();
    return NULL;
}

static void *forcer_main(void *arg)
{
    (void)arg;
    if (lull_thread_attach())
        fail("lull_thread_attach failed");
    for (unsigned i = 0; !atomic_load(&workers_done); i++) {
        if (i % 8 == 0) {   /* a major first, then seven minors */
            lull_collect(LULL_GEN_MAJOR);
            atomic_fetch_add(&forced_majors, 1);
        } else {
            lull_collect(LULL_GEN_NURSERY);
            atomic_fetch_add(&forced_minors, 1);
        }
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    lull_thread_detach();
    return NULL;
}

static void part1(long rounds)
{
    static struct worker workers[NTHREADS];
    pthread_t th[NTHREADS], forcer;
    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (struct worker){ .index = i, .rounds = rounds, .rng = mix64((uint64_t)i + 7) | 1 };
        if (pthread_create(&th[i], NULL, worker_main, &workers[i]))
            fail("pthread_create failed");
    }
    if (pthread_create(&forcer, NULL, forcer_main, NULL))
        fail("pthread_create failed");
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&workers_done, true);
    pthread_join(forcer, NULL);
    unsigned long nulls = 0, alive = 0, moved = 0, pinned = 0, sets = 0, checks = 0;
    for (int i = 0; i < NTHREADS; i++) {
        nulls += workers[i].weak_nulls, alive += workers[i].weak_alive, moved += workers[i].moved;
        pinned += workers[i].pinned_checked, sets += workers[i].sets, checks += workers[i].checks;
    }
    printf("handles: part 1: %d threads x %ld rounds, %lu checks: weak %lu cleared / %lu alive, normal %lu moves "
           "followed and %lu sets, pinned %lu reads in place; %lu minors and %lu majors forced\n",
           NTHREADS, rounds, checks, nulls, alive, moved, sets, pinned, atomic_load(&forced_minors),
           atomic_load(&forced_majors));
    if (!nulls || !alive || !moved || !pinned || !atomic_load(&forced_majors))
        fail("part 1 did not exercise what it checks (weak cleared %lu, weak alive %lu, moves %lu, pinned "
             "reads %lu, majors %lu)", nulls, alive, moved, pinned, atomic_load(&forced_majors));
}

/* ---- part 2: finalizers ---- */

#define FIN_ID(n) (((uint64_t)0xf1 << 48) | (uint64_t)(n))

static atomic_uchar finalized[NDROPPED + NKEPT];
static atomic_uint finalized_count;

static void finalizer(void *obj, void *data)
{
    uintptr_t n = (uintptr_t)data;
    if (n >= NDROPPED + NKEPT)
        fail("finalizer: data %zu out of range", (size_t)n);
    const struct obj *o = obj;
    obj_check(o, FIN_ID(n), "finalizer");
    if (!o->next)
        fail("finalizer: object %zu lost its child", (size_t)n);
    obj_check(o->next, FIN_ID(n) | ((uint64_t)1 << 47), "finalizer: the child");
    if (atomic_exchange(&finalized[n], 1))
        fail("finalizer: object %zu finalized twice", (size_t)n);
    atomic_fetch_add(&finalized_count, 1);
}

static struct obj *finalizable(unsigned n)
{
    struct obj *o = obj_new(FIN_ID(n), n % 12);
    struct obj *child = obj_new(FIN_ID(n) | ((uint64_t)1 << 47), 3);
    lull_store(o, &o->next, child);
    int rc = lull_register_finalizer(o, finalizer, (void *)(uintptr_t)n);
    if (rc)
        fail("lull_register_finalizer returned %d", rc);
    return o;
}

static void *maker_main(void *arg)
{
    unsigned part = (unsigned)(uintptr_t)arg;
    if (lull_thread_attach())
        fail("lull_thread_attach failed");
    for (unsigned n = part; n < NDROPPED; n += MAKERS)
        (void)finalizable(n);
    lull_thread_detach();
    return NULL;
}

static void *keeper_main(void *arg)
{
    lull_handle *kept = arg;
    if (lull_thread_attach())
        fail("lull_thread_attach failed");
    for (unsigned i = 0; i < NKEPT; i++)
        if (!(kept[i] = lull_handle_new(finalizable(NDROPPED + i), LULL_HANDLE_NORMAL)))
            fail("lull_handle_new failed");
    lull_thread_detach();
    return NULL;
}

static void *release_main(void *arg)
{
    lull_handle *kept = arg;
    if (lull_thread_attach())
        fail("lull_thread_attach failed");
    for (unsigned i = 0; i < NKEPT; i++) {
        obj_check(lull_handle_get(kept[i]), FIN_ID(NDROPPED + i), "a kept finalizable object");
        lull_handle_free(kept[i]);
    }
    lull_thread_detach();
    return NULL;
}

static bool manual;

/* Collect until `want` objects are finalized (at most ~20 s). */
static void collect_until(unsigned want)
{
    for (int i = 0; i < 2000 && atomic_load(&finalized_count) < want; i++) {
        if (i < 6 || i % 50 == 0)
            lull_collect(LULL_GEN_MAJOR);
        if (manual)
            lull_run_finalizers();
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
}

static void part2(void)
{
    const char *params = getenv("LULL_GC_PARAMS");
    manual = params && strstr(params, "finalizers=manual");
    static lull_handle kept[NKEPT];
    pthread_t th[MAKERS + 1];
    if (pthread_create(&th[MAKERS], NULL, keeper_main, kept))
        fail("pthread_create failed");
    pthread_join(th[MAKERS], NULL);
    for (unsigned i = 0; i < MAKERS; i++)
        if (pthread_create(&th[i], NULL, maker_main, (void *)(uintptr_t)i))
            fail("pthread_create failed");
    for (unsigned i = 0; i < MAKERS; i++)
        pthread_join(th[i], NULL);
    collect_until(NDROPPED);
    unsigned dropped = 0, kept_done = 0;
    for (unsigned n = 0; n < NDROPPED; n++)
        dropped += atomic_load(&finalized[n]);
    for (unsigned n = NDROPPED; n < NDROPPED + NKEPT; n++)
        kept_done += atomic_load(&finalized[n]);
    if (dropped != NDROPPED)
        fail("%u of %d dropped finalizable objects were finalized", dropped, NDROPPED);
    if (kept_done)
        fail("%u of %d finalizable objects still held by NORMAL handles were finalized", kept_done, NKEPT);
    /* Checked and released by a thread that then exits: the main thread,
     * which collects, never holds one of them in a register. */
    pthread_t rel;
    if (pthread_create(&rel, NULL, release_main, kept))
        fail("pthread_create failed");
    pthread_join(rel, NULL);
    collect_until(NDROPPED + NKEPT);
    if (atomic_load(&finalized_count) != NDROPPED + NKEPT)
        fail("after their handles were freed, %u of %d kept objects were finalized",
             atomic_load(&finalized_count) - NDROPPED, NKEPT);
    printf("handles: part 2: %d dropped finalizable objects finalized once, intact; %d held ones not, "
           "until released (%s)\n", NDROPPED, NKEPT, manual ? "lull_run_finalizers" : "the finalizer thread");
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 200000;
    if (rounds < 1000)
        fail("usage: handles [rounds >= 1000]");
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = lull_init(NULL);
    if (rc)
        fail("lull_init returned %d (LULL_GC_PARAMS=%s)", rc, getenv("LULL_GC_PARAMS") ? getenv("LULL_GC_PARAMS") : "");
    /* true: majors are concurrent (not major=stw); false leaves them as they are. */
    bool concurrent = lull_set_allow_synchronous_major(true);
    part1(rounds);
    part2();
    lull_stats s;
    lull_get_stats(&s);
    if (concurrent && s.collections_major == s.collections_major_sync)
        fail("no concurrent major completed (%" PRIu64 " majors, all synchronous)", s.collections_major);
    printf("handles: OK [%s]: %" PRIu64 " minors, %" PRIu64 " majors (%" PRIu64 " synchronous)\n",
           getenv("LULL_GC_PARAMS") ? getenv("LULL_GC_PARAMS") : "defaults", s.collections_minor,
           s.collections_major, s.collections_major_sync);
    lull_shutdown();
    return 0;
}
