/*
 * stress/exhaustion.c — running out of heap, over and over, from several
 * threads at once.
 *
 *   stress_exhaustion [--seconds N] [--seed S] [--default-seconds N]
 *                     [--threads T] [--max-heap SIZE] [-v]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 * SIZE (default 32m) is passed to lull_init as max-heap-size (LULL_GC_PARAMS
 * still applies on top).
 *
 * Each of T threads (3) keeps a pool of checksummed objects: small, medium
 * (up to 8 KiB), large (up to 2 MiB), and pairs referencing two other pool
 * objects (which then stay alive through the pair alone when the pool drops
 * them). It allocates until lull returns NULL (after a large object fails,
 * it goes on with smaller ones until a small one fails too, so the heap is
 * full to the last slot). Then errno must be ENOMEM,
 * impossible sizes must fail the same way, the heap must hold no more than
 * the limit, every object it holds must be intact; it drops a random half
 * and goes on. At the end, with every pool dropped, the whole heap must be
 * usable again: small objects worth three quarters of the limit fit (the
 * nursery takes an eighth), and after
 * dropping those, one large object of a quarter of the limit.
 *
 * What it proves: ENOMEM is reported cleanly (never a crash, never another
 * errno), the heap stays consistent and nothing live is lost at the limit,
 * and memory freed at the limit is reusable (nothing leaks in the
 * accounting).
 */
#include "stress_common.h"

#include <pthread.h>
#include <sys/mman.h>

#define MAX_THREADS 16
#define POOL 16384                   /* enough small objects to fill the limit */

struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "exhaustion.refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

enum kind { K_SMALL, K_MEDIUM, K_LARGE, K_PAIR, NKINDS };
static const char *const kind_name[NKINDS] = { "small", "medium", "large", "pair" };

struct mut {
    unsigned idx;
    pthread_t thread;
    stress_rng rng;
    struct refs *pool;               /* precise root; private to the thread */
    uint64_t expect[POOL];           /* id of pool->item[i], 0 if empty */
    unsigned free_slot[POOL];        /* a stack of the empty slots */
    unsigned nfree;
    unsigned held;
    int squeeze;                     /* 1: a large object failed, 2: a medium one; until the next drop */
    uint64_t serial;
    uint64_t allocs[NKINDS], enomem[NKINDS], bytes, dropped, verified, pool_full;
};

static unsigned nthreads = 3;
static const char *max_heap_arg = "32m";
static size_t max_heap;
static int stop;                     /* atomic */
static struct mut muts[MAX_THREADS];
static uint64_t max_heap_seen;       /* atomic max of heap_bytes at ENOMEM */

static uint64_t make_id(unsigned owner, enum kind k, uint64_t serial)
{
    return (uint64_t)0xe7 << 56 | (uint64_t)owner << 48 | (uint64_t)k << 44 | serial;
}

/* Check every object the pool holds, and what pairs point to. */
static void check_pool(struct mut *m, const char *when)
{
    unsigned n = 0;
    for (unsigned i = 0; i < POOL; i++) {
        struct sobj *o = m->pool->item[i];
        if ((o == NULL) != (m->expect[i] == 0))
            stress_fail("thread %u, %s: pool[%u] holds %p, expected id 0x%" PRIx64, m->idx, when, i, (void *)o,
                        m->expect[i]);
        if (!o)
            continue;
        STRESS_CHECK(o, m->expect[i], "thread %u, %s: pool[%u]", m->idx, when, i);
        n++;
    }
    if (n != m->held)
        stress_fail("thread %u, %s: pool holds %u objects, %u recorded", m->idx, when, n, m->held);
    m->verified += n;
}

static void drop_half(struct mut *m)
{
    for (unsigned i = 0; i < POOL; i++)
        if (m->pool->item[i] && stress_chance(&m->rng, 50)) {
            lull_store(m->pool, &m->pool->item[i], NULL);
            m->expect[i] = 0;
            m->free_slot[m->nfree++] = i;
            m->held--;
            m->dropped++;
        }
}

static struct sobj *random_member(struct mut *m)
{
    for (int tries = 0; tries < 8 && m->held; tries++) {
        unsigned i = (unsigned)stress_below(&m->rng, POOL);
        if (m->pool->item[i])
            return m->pool->item[i];
    }
    return NULL;
}

static void expect_enomem(struct mut *m, void *p, const char *what)
{
    if (p)
        stress_fail("thread %u: %s succeeded", m->idx, what);
    if (errno != ENOMEM)
        stress_fail("thread %u: %s returned NULL with errno %d (%s), expected ENOMEM", m->idx, what, errno,
                    strerror(errno));
}

