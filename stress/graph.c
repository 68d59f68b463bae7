/*
 * stress/graph.c — a multi-threaded graph torture test for lull.
 *
 *   stress_graph [--seconds N] [--seed S] [--threads T] [--default-seconds N] [-v]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 *
 * Mutator threads build subgraphs of checksummed nodes, publish them in a
 * shared table (a precise root), link to each other's nodes, rewire, drop and
 * verify. One more thread forces nursery and major collections at random, and
 * the main thread verifies everything reachable from the shared table and the
 * threads' pools once a second. The first inconsistency ends the process with
 * exit status 1 and one line naming the object, the field, the expected and
 * the found value.
 *
 * What is checked. Every object carries an id (tag, owner, kind, serial)
 * and data derived from it (payload words, array length). Every reference
 * slot has a parallel pointer-free word holding the id the slot should point
 * to. A live object that the collector freed, moved without updating a slot,
 * or let be overwritten shows up as a wrong id, a wrong payload word or a
 * wrong type.
 *
 * Why it is race-free (ThreadSanitizer-clean). An object's id, length and
 * payload are written before it is published and never again: publication is
 * always a release store (lull_store into a heap object, or an atomic store
 * into the table) and every load of a reference is an acquire load, so a
 * reader sees the initialised contents. The mutable fields of an object (its
 * references and their expected ids) are written only by the object's owner
 * thread, with the owner's lock held; a verifier takes that lock around
 * reading one object's slots and expected ids, so each (slot, expected id)
 * pair it sees is consistent. No thread ever holds two of these locks, nor
 * allocates while holding one.
 * Everything a walk is about to visit sits in a heap array referenced from
 * the walker's stack, so it stays alive even if it is unlinked meanwhile.
 */
#include <lull.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Object layouts                                                           */
/* ------------------------------------------------------------------------ */

#define NREF 4
#define MAX_THREADS 64
#define TABLE_SLOTS 4096
#define POOL_SLOTS 1024              /* 8 KiB + header: a large object */

/* id = tag:8 | owner:8 | kind:4 | serial:44 */
#define ID_TAG 0xa7u
enum kind { K_NODE = 1, K_REFARR = 2, K_PFARR = 3 };

static uint64_t make_id(unsigned owner, enum kind k, uint64_t serial)
{
    return (uint64_t)ID_TAG << 56 | (uint64_t)owner << 48 | (uint64_t)k << 44 | serial;
}
static unsigned id_tag(uint64_t id) { return (unsigned)(id >> 56); }
static unsigned id_owner(uint64_t id) { return (unsigned)(id >> 48) & 0xff; }
static unsigned id_kind(uint64_t id) { return (unsigned)(id >> 44) & 0xf; }

/* A node is an array whose elements are pointer-free payload words, so node
 * sizes range from 112 bytes to large objects with references. */
struct node {
    lull_array_header a;
    uint64_t id;
    uint64_t sum;                    /* mix(id, length) */
    struct node *ref[NREF];          /* mutable (owner, under lock) */
    void *arr;                       /* struct refarr / struct pfarr; mutable */
    uint64_t expect[NREF];           /* ids ref[] should point to; 0: NULL */
    uint64_t arr_expect;
    uint64_t payload[];              /* payload[i] == payload_word(id, i) */
};

/* An array of (reference, expected id) pairs. */
struct rslot {
    struct node *ref;
    uint64_t expect;
};
struct refarr {
    lull_array_header a;
    uint64_t id;
    uint64_t sum;
    struct rslot e[];                /* mutable (owner, under lock) */
};

/* A pointer-free array. */
struct pfarr {
    lull_array_header a;
    uint64_t id;
    uint64_t sum;
    uint64_t data[];                 /* data[i] == payload_word(id, i) */
};

/* Every object kind has its id in word 2. */
struct any_obj {
    lull_array_header a;
    uint64_t id;
};

#define NODE_REFS (LULL_REF(struct node, ref[0]) | LULL_REF(struct node, ref[1]) | \
                   LULL_REF(struct node, ref[2]) | LULL_REF(struct node, ref[3]) | \
                   LULL_REF(struct node, arr))

static const lull_type node_type = {
    .name = "stress.node", .size = sizeof(struct node), .refs = NODE_REFS,
    .elem_size = sizeof(uint64_t),
};

/* The same layout described by a trace function instead of bitmaps. */
static void trace_node(void *obj, lull_visit_fn visit, void *ctx)
{
    struct node *n = obj;
    for (int i = 0; i < NREF; i++)
        visit((void **)&n->ref[i], ctx);
    visit(&n->arr, ctx);
}
static const lull_type tnode_type = {
    .name = "stress.tnode", .size = sizeof(struct node),
    .elem_size = sizeof(uint64_t), .trace = trace_node,
};

