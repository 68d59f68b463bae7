/*
 * torture — a multi-threaded torture test of lull, written only against the
 * public API (lull.h as described by doc/api.md), as an outside user would.
 *
 *   torture [seconds]        (default 5; LULL_GC_PARAMS tunes the collector)
 *
 * Threads, all running until the deadline:
 *  - mutators (4) own a graph of checksummed nodes hanging off a table that
 *    is held by a precise root; they allocate nodes (a few of them large),
 *    rewire references, rewrite payloads, replace the whole table, publish
 *    immutable chains into a shared exchange array (release store) and
 *    adopt other threads' chains (acquire load). Every node has an id, a
 *    payload checksum, and for each reference slot the id it expects there.
 *    A full traversal of everything reachable is verified regularly; its
 *    work stack is a malloc'd conservative root range.
 *  - a collector thread forces nursery and major collections and toggles
 *    lull_set_allow_synchronous_major.
 *  - a longjmp thread recurses deeply, allocating a chain with one link per
 *    frame held only by that frame, verifies it at the bottom (sometimes
 *    after a collection) and longjmps out; sometimes it keeps the chain in
 *    a precise root and verifies it after the jump.
 *  - a churn thread attaches, allocates, verifies, publishes and detaches in
 *    a loop, and starts short-lived threads that exit attached.
 *  - a watchdog (not attached) fails the run if it hangs.
 *
 * Any inconsistency exits with status 1 and one precise message. On success
 * a summary line with the counts and lull_get_stats figures is printed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <lull.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Conservative stack scanning cannot see AddressSanitizer's fake stacks. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_stack_use_after_return=0"; }

#define NMUT       8   /* at most; argv[2] chooses, default 4 */
#define NREF       3
#define TSLOTS     256
#define NEXCH      64
#define CHAIN_MAX  32
#define LJ_OWNER   1000u
#define CHURN_OWNER 2000u

enum { F_IMMUTABLE = 1 };

struct node {
    lull_array_header a;
    struct node *ref[NREF];
    uint64_t id;
    uint64_t expect[NREF];   /* id expected in ref[i], 0 for NULL */
    uint64_t seed;           /* payload[i] = mix(seed + i) */
    uint64_t aux;            /* chains: position (immutable) or depth (longjmp) */
    uint32_t owner, flags;
    uint64_t epoch;          /* owner's traversal mark; not checksummed */
    uint64_t plen;
    uint64_t sum;
    uint64_t payload[];
};

static const lull_type node_type = {
    .name = "torture-node",
    .size = sizeof(struct node),
    .refs = LULL_REF(struct node, ref[0]) | LULL_REF(struct node, ref[1]) |
            LULL_REF(struct node, ref[2]),
    .elem_size = sizeof(uint64_t),
};

struct table {
    lull_array_header a;
    struct node *slot[];
};

static const lull_type table_type = {
    .name = "torture-table",
    .size = sizeof(struct table),
    .elem_size = sizeof(void *),
    .elem_refs = 1,
};

/* ---------------------------------------------------------------------- */

static atomic_int stop;
static atomic_int finished;
static atomic_uint_fast64_t next_id = 1;
static struct table *exch;              /* conservative root: &exch */

static void fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "torture: FAIL: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until a deadline in relative slices of at most 10 ms: a relative
 * sleep restarted after every stop-the-world signal would not count the
 * time spent stopped, and ThreadSanitizer never delivers the suspend signal
 * inside an absolute clock_nanosleep (an attached thread there would hold
 * up every pause). */
static void sleep_us(unsigned us)
{
    uint64_t end = now_ns() + (uint64_t)us * 1000ull;
    for (uint64_t t; (t = now_ns()) < end;) {
        uint64_t left = end - t, slice = left < 10000000ull ? left : 10000000ull;
        struct timespec ts = { 0, (long)slice };
        nanosleep(&ts, NULL);
    }
}