/* Out of memory: check the error, the limit and everything held; drop half. */
static void at_the_limit(struct mut *m, enum kind k, size_t len)
{
    if (errno != ENOMEM)
        stress_fail("thread %u: allocating a %s object (length %zu) returned NULL with errno %d (%s), "
                    "expected ENOMEM", m->idx, kind_name[k], len, errno, strerror(errno));
    m->enomem[k]++;
    lull_stats s;
    lull_get_stats(&s);
    uint64_t seen = __atomic_load_n(&max_heap_seen, __ATOMIC_RELAXED);
    while (s.heap_bytes > seen && !__atomic_compare_exchange_n(&max_heap_seen, &seen, s.heap_bytes, 0,
                                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    if (s.heap_bytes > max_heap)
        stress_fail("thread %u: the heap holds %" PRIu64 " bytes, over max-heap-size %zu", m->idx, s.heap_bytes,
                    max_heap);
    /* Impossible sizes fail the same way, at the limit or not. */
    errno = 0;
    expect_enomem(m, lull_alloc_array(&stress_sobj_type, SIZE_MAX / 4), "an array of SIZE_MAX/4 elements");
    errno = 0;
    expect_enomem(m, lull_alloc_array(&stress_sobj_type, max_heap / sizeof(uint64_t) + 1),
                  "an array larger than max-heap-size");
    check_pool(m, "at ENOMEM");
    /* Squeeze: after a large object fails, no more large ones; after a
     * medium one fails, only small ones and pairs, until one of those
     * fails too. */
    if ((k == K_LARGE && m->squeeze < 1) || (k == K_MEDIUM && m->squeeze < 2)) {
        m->squeeze = k == K_LARGE ? 1 : 2;
        return;
    }
    m->squeeze = 0;
    drop_half(m);
}

static void *mutator_main(void *arg)
{
    struct mut *m = arg;
    if (lull_thread_attach() != 0)
        stress_fail("thread %u: lull_thread_attach failed", m->idx);
    /* The pool is allocated here, not by main: a word of main's stack
     * left over from allocating it would keep it (and whatever it holds
     * at the end) alive through the final fill. */
    m->pool = lull_alloc_array(&refs_type, POOL);
    if (!m->pool)
        stress_fail("allocating pool %u: %s", m->idx, strerror(errno));
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        unsigned c = (unsigned)stress_below(&m->rng, 100);
        enum kind k = c < 60 ? K_SMALL : c < 80 ? (m->squeeze < 2 ? K_MEDIUM : K_SMALL)
                    : c < 92 || m->squeeze ? K_PAIR : K_LARGE;
        size_t len = k == K_SMALL ? stress_range(&m->rng, 0, 30)
                   : k == K_MEDIUM ? stress_range(&m->rng, 31, STRESS_SMALL_MAX_LEN)
                   : k == K_LARGE ? stress_range(&m->rng, STRESS_SMALL_MAX_LEN + 1, (2u << 20) / 8)
                   : stress_range(&m->rng, 0, 8);
        uint64_t id = make_id(m->idx, k, ++m->serial);
        errno = 0;
        struct sobj *o = stress_sobj_new(id, len);
        if (!o) {
            at_the_limit(m, k, len);
            continue;
        }
        m->allocs[k]++;
        m->bytes += sizeof(struct sobj) + len * sizeof(uint64_t);
        if (k == K_PAIR) {
            stress_sobj_set(o, 0, random_member(m));
            stress_sobj_set(o, 1, random_member(m));
        }
        if (m->nfree == 0) {
            m->pool_full++;
            check_pool(m, "with a full pool");
            drop_half(m);
            continue;
        }
        unsigned slot = m->free_slot[--m->nfree];
        lull_store(m->pool, &m->pool->item[slot], o);
        m->expect[slot] = id;
        m->held++;
    }
    check_pool(m, "at the end");
    lull_thread_detach();
    return NULL;
}

/* With nothing else held: fill the heap with 4 KiB objects, held by a
 * precise malloc'ed table, check them, drop them; then one large object of
 * a quarter of the limit must fit. */
static void final_fill(void)
{
    const size_t len = (4096 - sizeof(struct sobj)) / sizeof(uint64_t);
    size_t cap = max_heap / 4096 + 16;
    void **fill = calloc(cap, sizeof *fill);
    if (!fill)
        stress_fail("out of memory (malloc)");
    int rc = lull_root_add_refs(fill, cap);
    if (rc != 0)
        stress_fail("lull_root_add_refs: %s", strerror(-rc));
    lull_collect(LULL_GEN_MAJOR);
    size_t n = 0;
    for (; n < cap; n++) {
        errno = 0;
        struct sobj *o = stress_sobj_new(make_id(0xff, K_MEDIUM, n + 1), len);
        if (!o) {
            if (errno != ENOMEM)
                stress_fail("final fill: NULL with errno %d (%s), expected ENOMEM", errno, strerror(errno));
            break;
        }
        fill[n] = o;
    }
    size_t bytes = n * 4096;
    if (n == cap)
        stress_fail("final fill: %zu objects of 4 KiB (%zu bytes) fit under max-heap-size %zu", n, bytes, max_heap);
    if (bytes < max_heap / 4 * 3) {
        /* What was in the way: live (kept) or not (lost to the heap). */
        lull_stats at;
        lull_get_stats(&at);
        memset(fill, 0, cap * sizeof *fill);
        lull_collect(LULL_GEN_MAJOR);
        lull_stats after;
        lull_get_stats(&after);
        stress_fail("final fill: with every pool dropped only %zu objects of 4 KiB (%zu bytes) fit under "
                    "max-heap-size %zu: less than three quarters of it is usable (heap %.1f MiB; with the fill dropped "
                    "too, a major finds %.1f MiB live in a heap of %.1f MiB)", n, bytes, max_heap,
                    at.heap_bytes / 1048576.0, after.live_bytes_after_major / 1048576.0,
                    after.heap_bytes / 1048576.0);
    }
    for (size_t i = 0; i < n; i++)
        STRESS_CHECK((struct sobj *)fill[i], make_id(0xff, K_MEDIUM, i + 1), "final fill, object %zu", i);
    memset(fill, 0, cap * sizeof *fill);
    lull_collect(LULL_GEN_MAJOR);
    size_t big_len = (max_heap / 4 - sizeof(struct sobj)) / sizeof(uint64_t);
    errno = 0;
    struct sobj *big = stress_sobj_new(make_id(0xff, K_LARGE, 1), big_len);
    if (!big)
        stress_fail("after dropping everything, an object of a quarter of max-heap-size (%zu bytes) failed: %s",
                    max_heap / 4, strerror(errno));
    lull_collect(LULL_GEN_MAJOR);
    stress_sobj_check(big, make_id(0xff, K_LARGE, 1), "the final large object");
    printf("stress_exhaustion: final fill: %zu x 4 KiB = %.1f MiB of %.1f MiB usable, then one object of %.1f MiB\n",
           n, bytes / 1048576.0, max_heap / 1048576.0, max_heap / 4 / 1048576.0);
    __asm__ __volatile__("" : : "r"(big) : "memory");
    lull_root_remove(fill);
    free(fill);
}

static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    }
    return *end ? 0 : (size_t)v;
}