static const lull_type refarr_type = {
    .name = "stress.refarr", .size = sizeof(struct refarr),
    .elem_size = sizeof(struct rslot), .elem_refs = 1,
};
static const lull_type pfarr_type = {
    .name = "stress.pfarr", .size = sizeof(struct pfarr), .elem_size = sizeof(uint64_t),
};
/* Plain reference arrays: the threads' pools and the walkers' stacks. */
static const lull_type refs_type = {
    .name = "stress.refs", .size = sizeof(lull_array_header),
    .elem_size = sizeof(void *), .elem_refs = 1,
};
struct refs {
    lull_array_header a;
    void *item[];
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}
static uint64_t payload_word(uint64_t id, size_t i) { return mix64(id * 31 + i + 1); }
static uint64_t header_sum(uint64_t id, size_t len) { return mix64(id ^ (len * 0x9e3779b97f4a7c15ull)); }

/* ------------------------------------------------------------------------ */
/* Shared state                                                             */
/* ------------------------------------------------------------------------ */

static unsigned nthreads = 3;
static uint64_t seed = 1;
static int verbose;
static int stop;                                 /* atomic */

/* Random cross links make the reachable graph grow without bound: every new
 * node can keep old ones alive. The main thread counts the reachable nodes at
 * each full verification and, past PRUNE_HIGH, sets `prune` until the count
 * falls under PRUNE_LOW. Meanwhile mutators link only to fresh nodes or NULL
 * and sweep through their table slots and pool clearing one of each per
 * operation: one old root left would keep most of the old graph alive. */
#define PRUNE_HIGH 150000
#define PRUNE_LOW 90000
static int prune;                                /* atomic */
static int failed;                               /* atomic: first failure wins */

/* The shared table: a precise root. Slot i belongs to thread i % nthreads,
 * which writes it (and table_expect[i]) with its lock held. */
static void **table;
static uint64_t *table_expect;

/* One lock per owner thread: a test-and-set lock that waits in
 * nanosleep. Not a pthread mutex: ThreadSanitizer defers signals while a
 * thread is blocked in pthread_mutex_lock, so a thread waiting for the lock
 * of a thread the collector has already stopped would never answer the
 * stop signal, and the collection would wait forever. */
static int owner_lock[MAX_THREADS];

struct mutator {
    unsigned idx;
    pthread_t thread;
    uint64_t rng;
    uint64_t serial;
    struct refs *pool;               /* own nodes; precise root; private */
    uint64_t ops, created, verified;
    size_t prune_cursor;
};
static struct mutator muts[MAX_THREADS];