static uint64_t node_sum(const struct node *n)
{
    uint64_t s = mix64(n->id);
    s = mix64(s ^ n->seed);
    s = mix64(s ^ n->aux);
    s = mix64(s ^ ((uint64_t)n->owner << 32 | n->flags));
    s = mix64(s ^ n->plen);
    for (uint64_t i = 0; i < n->plen; i++)
        s = mix64(s ^ n->payload[i]);
    return s;
}

static void node_seal(struct node *n, uint64_t seed)
{
    n->seed = seed;
    for (uint64_t i = 0; i < n->plen; i++)
        n->payload[i] = mix64(seed + i);
    n->sum = node_sum(n);
}

/* Check one node's own contents (not its references). */
static void check_node(const struct node *n, const char *who)
{
    if (lull_type_of(n) != &node_type)
        fail("%s: object %p has type %p, expected the node type %p", who, (const void *)n,
             (const void *)lull_type_of(n), (const void *)&node_type);
    size_t len = lull_array_length(n);
    if (len != n->plen)
        fail("%s: node id %" PRIu64 " at %p: array length %zu but %" PRIu64 " payload words recorded",
             who, n->id, (const void *)n, len, n->plen);
    uint64_t hi = atomic_load_explicit(&next_id, memory_order_relaxed);
    if (n->id == 0 || n->id >= hi)
        fail("%s: node at %p has impossible id %" PRIu64 " (ids handed out: 1..%" PRIu64 ")",
             who, (const void *)n, n->id, hi - 1);
    for (uint64_t i = 0; i < n->plen; i++)
        if (n->payload[i] != mix64(n->seed + i))
            fail("%s: node id %" PRIu64 " at %p: payload word %" PRIu64 " of %" PRIu64
                 " is %#" PRIx64 ", expected %#" PRIx64, who, n->id, (const void *)n, i, n->plen,
                 n->payload[i], mix64(n->seed + i));
    if (node_sum(n) != n->sum)
        fail("%s: node id %" PRIu64 " at %p: checksum mismatch (header fields corrupt)", who,
             n->id, (const void *)n);
}

static void check_refs(const struct node *n, const char *who)
{
    for (int i = 0; i < NREF; i++) {
        const struct node *t = n->ref[i];
        if (t == NULL) {
            if (n->expect[i] != 0)
                fail("%s: node id %" PRIu64 ": ref[%d] is NULL, expected node id %" PRIu64,
                     who, n->id, i, n->expect[i]);
        } else if (t->id != n->expect[i]) {
            fail("%s: node id %" PRIu64 ": ref[%d] -> %p holds id %" PRIu64 ", expected id %" PRIu64,
                 who, n->id, i, (const void *)t, t->id, n->expect[i]);
        }
    }
}

static struct node *node_new(uint64_t *rng, uint32_t owner, uint32_t flags, uint64_t aux,
                             size_t plen, const char *who)
{
    errno = 0;
    struct node *n = lull_alloc_array(&node_type, plen);
    if (n == NULL)
        fail("%s: lull_alloc_array(node, %zu) returned NULL (%s)", who, plen, strerror(errno));
    if (lull_array_length(n) != plen)
        fail("%s: new node's array length is %zu, expected %zu", who, lull_array_length(n), plen);
    const uint64_t *w = (const uint64_t *)&n->ref[0];
    size_t words = (sizeof(struct node) - offsetof(struct node, ref)) / 8 + plen;
    for (size_t i = 0; i < words; i++)
        if (w[i] != 0)
            fail("%s: new node at %p (payload %zu words) not zeroed at word %zu", who,
                 (const void *)n, plen, i + offsetof(struct node, ref) / 8);
    n->id = atomic_fetch_add(&next_id, 1);
    n->owner = owner;
    n->flags = flags;
    n->aux = aux;
    n->plen = plen;
    node_seal(n, xorshift(rng));
    return n;
}

static void set_ref(struct node *n, int i, struct node *target)
{
    lull_store(n, &n->ref[i], target);
    n->expect[i] = target ? target->id : 0;
}