static int own_option(const char *arg, const char *val)
{
    if (!strcmp(arg, "--threads")) {
        double d = stress_parse_num(val, "--threads");
        if (d < 1 || d > MAX_THREADS)
            stress_usage("[--threads T (1..16)] [--max-heap SIZE]");
        nthreads = (unsigned)d;
        return 2;
    }
    if (!strcmp(arg, "--max-heap")) {
        if (!val || parse_size(val) < (4u << 20))
            stress_usage("[--threads T] [--max-heap SIZE (at least 4m)]");
        max_heap_arg = val;
        return 2;
    }
    return 0;
}

/* After the mutators ended: their pools checked and dropped (one thread),
 * then the final fill (another): see main. */
static void *check_phase(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("final checks: lull_thread_attach failed");
    for (unsigned t = 0; t < nthreads; t++) {
        struct mut *m = &muts[t];
        check_pool(m, "after the threads ended");
        m->pool = NULL;
        lull_root_remove((void **)&m->pool);
    }
    lull_thread_detach();
    return NULL;
}

static void *fill_phase(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("final fill: lull_thread_attach failed");
    final_fill();
    lull_thread_detach();
    return NULL;
}

/* Run fn on a new thread whose stack is new memory (zero pages), not a
 * stack glibc kept from an exited thread: see main. */