static void fail(const char *fmt, ...)
{
    if (__atomic_exchange_n(&failed, 1, __ATOMIC_ACQ_REL)) {
        for (;;)
            pause();                 /* another thread is reporting */
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "stress_graph: FAIL (seed %" PRIu64 ", %u threads): %s\n", seed, nthreads, buf);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

static void lock_owner(unsigned owner)
{
    for (unsigned spins = 0; __atomic_exchange_n(&owner_lock[owner], 1, __ATOMIC_ACQUIRE); spins++) {
        if (spins < 16) {
            sched_yield();
        } else {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
        }
    }
}
static void unlock_owner(unsigned owner) { __atomic_store_n(&owner_lock[owner], 0, __ATOMIC_RELEASE); }

static void *load_ref(void *slot) { return __atomic_load_n((void **)slot, __ATOMIC_ACQUIRE); }
static uint64_t load_u64(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

static uint64_t rnd(struct mutator *m)      /* xorshift64* */
{
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * 0x2545f4914f6cdd1dull;
}
static size_t rnd_below(struct mutator *m, size_t n) { return (size_t)((rnd(m) >> 11) % n); }
static size_t rnd_range(struct mutator *m, size_t lo, size_t hi) { return lo + rnd_below(m, hi - lo + 1); }
static int chance(struct mutator *m, unsigned percent) { return rnd_below(m, 100) < percent; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *check_alloc(void *p, const char *what)
{
    if (!p)
        fail("allocating %s: %s", what, strerror(errno));
    return p;
}

/* ------------------------------------------------------------------------ */
/* Checking one object                                                      */
/* ------------------------------------------------------------------------ */

static const char *kind_name(unsigned k)
{
    return k == K_NODE ? "node" : k == K_REFARR ? "refarr" : k == K_PFARR ? "pfarr" : "?";
}

/* `target` was found in field `field`[idx] of the object with id `where`
 * (0: of a root) where `expect` was recorded. Check the id it carries. */
static void check_target(uint64_t where, const char *field, size_t idx, void *target, uint64_t expect)
{
    if (target && ((struct any_obj *)target)->id == expect)
        return;
    if (!target && !expect)
        return;
    char loc[96];
    if (where)
        snprintf(loc, sizeof loc, "object 0x%" PRIx64 " field %s[%zu]", where, field, idx);
    else
        snprintf(loc, sizeof loc, "root %s[%zu]", field, idx);
    if (!target)
        fail("%s: expected id 0x%" PRIx64 ", found NULL", loc, expect);
    uint64_t found = ((struct any_obj *)target)->id;
    if (!expect)
        fail("%s: expected NULL, found %p with id 0x%" PRIx64, loc, target, found);
    fail("%s: expected id 0x%" PRIx64 ", found id 0x%" PRIx64 " (object %p)", loc, expect, found, target);
}

/* The immutable part of an object: tag, owner, type, length, data. */
static void check_object(void *obj)
{
    struct any_obj *o = obj;
    uint64_t id = o->id;
    unsigned k = id_kind(id);
    if (id_tag(id) != ID_TAG || id_owner(id) >= nthreads || k < K_NODE || k > K_PFARR)
        fail("object %p: malformed id 0x%" PRIx64, obj, id);
    const lull_type *t = lull_type_of(obj);
    int type_ok = k == K_NODE ? (t == &node_type || t == &tnode_type)
                : k == K_REFARR ? t == &refarr_type : t == &pfarr_type;
    if (!type_ok)
        fail("object 0x%" PRIx64 " (%s, %p): type is %s (%p)", id, kind_name(k), obj,
             t && t->name ? t->name : "?", (const void *)t);
    size_t len = o->a.length;
    if (lull_array_length(obj) != len)
        fail("object 0x%" PRIx64 " field length: header says %zu, lull_array_length says %zu",
             id, len, lull_array_length(obj));
    uint64_t sum = k == K_NODE ? ((struct node *)obj)->sum
                 : k == K_REFARR ? ((struct refarr *)obj)->sum : ((struct pfarr *)obj)->sum;
    if (sum != header_sum(id, len))
        fail("object 0x%" PRIx64 " field sum: expected 0x%" PRIx64 ", found 0x%" PRIx64 " (length %zu)",
             id, header_sum(id, len), sum, len);
    const uint64_t *data = k == K_NODE ? ((struct node *)obj)->payload
                         : k == K_PFARR ? ((struct pfarr *)obj)->data : NULL;
    for (size_t i = 0; data && i < len; i++)
        if (data[i] != payload_word(id, i))
            fail("object 0x%" PRIx64 " field %s[%zu]: expected 0x%" PRIx64 ", found 0x%" PRIx64,
                 id, k == K_NODE ? "payload" : "data", i, payload_word(id, i), data[i]);
}

/* ------------------------------------------------------------------------ */
/* Walking: everything reachable from some roots                            */
/* ------------------------------------------------------------------------ */

/* The stack is a heap array referenced from the walker's C stack, so the
 * nodes on it stay alive; the visited set only compares addresses. */
struct walk {
    struct refs *stack;
    size_t top;
    uintptr_t *seen;
    size_t seen_cap, seen_n;
    uint64_t nodes, arrays;
    int governs;                     /* the main thread's full walk sets `prune` */
};

static void walk_init(struct walk *w)
{
    memset(w, 0, sizeof *w);
    w->stack = check_alloc(lull_alloc_array(&refs_type, 256), "walk stack");
    w->seen_cap = 1024;
    w->seen = calloc(w->seen_cap, sizeof *w->seen);
    if (!w->seen)
        fail("out of memory (malloc)");
}

static void walk_reset(struct walk *w)
{
    while (w->top)
        lull_store(w->stack, &w->stack->item[--w->top], NULL);
    free(w->seen);
    if (w->seen_cap > 1 << 16)
        w->seen_cap = 1024;
    w->seen = calloc(w->seen_cap, sizeof *w->seen);
    if (!w->seen)
        fail("out of memory (malloc)");
    w->seen_n = 0;
}

static void walk_free(struct walk *w)
{
    free(w->seen);
    w->seen = NULL;
    w->stack = NULL;
}

/* Room for `extra` more entries, allocated before any lock is taken. */
static void walk_reserve(struct walk *w, size_t extra)
{
    size_t cap = w->stack->a.length;
    if (w->top + extra <= cap)
        return;
    size_t ncap = cap * 2 > w->top + extra ? cap * 2 : w->top + extra;
    struct refs *s = check_alloc(lull_alloc_array(&refs_type, ncap), "walk stack");
    for (size_t i = 0; i < w->top; i++)
        lull_store(s, &s->item[i], w->stack->item[i]);
    w->stack = s;
}

static void walk_push(struct walk *w, void *obj)
{
    lull_store(w->stack, &w->stack->item[w->top++], obj);
}

/* Returns 1 if `p` was not seen before. */
static int seen_insert(struct walk *w, const void *p)
{
    if (w->seen_n * 2 >= w->seen_cap) {
        size_t ncap = w->seen_cap * 2;
        uintptr_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            fail("out of memory (malloc)");
        for (size_t i = 0; i < w->seen_cap; i++)
            if (w->seen[i]) {
                size_t j = mix64(w->seen[i]) & (ncap - 1);
                while (ns[j])
                    j = (j + 1) & (ncap - 1);
                ns[j] = w->seen[i];
            }
        free(w->seen);
        w->seen = ns;
        w->seen_cap = ncap;
    }
    uintptr_t key = (uintptr_t)p;
    size_t j = mix64(key) & (w->seen_cap - 1);
    while (w->seen[j]) {
        if (w->seen[j] == key)
            return 0;
        j = (j + 1) & (w->seen_cap - 1);
    }
    w->seen[j] = key;
    w->seen_n++;
    return 1;
}

/* A root slot read by the walker: check it and queue its target. */
static void walk_root(struct walk *w, const char *field, size_t idx, void *target, uint64_t expect)
{
    check_target(0, field, idx, target, expect);
    if (target) {
        walk_reserve(w, 1);
        walk_push(w, target);
    }
}

/* Check an array hanging off a node; queue the nodes a refarr points to. */
static void walk_array(struct walk *w, void *arr)
{
    if (!seen_insert(w, arr))
        return;
    check_object(arr);
    w->arrays++;
    uint64_t id = ((struct any_obj *)arr)->id;
    if (id_kind(id) != K_REFARR)
        return;
    struct refarr *ra = arr;
    size_t len = ra->a.length;
    walk_reserve(w, len);
    lock_owner(id_owner(id));
    for (size_t i = 0; i < len; i++) {
        struct node *t = load_ref(&ra->e[i].ref);
        uint64_t expect = load_u64(&ra->e[i].expect);
        check_target(id, "elem", i, t, expect);
        if (t)
            walk_push(w, t);
    }
    unlock_owner(id_owner(id));
}

/* Visit queued objects until the stack is empty or `limit` nodes were seen. */
static void walk_run(struct walk *w, uint64_t limit)
{
    while (w->top && w->nodes < limit) {
        void *obj = w->stack->item[--w->top];
        lull_store(w->stack, &w->stack->item[w->top], NULL);
        uint64_t id = ((struct any_obj *)obj)->id;
        if (id_kind(id) != K_NODE || id_tag(id) != ID_TAG) {
            check_object(obj);       /* reports malformed ids */
            fail("object 0x%" PRIx64 " (%p): a %s where a node was expected", id, obj,
                 kind_name(id_kind(id)));
        }
        if (!seen_insert(w, obj))
            continue;
        check_object(obj);
        if (++w->nodes == PRUNE_HIGH && w->governs)
            __atomic_store_n(&prune, 1, __ATOMIC_RELAXED);

        struct node *n = obj, *ref[NREF];
        uint64_t expect[NREF], arr_expect;
        void *arr;
        unsigned owner = id_owner(id);
        lock_owner(owner);
        for (int i = 0; i < NREF; i++) {
            ref[i] = load_ref(&n->ref[i]);
            expect[i] = load_u64(&n->expect[i]);
        }
        arr = load_ref(&n->arr);
        arr_expect = load_u64(&n->arr_expect);
        unlock_owner(owner);

        walk_reserve(w, NREF);
        for (int i = 0; i < NREF; i++) {
            check_target(id, "ref", (size_t)i, ref[i], expect[i]);
            if (ref[i])
                walk_push(w, ref[i]);
        }
        check_target(id, "arr", 0, arr, arr_expect);
        if (arr)
            walk_array(w, arr);
    }
}

/* Everything reachable from the table and the pools. */
static void verify_all(struct walk *w)
{
    walk_reset(w);
    w->nodes = w->arrays = 0;
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        unsigned owner = (unsigned)(i % nthreads);
        lock_owner(owner);
        void *t = load_ref(&table[i]);
        uint64_t e = load_u64(&table_expect[i]);
        unlock_owner(owner);
        walk_root(w, "table", i, t, e);
    }
    for (unsigned t = 0; t < nthreads; t++) {
        struct refs *pool = muts[t].pool;
        walk_reserve(w, POOL_SLOTS);
        for (size_t i = 0; i < POOL_SLOTS; i++) {
            void *n = load_ref(&pool->item[i]);
            if (n) {
                if (id_owner(((struct any_obj *)n)->id) != t || id_kind(((struct any_obj *)n)->id) != K_NODE)
                    fail("pool of thread %u slot %zu: object %p has id 0x%" PRIx64, t, i, n,
                         ((struct any_obj *)n)->id);
                walk_push(w, n);
            }
        }
    }
    walk_run(w, UINT64_MAX);
}

/* verify_all by a walk that no collection ran during. The walk's own
 * allocations (its stack) may start a minor, which moves the nursery's
 * nodes: one the walk visited before it, reached again afterwards through
 * another referrer at its new address, was counted twice, and the
 * quiescent check then failed with one node fewer after the final
 * collections than before (seen once under ThreadSanitizer; forcing a
 * minor in the middle of the walk reproduces it). */
static void verify_still(struct walk *w)
{
    for (;;) {
        lull_stats a, b;
        lull_get_stats(&a);
        verify_all(w);
        lull_get_stats(&b);
        if (a.collections_minor == b.collections_minor && a.collections_major == b.collections_major)
            return;
    }
}

/* ------------------------------------------------------------------------ */
/* Mutators                                                                 */
/* ------------------------------------------------------------------------ */

static uint64_t id_of(void *obj) { return obj ? ((struct any_obj *)obj)->id : 0; }

/* Store a reference and its expected id into one of m's own objects. */
static void set_ref(struct mutator *m, void *obj, void *slot, uint64_t *expect_slot, void *value)
{
    lock_owner(m->idx);
    lull_store(obj, slot, value);
    store_u64(expect_slot, id_of(value));
    unlock_owner(m->idx);
}

static void table_set(struct mutator *m, size_t slot, void *value)
{
    lock_owner(m->idx);
    /* The table lies outside the heap: an atomic release store, like
     * lull_store's, publishes the target's contents to acquire loads. */
    __atomic_store_n(&table[slot], value, __ATOMIC_RELEASE);
    store_u64(&table_expect[slot], id_of(value));
    unlock_owner(m->idx);
}

/* Our table slots are idx, idx + nthreads, ...: the n-th of them. */
static size_t own_slot(struct mutator *m, size_t n)
{
    size_t count = (TABLE_SLOTS - m->idx + nthreads - 1) / nthreads;
    return m->idx + n % count * nthreads;
}

static size_t own_table_slot(struct mutator *m) { return own_slot(m, rnd(m) >> 11); }

static struct node *new_node(struct mutator *m)
{
    size_t len;
    unsigned r = (unsigned)rnd_below(m, 1000);
    if (r < 800)
        len = rnd_range(m, 0, 6);
    else if (r < 950)
        len = rnd_range(m, 7, 64);
    else if (r < 990)
        len = rnd_range(m, 65, 900);
    else
        len = rnd_range(m, 1100, 2500);      /* > 8 KiB: a large object with references */
    const lull_type *t = chance(m, 5) ? &tnode_type : &node_type;
    struct node *n = check_alloc(lull_alloc_array(t, len), "node");
    uint64_t id = make_id(m->idx, K_NODE, ++m->serial);
    if (n->a.length != len)
        fail("new node %p: length %zu, asked for %zu", (void *)n, n->a.length, len);
    for (int i = 0; i < NREF; i++)
        if (n->ref[i] || n->expect[i])
            fail("new node %p: not zeroed (ref[%d])", (void *)n, i);
    n->id = id;
    n->sum = header_sum(id, len);
    for (size_t i = 0; i < len; i++)
        n->payload[i] = payload_word(id, i);
    m->created++;
    return n;
}

static struct pfarr *new_pfarr(struct mutator *m)
{
    size_t len = chance(m, 10) ? rnd_range(m, 1100, 8000) : rnd_range(m, 0, 64);
    struct pfarr *a = check_alloc(lull_alloc_array(&pfarr_type, len), "pfarr");
    uint64_t id = make_id(m->idx, K_PFARR, ++m->serial);
    a->id = id;
    a->sum = header_sum(id, len);
    for (size_t i = 0; i < len; i++)
        a->data[i] = payload_word(id, i);
    m->created++;
    return a;
}

static struct node *pick_any(struct mutator *m);
static struct node *pick_own(struct mutator *m);

static int pruning(void) { return __atomic_load_n(&prune, __ATOMIC_RELAXED); }

static struct node *pick_target(struct mutator *m)
{
    unsigned r = (unsigned)rnd_below(m, 100);
    if (pruning())
        return r < 20 ? new_node(m) : NULL;
    if (r < 40)
        return pick_any(m);
    if (r < 60)
        return pick_own(m);
    if (r < 70)
        return new_node(m);
    return NULL;
}

static struct refarr *new_refarr(struct mutator *m)
{
    size_t len = chance(m, 20) ? rnd_range(m, 600, 2500) : rnd_range(m, 1, 32);
    struct refarr *a = check_alloc(lull_alloc_array(&refarr_type, len), "refarr");
    uint64_t id = make_id(m->idx, K_REFARR, ++m->serial);
    a->id = id;
    a->sum = header_sum(id, len);
    m->created++;
    for (size_t i = 0; i < len; i++)
        if (chance(m, 60)) {
            struct node *t = pick_target(m);
            set_ref(m, a, &a->e[i].ref, &a->e[i].expect, t);
        }
    return a;
}

/* A random node reachable from the shared table: may belong to anyone. */
static struct node *pick_any(struct mutator *m)
{
    struct node *n = load_ref(&table[rnd_below(m, TABLE_SLOTS)]);
    for (size_t steps = rnd_below(m, 4); n && steps; steps--) {
        struct node *next = load_ref(&n->ref[rnd_below(m, NREF)]);
        if (!next)
            break;
        n = next;
    }
    return n;
}

static struct node *pick_own(struct mutator *m)
{
    return load_ref(&m->pool->item[rnd_below(m, POOL_SLOTS)]);
}

static void pool_put(struct mutator *m, struct node *n)
{
    lull_store(m->pool, &m->pool->item[rnd_below(m, POOL_SLOTS)], n);
}

static void *new_array(struct mutator *m)
{
    return chance(m, 50) ? (void *)new_pfarr(m) : (void *)new_refarr(m);
}

/* Build a subgraph of fresh nodes, link it to itself and to others' nodes,
 * publish it in one of our table slots. */
static void op_build(struct mutator *m)
{
    struct node *nodes[16] = { 0 };
    size_t k = rnd_range(m, 1, 16);
    for (size_t i = 0; i < k; i++)
        nodes[i] = new_node(m);
    int external = !pruning();
    for (size_t i = 0; i < k; i++) {
        for (int r = 0; r < NREF; r++) {
            unsigned c = (unsigned)rnd_below(m, 100);
            if (!external && c >= 45)
                c = 99;
            struct node *t = c < 45 ? nodes[rnd_below(m, k)] : c < 65 ? pick_any(m)
                           : c < 75 ? pick_own(m) : NULL;
            if (t)
                set_ref(m, nodes[i], &nodes[i]->ref[r], &nodes[i]->expect[r], t);
        }
        if (chance(m, 8)) {
            void *a = new_array(m);
            set_ref(m, nodes[i], &nodes[i]->arr, &nodes[i]->arr_expect, a);
        } else if (chance(m, 3) && external) {
            struct node *o = pick_any(m);
            void *a = o ? load_ref(&o->arr) : NULL;
            set_ref(m, nodes[i], &nodes[i]->arr, &nodes[i]->arr_expect, a);
        }
    }
    table_set(m, own_table_slot(m), nodes[0]);
    for (size_t i = 0; i < k; i++)
        if (chance(m, 30))
            pool_put(m, nodes[i]);
}

/* Change one reference of one of our nodes (or of one of our ref arrays). */
static void op_rewire(struct mutator *m)
{
    struct node *n = pick_own(m);
    if (!n)
        return;
    unsigned c = (unsigned)rnd_below(m, 100);
    if (c < 70) {
        int r = (int)rnd_below(m, NREF);
        struct node *t = pick_target(m);
        set_ref(m, n, &n->ref[r], &n->expect[r], t);
    } else if (c < 85) {
        void *a = chance(m, 50) ? new_array(m) : NULL;
        set_ref(m, n, &n->arr, &n->arr_expect, a);
    } else {
        struct refarr *a = load_ref(&n->arr);
        if (!a || a->id == 0 || id_kind(a->id) != K_REFARR || id_owner(a->id) != m->idx ||
            a->a.length == 0)
            return;
        for (size_t j = rnd_range(m, 1, 8); j; j--) {
            size_t i = rnd_below(m, a->a.length);
            struct node *t = pick_target(m);
            set_ref(m, a, &a->e[i].ref, &a->e[i].expect, t);
        }
    }
}

static void op_drop(struct mutator *m)
{
    if (chance(m, 50))
        table_set(m, own_table_slot(m), NULL);
    else
        lull_store(m->pool, &m->pool->item[rnd_below(m, POOL_SLOTS)], NULL);
}

/* Short-lived garbage: a chain of fresh nodes, checked right away. */
static void op_churn(struct mutator *m, struct walk *w)
{
    struct node *head = NULL;
    for (size_t i = rnd_range(m, 20, 200); i; i--) {
        struct node *n = new_node(m);
        set_ref(m, n, &n->ref[0], &n->expect[0], head);
        if (chance(m, 10)) {
            void *a = new_pfarr(m);
            set_ref(m, n, &n->arr, &n->arr_expect, a);
        }
        head = n;
    }
    walk_reset(w);
    w->nodes = 0;
    walk_root(w, "churn", 0, head, head->id);
    walk_run(w, UINT64_MAX);
    m->verified += w->nodes;
}

/* A bounded walk from a random table slot. */
static void op_verify(struct mutator *m, struct walk *w)
{
    size_t slot = rnd_below(m, TABLE_SLOTS);
    unsigned owner = (unsigned)(slot % nthreads);
    lock_owner(owner);
    void *t = load_ref(&table[slot]);
    uint64_t e = load_u64(&table_expect[slot]);
    unlock_owner(owner);
    walk_reset(w);
    w->nodes = 0;
    walk_root(w, "table", slot, t, e);
    walk_run(w, 300);
    m->verified += w->nodes;
}

/* While pruning: clear the next of our table slots and pool entries. */
static void prune_step(struct mutator *m)
{
    size_t i = m->prune_cursor++;
    table_set(m, own_slot(m, i), NULL);
    lull_store(m->pool, &m->pool->item[i % POOL_SLOTS], NULL);
}

static void *mutator_main(void *arg)
{
    struct mutator *m = arg;
    if (lull_thread_attach() != 0)
        fail("thread %u: lull_thread_attach failed", m->idx);
    struct walk w;
    walk_init(&w);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        unsigned c = (unsigned)rnd_below(m, 100);
        if (c < 30)
            op_build(m);
        else if (c < 55)
            op_rewire(m);
        else if (c < 70)
            op_verify(m, &w);
        else if (c < 82)
            op_drop(m);
        else if (c < 90)
            op_churn(m, &w);
        else {
            struct node *n = pick_own(m);
            if (n) {
                void *a = new_array(m);
                set_ref(m, n, &n->arr, &n->arr_expect, a);
            }
        }
        if (pruning())
            prune_step(m);
        m->ops++;
    }
    walk_free(&w);
    lull_thread_detach();
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The collecting thread                                                    */
/* ------------------------------------------------------------------------ */

static uint64_t forced_minor, forced_major;

static void *collector_main(void *arg)
{
    struct mutator rng = { .rng = mix64(seed ^ 0xc011ec7ull) | 1 };
    (void)arg;
    if (lull_thread_attach() != 0)
        fail("collector thread: lull_thread_attach failed");
    double last = 0;                 /* duration of the last forced collection */
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        /* Up to 20 ms, plus twice the last collection's time so that slow
         * (debug, sanitized) collections do not starve the mutators. */
        double nap = rnd_below(&rng, 20) * 1e-3 + 2 * last;
        struct timespec ts = { (time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9) };
        nanosleep(&ts, NULL);
        double t = now_s();
        if (chance(&rng, 65)) {
            lull_collect(LULL_GEN_NURSERY);
            forced_minor++;
        } else {
            lull_collect(LULL_GEN_MAJOR);
            forced_major++;
        }
        last = now_s() - t;
        if (last > 0.5)
            last = 0.5;
    }
    lull_thread_detach();
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr, "usage: stress_graph [--seconds N] [--seed S] [--threads T] [--default-seconds N] [-v]\n"
                    "  seconds: --seconds, else $LULL_STRESS_SECONDS, else --default-seconds (10)\n");
    exit(2);
}