/* Verify an immutable chain: positions count down to 0 at the tail. */
static void verify_chain(const struct node *h, const char *who)
{
    uint64_t pos = h->aux;
    int steps = 0;
    for (const struct node *n = h; n; n = n->ref[0], steps++) {
        check_node(n, who);
        if (!(n->flags & F_IMMUTABLE))
            fail("%s: node id %" PRIu64 " in a published chain is not marked immutable", who, n->id);
        if (n->aux != pos)
            fail("%s: chain node id %" PRIu64 " has position %" PRIu64 ", expected %" PRIu64,
                 who, n->id, n->aux, pos);
        if (n->ref[1] || n->ref[2])
            fail("%s: chain node id %" PRIu64 " has extra references", who, n->id);
        check_refs(n, who);
        if (n->ref[0] == NULL && pos != 0)
            fail("%s: chain from id %" PRIu64 " truncated at position %" PRIu64, who, h->id, pos);
        if (steps > CHAIN_MAX)
            fail("%s: chain from id %" PRIu64 " longer than %d (cycle?)", who, h->id, CHAIN_MAX);
        pos--;
    }
}

static struct node *build_chain(uint64_t *rng, uint32_t owner, int len, const char *who)
{
    struct node *prev = NULL;
    for (int pos = 0; pos < len; pos++) {
        struct node *n = node_new(rng, owner, F_IMMUTABLE, (uint64_t)pos, xorshift(rng) % 12, who);
        set_ref(n, 0, prev);
        prev = n;
    }
    return prev;
}

static struct node *exch_get(uint64_t *rng)
{
    return __atomic_load_n(&exch->slot[xorshift(rng) % NEXCH], __ATOMIC_ACQUIRE);
}

static void exch_put(uint64_t *rng, struct node *chain)
{
    lull_store(exch, &exch->slot[xorshift(rng) % NEXCH], chain);
}

/* ---------------------------------------------------------------------- */
/* Mutators                                                                */
/* ---------------------------------------------------------------------- */

struct mut {
    int idx;
    char who[32];
    uint64_t rng, epoch;
    void **proot;                 /* precise root: proot[0] is the table */
    struct node **work;           /* conservative root range */
    size_t wcap;
    unsigned long allocs, large, rewires, reseeds, publishes, adopts, tables, verifies, max_reach, ops;
};

static void work_push(struct mut *m, size_t *sp, struct node *n)
{
    if (*sp == m->wcap) {
        size_t ncap = m->wcap * 2;
        struct node **nw = calloc(ncap, sizeof *nw);
        if (nw == NULL)
            fail("%s: out of malloc memory for the traversal stack", m->who);
        memcpy(nw, m->work, m->wcap * sizeof *nw);
        /* add the new range before removing the old: never unrooted */
        int rc = lull_root_add(nw, ncap * sizeof *nw);
        if (rc != 0)
            fail("%s: lull_root_add(traversal stack) returned %d", m->who, rc);
        lull_root_remove(m->work);
        free(m->work);
        m->work = nw;
        m->wcap = ncap;
    }
    m->work[(*sp)++] = n;
}

/* Verify everything reachable from this mutator's table. */
static void verify_all(struct mut *m)
{
    struct table *t = m->proot[0];
    if (lull_type_of(t) != &table_type || lull_array_length(t) != TSLOTS)
        fail("%s: the table (precise root) is corrupt", m->who);
    m->epoch++;
    size_t sp = 0, reached = 0;
    for (int k = 0; k < TSLOTS; k++)
        if (t->slot[k])
            work_push(m, &sp, t->slot[k]);
    while (sp > 0) {
        struct node *n = m->work[--sp];
        m->work[sp] = NULL;
        if (n->flags & F_IMMUTABLE) {
            verify_chain(n, m->who);
            continue;
        }
        if (n->owner != (uint32_t)m->idx)
            fail("%s: reached a mutable node id %" PRIu64 " owned by %u", m->who, n->id, n->owner);
        if (n->epoch == m->epoch)
            continue;
        n->epoch = m->epoch;
        reached++;
        check_node(n, m->who);
        check_refs(n, m->who);
        for (int i = 0; i < NREF; i++)
            if (n->ref[i])
                work_push(m, &sp, n->ref[i]);
    }
    m->verifies++;
    if (reached > m->max_reach)
        m->max_reach = reached;
}