static void run_on_fresh_thread(void *(*fn)(void *))
{
    const size_t size = 8u << 20;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        stress_fail("mmap of a thread stack failed: %s", strerror(errno));
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstack(&attr, stack, size) != 0 ||
        pthread_create(&t, &attr, fn, NULL) != 0)
        stress_fail("pthread_create on a fresh stack failed");
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
    munmap(stack, size);
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_exhaustion", argc, argv, 10, own_option, "[--threads T] [--max-heap SIZE]");
    /* LULL_GC_PARAMS applies on top of the argument: the limit is the last
     * max-heap-size in it, if any. */
    max_heap = parse_size(max_heap_arg);
    const char *env = getenv("LULL_GC_PARAMS"), *p;
    for (p = env; p && (p = strstr(p, "max-heap-size=")); p++) {
        char buf[32];
        size_t l = strcspn(p + 14, ",");
        snprintf(buf, sizeof buf, "%.*s", (int)(l < 31 ? l : 31), p + 14);
        if (parse_size(buf))
            max_heap = parse_size(buf);
    }
    printf("stress_exhaustion: seed %" PRIu64 ", %.1f s, %u threads, max-heap-size %zu, LULL_GC_PARAMS='%s' "
           "LULL_GC_DEBUG='%s'\n", stress_seed, stress_seconds, nthreads, max_heap, stress_env("LULL_GC_PARAMS"),
           stress_env("LULL_GC_DEBUG"));
    fflush(stdout);

    char params[64];
    snprintf(params, sizeof params, "max-heap-size=%s", max_heap_arg);
    int rc = lull_init(params);
    if (rc != 0)
        stress_fail("lull_init(\"%s\"): %s", params, strerror(-rc));
    for (unsigned t = 0; t < nthreads; t++) {
        struct mut *m = &muts[t];
        m->idx = t;
        m->rng = stress_rng_for(t + 1);
        if ((rc = lull_root_add_refs((void **)&m->pool, 1)) != 0)
            stress_fail("lull_root_add_refs: %s", strerror(-rc));
        for (unsigned i = 0; i < POOL; i++)
            m->free_slot[i] = POOL - 1 - i;
        m->nfree = POOL;
    }
    double t0 = stress_now();
    for (unsigned t = 0; t < nthreads; t++)
        if (pthread_create(&muts[t].thread, NULL, mutator_main, &muts[t]) != 0)
            stress_fail("pthread_create failed");
    stress_rng r = stress_rng_for(99);
    uint64_t forced = 0;
    while (stress_now() - t0 < stress_seconds) {
        stress_sleep_ns(stress_range(&r, 10, 100) * 1000000ull);
        lull_collect(LULL_GEN_MAJOR);
        forced++;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned t = 0; t < nthreads; t++)
        pthread_join(muts[t].thread, NULL);

    uint64_t allocs[NKINDS] = { 0 }, enomem[NKINDS] = { 0 }, bytes = 0, dropped = 0, verified = 0,
             pool_full = 0, total_enomem = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        struct mut *m = &muts[t];
        for (int k = 0; k < NKINDS; k++) {
            allocs[k] += m->allocs[k];
            enomem[k] += m->enomem[k];
            total_enomem += m->enomem[k];
        }
        bytes += m->bytes;
        dropped += m->dropped;
        verified += m->verified;
        pool_full += m->pool_full;
    }
    if (total_enomem == 0)
        stress_fail("never reached the limit: %.1f MiB allocated under max-heap-size %zu", bytes / 1048576.0,
                    max_heap);
    /* "Nothing live is lost at the limit" means objects were checked there
     * and half of them dropped to go on; both pass vacuously otherwise. */
    if (verified == 0 || dropped == 0)
        stress_fail("too little happened: %" PRIu64 " objects verified, %" PRIu64 " dropped (%" PRIu64 " ENOMEM)",
                    verified, dropped, total_enomem);
    /* The final fill must find the heap empty, but a conservative
     * collector keeps what a stale stack word points to: one pool kept
     * alive keeps its last objects, scattered over enough blocks to leave
     * less than half the heap usable. So no attached stack scanned during
     * the fill may hold such words. The fill runs on a thread of its own
     * that never saw a pool, on a stack of fresh memory: glibc hands a new
     * thread the cached stack of an exited one, and under AddressSanitizer
     * the redzones in the new thread's frames are never written, so they
     * kept the old mutator's pool pointers (one run in five failed until
     * this, the pool of the thread whose stack was reused was live). The
     * pools are checked and dropped on another thread before it, and main
     * (whose stack holds words from its forced collections) is detached
     * meanwhile. The mutators allocate their own pools, so main never
     * held one. */
    lull_thread_detach();
    run_on_fresh_thread(check_phase);
    run_on_fresh_thread(fill_phase);
    double elapsed = stress_now() - t0;

    lull_stats s;
    lull_get_stats(&s);
    printf("stress_exhaustion: OK seed %" PRIu64 " %.1f s: %u threads, max-heap-size %.0f MiB; ENOMEM %" PRIu64
           " times (", stress_seed, elapsed, nthreads, max_heap / 1048576.0, total_enomem);
    for (int k = 0; k < NKINDS; k++)
        printf("%s%s %" PRIu64 "/%" PRIu64, k ? ", " : "", kind_name[k], enomem[k], allocs[k] + enomem[k]);
    printf("), all errno ENOMEM; %" PRIu64 " objects verified, %" PRIu64 " dropped, %" PRIu64 " full pools; "
           "%.0f MiB allocated; heap at ENOMEM at most %.1f MiB; collections %" PRIu64 " (forced %" PRIu64
           ") pause max %.0f us\n",
           verified, dropped, pool_full, bytes / 1048576.0, max_heap_seen / 1048576.0,
           s.collections_major + s.collections_minor, forced, s.pause_max_ns / 1e3);
    lull_shutdown();
    return 0;
}