static double parse_num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(s ? s : "", &end);
    if (!s || *s == 0 || *end != 0 || errno || v < 0) {
        fprintf(stderr, "stress_graph: bad %s '%s'\n", what, s ? s : "");
        usage();
    }
    return v;
}

int main(int argc, char **argv)
{
    double seconds = -1, default_seconds = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seconds"))
            seconds = parse_num(v, "--seconds"), i++;
        else if (!strcmp(a, "--default-seconds"))
            default_seconds = parse_num(v, "--default-seconds"), i++;
        else if (!strcmp(a, "--seed"))
            seed = (uint64_t)parse_num(v, "--seed"), i++;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v"))
            verbose = 1;
        else if (!strcmp(a, "--threads"))
            nthreads = (unsigned)parse_num(v, "--threads"), i++;
        else
            usage();
    }
    if (seconds < 0) {
        const char *env = getenv("LULL_STRESS_SECONDS");
        seconds = env && *env ? parse_num(env, "LULL_STRESS_SECONDS") : default_seconds;
    }
    if (nthreads < 1 || nthreads > MAX_THREADS)
        usage();

    const char *params = getenv("LULL_GC_PARAMS"), *debug = getenv("LULL_GC_DEBUG");
    printf("stress_graph: seed %" PRIu64 ", %u mutator threads, %.1f s, LULL_GC_PARAMS='%s' "
           "LULL_GC_DEBUG='%s'\n", seed, nthreads, seconds, params ? params : "", debug ? debug : "");
    fflush(stdout);

    int rc = lull_init(NULL);
    if (rc != 0) {
        fprintf(stderr, "stress_graph: lull_init: %s\n", strerror(-rc));
        return 1;
    }
    table = calloc(TABLE_SLOTS, sizeof *table);
    table_expect = calloc(TABLE_SLOTS, sizeof *table_expect);
    if (!table || !table_expect)
        return 1;
    if ((rc = lull_root_add_refs(table, TABLE_SLOTS)) != 0)
        fail("lull_root_add_refs(table): %s", strerror(-rc));
    for (unsigned t = 0; t < nthreads; t++) {
        struct mutator *m = &muts[t];
        m->idx = t;
        m->rng = mix64(seed * 0x9e3779b97f4a7c15ull + t + 1) | 1;
        if ((rc = lull_root_add_refs((void **)&m->pool, 1)) != 0)
            fail("lull_root_add_refs(pool): %s", strerror(-rc));
        m->pool = check_alloc(lull_alloc_array(&refs_type, POOL_SLOTS), "pool");
    }

    double t0 = now_s();
    pthread_t collector;
    for (unsigned t = 0; t < nthreads; t++)
        if (pthread_create(&muts[t].thread, NULL, mutator_main, &muts[t]) != 0)
            fail("pthread_create failed");
    if (pthread_create(&collector, NULL, collector_main, NULL) != 0)
        fail("pthread_create failed");

    struct walk w;
    walk_init(&w);
    w.governs = 1;
    uint64_t full_verifications = 0, max_nodes = 0;
    double next_report = t0 + 1;
    while (now_s() - t0 < seconds) {
        struct timespec ts = { 0, 50 * 1000000L };
        nanosleep(&ts, NULL);
        if (now_s() >= next_report) {
            verify_all(&w);
            full_verifications++;
            if (w.nodes > max_nodes)
                max_nodes = w.nodes;
            if (w.nodes < PRUNE_LOW)
                __atomic_store_n(&prune, 0, __ATOMIC_RELAXED);
            if (verbose) {
                lull_stats st;
                lull_get_stats(&st);
                printf("stress_graph: %5.1f s: verified %" PRIu64 " nodes, %" PRIu64 " arrays%s; "
                       "heap %.1f MB, live after last major %.1f MB, %" PRIu64 " collections\n",
                       now_s() - t0, w.nodes, w.arrays, pruning() ? " (pruning)" : "", st.heap_bytes / 1e6,
                       st.live_bytes_after_major / 1e6, st.collections_minor + st.collections_major);
                fflush(stdout);
            }
            next_report = now_s() + 1;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned t = 0; t < nthreads; t++)
        pthread_join(muts[t].thread, NULL);
    pthread_join(collector, NULL);

    /* Quiescent: verify, collect everything, verify again: the same
     * graph, node for node. */
    verify_still(&w);
    uint64_t quiet_nodes = w.nodes, quiet_arrays = w.arrays;
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_NURSERY);
    verify_still(&w);
    full_verifications += 2;
    if (w.nodes != quiet_nodes || w.arrays != quiet_arrays)
        fail("quiescent: %" PRIu64 " nodes and %" PRIu64 " arrays reachable before the final collections, %" PRIu64
             " and %" PRIu64 " after", quiet_nodes, quiet_arrays, w.nodes, w.arrays);
    if (w.nodes > max_nodes)
        max_nodes = w.nodes;
    double elapsed = now_s() - t0;

    uint64_t ops = 0, created = 0, verified = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        ops += muts[t].ops;
        created += muts[t].created;
        verified += muts[t].verified;
    }
    lull_stats st;
    lull_get_stats(&st);
    /* Every check above passes on a graph that was never built, walked or
     * collected. */
    if (created == 0 || verified == 0 || max_nodes == 0 || forced_minor == 0 || forced_major == 0 ||
        st.collections_minor == 0 || st.collections_major == 0)
        fail("too little happened: %" PRIu64 " objects created, %" PRIu64 " walked by mutators, at most %" PRIu64
             " nodes reachable, %" PRIu64 "+%" PRIu64 " collections forced, %" PRIu64 " minor and %" PRIu64
             " major collections", created, verified, max_nodes, forced_minor, forced_major, st.collections_minor,
             st.collections_major);
    printf("stress_graph: OK seed %" PRIu64 " threads %u %.1f s: ops %" PRIu64 " objects %" PRIu64
           " walked %" PRIu64 " full-verifications %" PRIu64 " (last %" PRIu64 " nodes %" PRIu64
           " arrays, max %" PRIu64 " nodes) allocated %.0f MB heap %.1f MB; collections %" PRIu64
           " minor %" PRIu64 " major (%" PRIu64 "+%" PRIu64 " forced) pauses %" PRIu64
           " pause max %.0f us p99 %.0f us\n",
           seed, nthreads, elapsed, ops, created, verified, full_verifications, w.nodes, w.arrays,
           max_nodes, st.bytes_allocated / 1e6, st.heap_bytes / 1e6, st.collections_minor,
           st.collections_major, forced_minor, forced_major, st.pauses, st.pause_max_ns / 1e3,
           st.pause_p99_ns / 1e3);

    walk_free(&w);
    for (unsigned t = 0; t < nthreads; t++)
        lull_root_remove((void **)&muts[t].pool);
    lull_root_remove(table);
    lull_shutdown();
    free(table);
    free(table_expect);
    return 0;
}