static struct node *pick_target(struct mut *m, struct table *t)
{
    unsigned r = (unsigned)(xorshift(&m->rng) % 8);
    if (r < 2)
        return NULL;
    if (r < 5)
        return t->slot[xorshift(&m->rng) % TSLOTS];
    if (r < 6) {
        struct node *p = t->slot[xorshift(&m->rng) % TSLOTS];
        return p ? p->ref[xorshift(&m->rng) % NREF] : NULL;
    }
    struct node *c = exch_get(&m->rng);
    if (c) {
        verify_chain(c, m->who);
        m->adopts++;
    }
    return c;
}

static void mutator_step(struct mut *m)
{
    struct table *t = m->proot[0];
    unsigned u = (unsigned)(xorshift(&m->rng) % 100);
    if (u < 40) {
        size_t plen = xorshift(&m->rng) % 24;
        if (xorshift(&m->rng) % 100 == 0) {
            plen = 1100 + xorshift(&m->rng) % 2000;     /* 9..25 KB: large objects */
            m->large++;
        }
        struct node *n = node_new(&m->rng, (uint32_t)m->idx, 0, 0, plen, m->who);
        for (int i = 0; i < NREF; i++)
            set_ref(n, i, pick_target(m, t));
        lull_store(t, &t->slot[xorshift(&m->rng) % TSLOTS], n);
        m->allocs++;
    } else if (u < 75) {
        struct node *p = t->slot[xorshift(&m->rng) % TSLOTS];
        if (p) {
            set_ref(p, (int)(xorshift(&m->rng) % NREF), pick_target(m, t));
            m->rewires++;
        }
    } else if (u < 80) {
        struct node *p = t->slot[xorshift(&m->rng) % TSLOTS];
        if (p) {
            check_node(p, m->who);
            node_seal(p, xorshift(&m->rng));
            m->reseeds++;
        }
    } else if (u < 83) {
        struct node *c = build_chain(&m->rng, (uint32_t)m->idx,
                                     1 + (int)(xorshift(&m->rng) % CHAIN_MAX), m->who);
        verify_chain(c, m->who);
        exch_put(&m->rng, c);
        m->publishes++;
    } else if (u < 93) {
        struct node *p = t->slot[xorshift(&m->rng) % TSLOTS];
        if (p) {
            check_node(p, m->who);
            check_refs(p, m->who);
        }
    } else if (u < 94) {
        /* replace the table: the precise root changes */
        struct table *nt = lull_alloc_array(&table_type, TSLOTS);
        if (nt == NULL)
            fail("%s: allocating a new table failed (%s)", m->who, strerror(errno));
        for (int k = 0; k < TSLOTS; k++)
            lull_store(nt, &nt->slot[k], t->slot[k]);
        m->proot[0] = nt;
        m->tables++;
    } else {
        lull_store(t, &t->slot[xorshift(&m->rng) % TSLOTS], NULL);
    }
    m->ops++;
}

static void *mutator(void *arg)
{
    struct mut *m = arg;
    int rc = lull_thread_attach();
    if (rc != 0)
        fail("%s: lull_thread_attach returned %d", m->who, rc);
    m->proot = calloc(2, sizeof(void *));
    m->wcap = 1024;
    m->work = calloc(m->wcap, sizeof *m->work);
    if (!m->proot || !m->work)
        fail("%s: malloc failed", m->who);
    if ((rc = lull_root_add_refs(m->proot, 2)) != 0)
        fail("%s: lull_root_add_refs returned %d", m->who, rc);
    if ((rc = lull_root_add(m->work, m->wcap * sizeof *m->work)) != 0)
        fail("%s: lull_root_add returned %d", m->who, rc);
    struct table *t = lull_alloc_array(&table_type, TSLOTS);
    if (t == NULL)
        fail("%s: allocating the table failed", m->who);
    m->proot[0] = t;
    t = NULL;

    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 64; i++)
            mutator_step(m);
        if (m->ops % 4096 == 0)
            verify_all(m);
    }
    verify_all(m);
    lull_root_remove(m->proot);
    lull_root_remove(m->work);
    free(m->proot);
    free(m->work);
    lull_thread_detach();
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* longjmp storms                                                          */
/* ---------------------------------------------------------------------- */

struct lj {
    jmp_buf jb;
    uint64_t rng;
    int depth;
    void **keep;                  /* precise root */
    unsigned long jumps, kept, collections, nodes;
};

static void verify_lj_chain(const struct node *bottom, int depth, const char *what)
{
    int level = depth;
    uint64_t child_id = UINT64_MAX;
    for (const struct node *n = bottom; n; n = n->ref[0], level--) {
        check_node(n, what);
        check_refs(n, what);
        if (n->owner != LJ_OWNER || n->aux != (uint64_t)level)
            fail("%s: frame chain node id %" PRIu64 " has depth %" PRIu64 ", expected %d",
                 what, n->id, n->aux, level);
        if (n->id >= child_id)
            fail("%s: frame chain ids not decreasing (%" PRIu64 " then %" PRIu64 ")", what,
                 child_id, n->id);
        child_id = n->id;
    }
    if (level != -1)
        fail("%s: frame chain of depth %d ended at level %d", what, depth, level + 1);
}

static NOINLINE void dive(struct lj *s, struct node *parent, int level)
{
    volatile uint64_t pad[8];
    struct node *volatile n = node_new(&s->rng, LJ_OWNER, 0, (uint64_t)level,
                                       xorshift(&s->rng) % 8, "longjmp");
    set_ref(n, 0, parent);
    s->nodes++;
    pad[level % 8] = (uint64_t)level;
    if (level == s->depth) {
        if (xorshift(&s->rng) % 4 == 0) {
            lull_collect(xorshift(&s->rng) % 2 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
            s->collections++;
        }
        verify_lj_chain(n, s->depth, "longjmp (bottom of the recursion)");
        if (xorshift(&s->rng) % 3 == 0)
            s->keep[0] = n;
        longjmp(s->jb, 1);
    }
    if (level > s->depth)
        return;                   /* impossible; gives the recursion an exit */
    dive(s, n, level + 1);
    /* not reached (the bottom longjmps); also prevents a tail call */
    if (n->aux != (uint64_t)level || pad[level % 8] != (uint64_t)level)
        fail("longjmp: frame at level %d corrupt", level);
    fail("longjmp: dive returned at level %d", level);
}

static void *longjumper(void *arg)
{
    struct lj *s = arg;
    if (lull_thread_attach() != 0)
        fail("longjmp: lull_thread_attach failed");
    s->keep = calloc(1, sizeof(void *));
    if (!s->keep || lull_root_add_refs(s->keep, 1) != 0)
        fail("longjmp: registering the keep root failed");
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        s->depth = 20 + (int)(xorshift(&s->rng) % 400);
        if (setjmp(s->jb) == 0)
            dive(s, NULL, 0);
        s->jumps++;
        if (s->keep[0]) {
            verify_lj_chain(s->keep[0], s->depth, "longjmp (chain kept across the jump)");
            s->keep[0] = NULL;
            s->kept++;
        }
    }
    lull_root_remove(s->keep);
    free(s->keep);
    lull_thread_detach();
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* attach / detach churn                                                   */
/* ---------------------------------------------------------------------- */

struct churn {
    uint64_t rng;
    unsigned long cycles, threads, published;
};

static void churn_once(uint64_t *rng, unsigned long *published, const char *who)
{
    struct node *volatile c = build_chain(rng, CHURN_OWNER, 1 + (int)(xorshift(rng) % CHAIN_MAX), who);
    if (xorshift(rng) % 4 == 0)
        lull_collect(LULL_GEN_NURSERY);
    verify_chain(c, who);
    if (xorshift(rng) % 2 == 0) {
        exch_put(rng, c);
        (*published)++;
    }
}

static void *short_lived(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg | 1;
    unsigned long published = 0;
    if (lull_thread_attach() != 0)
        fail("short-lived thread: lull_thread_attach failed");
    churn_once(&rng, &published, "short-lived thread");
    if (rng & 2)
        lull_thread_detach();
    return NULL;                  /* otherwise it exits attached */
}

static void *churner(void *arg)
{
    struct churn *c = arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        int rc = lull_thread_attach();
        if (rc != 0)
            fail("churn: lull_thread_attach returned %d", rc);
        churn_once(&c->rng, &c->published, "attach/detach churn");
        lull_thread_detach();
        c->cycles++;
        if (c->cycles % 8 == 0) {
            pthread_t t;
            rc = pthread_create(&t, NULL, short_lived, (void *)(uintptr_t)xorshift(&c->rng));
            if (rc != 0)
                fail("churn: pthread_create failed: %s", strerror(rc));
            pthread_join(t, NULL);
            c->threads++;
        }
        sleep_us(200);
    }
    return NULL;
}

/* ---------------------------------------------------------------------- */

static atomic_ulong forced;

/* lull_set_allow_synchronous_major says whether the collector honours the
 * request: never with major=stw (doc/api.md), and the answer depends on the
 * configuration only, so it never changes during a run. */
static int allow_answer = -1;

static void set_allow(bool allow)
{
    bool r = lull_set_allow_synchronous_major(allow);
    const char *p = getenv("LULL_GC_PARAMS");
    if (r && p && strstr(p, "major=stw"))
        fail("lull_set_allow_synchronous_major(%d) returned true with major=stw", (int)allow);
    if (allow_answer >= 0 && (int)r != allow_answer)
        fail("lull_set_allow_synchronous_major returned %d, earlier %d", (int)r, allow_answer);
    allow_answer = r;
}

static void *collector(void *arg)
{
    uint64_t rng = 12345;
    (void)arg;
    if (lull_thread_attach() != 0)
        fail("collector: lull_thread_attach failed");
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t r = xorshift(&rng);
        lull_collect(r % 3 == 0 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        atomic_fetch_add(&forced, 1);
        if (r % 16 == 1)
            set_allow((r >> 8) & 1);
        sleep_us(1000 + (unsigned)(r % 2000));
    }
    set_allow(true);
    lull_thread_detach();
    return NULL;
}

static uint64_t watchdog_limit;

static void *watchdog(void *arg)
{
    (void)arg;
    while (!atomic_load(&finished)) {
        if (now_ns() > watchdog_limit)
            fail("watchdog: still running 60 s after the deadline (a thread is stuck; "
                 "collector deadlock?)");
        sleep_us(100000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    if (!(seconds > 0))
        seconds = 5.0;
    int nmut = argc > 2 ? atoi(argv[2]) : 4;
    if (nmut < 1 || nmut > NMUT)
        fail("usage: torture [seconds] [mutators 1..%d]", NMUT);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int rc = lull_init(NULL);
    if (rc != 0)
        fail("lull_init returned %d (LULL_GC_PARAMS=%s)", rc,
             getenv("LULL_GC_PARAMS") ? getenv("LULL_GC_PARAMS") : "");
    if ((rc = lull_root_add(&exch, sizeof exch)) != 0)
        fail("lull_root_add(&exch) returned %d", rc);
    exch = lull_alloc_array(&table_type, NEXCH);
    if (exch == NULL)
        fail("allocating the exchange array failed");

    uint64_t start = now_ns();
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    watchdog_limit = deadline + 60ull * 1000000000ull;
    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL) != 0)
        fail("pthread_create failed");

    static struct mut muts[NMUT];
    static struct lj lj;
    static struct churn ch;
    pthread_t tm[NMUT], tl, tch, tc;
    for (int i = 0; i < nmut; i++) {
        muts[i].idx = i;
        muts[i].rng = mix64((uint64_t)i + 99) | 1;
        snprintf(muts[i].who, sizeof muts[i].who, "mutator %d", i);
        if (pthread_create(&tm[i], NULL, mutator, &muts[i]) != 0)
            fail("pthread_create failed");
    }
    lj.rng = 0x1234567 | 1;
    ch.rng = 0x7654321 | 1;
    if (pthread_create(&tl, NULL, longjumper, &lj) != 0 ||
        pthread_create(&tch, NULL, churner, &ch) != 0 ||
        pthread_create(&tc, NULL, collector, NULL) != 0)
        fail("pthread_create failed");

    while (now_ns() < deadline)
        sleep_us(20000);
    atomic_store(&stop, 1);
    for (int i = 0; i < nmut; i++)
        pthread_join(tm[i], NULL);
    pthread_join(tl, NULL);
    pthread_join(tch, NULL);
    pthread_join(tc, NULL);

    /* Everything published is still intact, before and after a collection. */
    unsigned long chains = 0;
    for (int pass = 0; pass < 2; pass++) {
        chains = 0;
        for (int i = 0; i < NEXCH; i++) {
            struct node *c = exch->slot[i];
            if (c) {
                verify_chain(c, "exchange after the run");
                chains++;
            }
        }
        lull_collect(LULL_GEN_MAJOR);
    }

    unsigned long allocs = 0, large = 0, rewires = 0, reseeds = 0, pubs = 0, adopts = 0;
    unsigned long tables = 0, verifies = 0, reach = 0;
    for (int i = 0; i < nmut; i++) {
        if (muts[i].ops == 0 || muts[i].verifies == 0)
            fail("mutator %d made no progress (%lu ops, %lu verifications)", i, muts[i].ops,
                 muts[i].verifies);
        allocs += muts[i].allocs;
        large += muts[i].large;
        rewires += muts[i].rewires;
        reseeds += muts[i].reseeds;
        pubs += muts[i].publishes;
        adopts += muts[i].adopts;
        tables += muts[i].tables;
        verifies += muts[i].verifies;
        if (muts[i].max_reach > reach)
            reach = muts[i].max_reach;
    }
    if (lj.jumps == 0)
        fail("the longjmp thread made no progress");
    if (ch.cycles == 0)
        fail("the attach/detach thread made no progress");
    if (atomic_load(&forced) == 0)
        fail("the collector thread forced no collection");

    lull_stats s;
    lull_get_stats(&s);
    if (s.collections_minor + s.collections_major == 0 || s.pauses == 0)
        fail("lull_get_stats counts no collections or pauses after %lu forced collections",
             atomic_load(&forced));
    if (s.bytes_allocated == 0)
        fail("lull_get_stats: bytes_allocated is 0");
    printf("torture: OK %.1f s [%s]: %" PRIu64 " nodes (%lu private, %lu large), %lu rewires, "
           "%lu reseeds, %lu tables, %lu chains published (%lu adopted, %lu in exchange), "
           "%lu full verifications (up to %lu nodes), %lu longjmps (%lu kept, %lu nodes), "
           "%lu attach cycles, %lu short-lived threads, %lu forced collections | lull: minor %" PRIu64
           " major %" PRIu64 " sync %" PRIu64 " pauses %" PRIu64 " p50/p95/p99/max %.3f/%.3f/%.3f/%.3f ms, "
           "allocated %" PRIu64 " MB, heap %" PRIu64 " MB, live after major %" PRIu64 " MB\n",
           (double)(now_ns() - start) / 1e9,
           getenv("LULL_GC_PARAMS") ? getenv("LULL_GC_PARAMS") : "defaults",
           atomic_load(&next_id) - 1, allocs, large, rewires, reseeds, tables,
           pubs + ch.published, adopts, chains, verifies, reach, lj.jumps, lj.kept, lj.nodes,
           ch.cycles, ch.threads, atomic_load(&forced), s.collections_minor, s.collections_major,
           s.collections_major_sync, s.pauses, s.pause_p50_ns / 1e6, s.pause_p95_ns / 1e6,
           s.pause_p99_ns / 1e6, s.pause_max_ns / 1e6, s.bytes_allocated >> 20,
           s.heap_bytes >> 20, s.live_bytes_after_major >> 20);

    atomic_store(&finished, 1);
    pthread_join(wd, NULL);
    lull_root_remove(&exch);
    lull_shutdown();
    return 0;
}
