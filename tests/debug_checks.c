/*
 * debug_checks — every LULL_GC_DEBUG heap check caught in the act, and all
 * of them together passing a real workload.
 *
 * Caught in the act: for each check a child process (this program run
 * again with --child CASE MODE, so its stack holds nothing of the
 * parent's) builds a small heap and then commits the fault the check
 * exists for:
 *
 *   verify          verify-missed: a trace function that hides a reference
 *                   from the marker (a reachable object left unmarked);
 *                   verify-freed: a reference to an object already freed
 *   poison          a use after free: the freed object reads 0xa5
 *   check-cards     a reference stored into an old object without lull_store
 *   verify-nursery  the same store: after the minor the slot points into the
 *                   evacuated nursery
 *   check-cards-young-large, verify-nursery-young-large
 *                   the same store into a young large array: a minor scans
 *                   only its marked cards too
 *   clear-nursery   the same store, then the stale reference is read: the
 *                   evacuated nursery reads 0xdb
 *   check-mod-union, verify-concurrent
 *                   a reference moved, while a concurrent mark (stretched
 *                   by mark-delay) runs, from where the marker has not
 *                   looked yet into an object it has scanned, with a plain
 *                   store instead of lull_store
 *
 * Each case runs three times: with the check and the fault the child must
 * die of SIGABRT, its stderr exactly the one line the check prints (the
 * child computes it from the addresses involved and hands it over on
 * stdout; poison and clear-nursery print nothing themselves, so there the
 * line is the child's own report of the pattern it read, and the pattern
 * is what is compared); with the check and without the fault it must exit
 * 0 with nothing on stderr; and with the fault but without the check it
 * must exit 0 too, so the abort is the check's doing and nothing else's.
 *
 * The workload: lists built, rewired and verified by two threads under
 * LULL_GC_DEBUG=verify,poison,collect-every=100,check-cards,verify-nursery,
 * clear-nursery; the number of collections shows that collect-every was
 * honoured.
 */
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#define ROUNDS 40
#define NLISTS 6

struct tree {
    lull_header  h;
    struct tree *left, *right;
    uint64_t     key;
};
static const lull_type tree_type = {
    .name = "tree", .size = sizeof(struct tree),
    .refs = LULL_REF(struct tree, left) | LULL_REF(struct tree, right),
};

static struct tree *tree_build(int depth, uint64_t key)
{
    struct tree *t = lull_alloc(&tree_type);
    CHECK(t != NULL, "alloc tree failed");
    t->key = key;
    if (depth > 0) {
        struct tree *l = tree_build(depth - 1, key * 2);
        LULL_SET(t, left, l);
        struct tree *r = tree_build(depth - 1, key * 2 + 1);
        LULL_SET(t, right, r);
    }
    return t;
}

static size_t tree_check(const struct tree *t, int depth, uint64_t key)
{
    CHECK(t != NULL && t->key == key, "tree node %" PRIu64 " lost or corrupt", key);
    if (depth == 0) {
        CHECK(t->left == NULL && t->right == NULL, "tree leaf %" PRIu64 " has children", key);
        return 1;
    }
    return 1 + tree_check(t->left, depth - 1, key * 2) + tree_check(t->right, depth - 1, key * 2 + 1);
}

static void workload(uint64_t base, unsigned long *allocs)
{
    struct tnode *lists[NLISTS] = { 0 };
    size_t len[NLISTS] = { 0 };
    uint64_t first[NLISTS] = { 0 };
    struct refs *arr = lull_alloc_array(&refs_type, 64);
    CHECK(arr != NULL, "alloc failed");
    *allocs += 1;
    for (int r = 0; r < ROUNDS; r++) {
        int k = r % NLISTS;
        len[k] = 200 + (size_t)(r * 37) % 500;
        first[k] = base + (uint64_t)r * 100000;
        lists[k] = list_build(first[k], len[k]);
        *allocs += len[k];
        /* rewire: reverse twice, the list is back in order */
        lists[k] = list_reverse(list_reverse(lists[k]));
        lull_store(arr, &arr->item[r % 64], lists[(k + 1) % NLISTS]);
        struct tree *volatile t = tree_build(6, 1);
        *allocs += 127;
        CHECK(tree_check(t, 6, 1) == 127, "tree size wrong");
        for (int j = 0; j < NLISTS; j++)
            if (lists[j])
                list_verify(lists[j], first[j], len[j], "list under LULL_GC_DEBUG");
    }
    for (int i = 0; i < 64; i++)
        if (arr->item[i]) {
            const struct tnode *n = arr->item[i];
            CHECK(tnode_ok(n, n->id), "list referenced from a ref array corrupt");
        }
}

static unsigned long thread_allocs;

static void *second(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    workload(1ull << 40, &thread_allocs);
    lull_thread_detach();
    return NULL;
}

static void test_workload(void)
{
    CHECK(setenv("LULL_GC_DEBUG", "verify,poison,collect-every=100,check-cards,verify-nursery,clear-nursery", 1) == 0, "setenv failed");
    CHECK(lull_init(NULL) == 0, "lull_init with LULL_GC_DEBUG=verify,poison,collect-every=100,check-cards,verify-nursery,clear-nursery failed");
    lull_stats s0 = get_stats();

    unsigned long allocs = 0;
    workload(1, &allocs);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, second, NULL) == 0, "pthread_create failed");
    unsigned long allocs2 = 0;
    workload(1ull << 41, &allocs2);
    pthread_join(t, NULL);
    lull_collect(LULL_GEN_MAJOR);

    lull_stats s1 = get_stats();
    unsigned long total = allocs + allocs2 + thread_allocs;
    uint64_t colls = (s1.collections_minor + s1.collections_major) -
                     (s0.collections_minor + s0.collections_major);
    CHECK(colls >= total / 200, "collect-every=100: only %" PRIu64 " collections for %lu allocations",
          colls, total);
    printf("debug_checks: workload ok: %lu allocations, %" PRIu64 " collections\n", total, colls);
    lull_shutdown();
    CHECK(unsetenv("LULL_GC_DEBUG") == 0, "unsetenv failed");
}

/* ---------------------------------------------------------------------- */
/* The faults, each in a child process                                     */
/* ---------------------------------------------------------------------- */

/* An object with one reference, traced by a function that can be told to
 * hide it from the next caller: the marker then leaves its target
 * unmarked, which is the bug `verify` exists to catch. */
struct holder {
    lull_header h;
    void       *ref;
    uint64_t    pad;
};
static volatile int hide_next_trace;
static void holder_trace(void *obj, lull_visit_fn visit, void *ctx)
{
    struct holder *h = obj;
    if (hide_next_trace) {
        hide_next_trace = 0;
        return;
    }
    visit(&h->ref, ctx);
}
static const lull_type holder_type = {
    .name = "holder", .size = sizeof(struct holder), .trace = holder_trace,
};

/* A pointer-free object: a reference to a freed one is caught by `verify`
 * (the marker ignores it). And one with references whose block keeps a
 * live neighbour: the marker greys the free slot, finds no type there and
 * leaves it (it used to dereference the NULL type, SIGSEGV in mark.c
 * before verify could run). */
struct leaf {
    lull_header h;
    uint64_t    v[5];
};
static const lull_type leaf_type = { .name = "leaf", .size = sizeof(struct leaf) };

/* The child's objects. Plain globals are no roots (only registered ranges
 * are): kept here, an object is reachable only as the test says. Every use
 * of them is in a NOINLINE helper, so no caller keeps a copy in a register
 * or its frame across a collection. */
static void *volatile roots[2];          /* precise roots (registered) */
static void *volatile g_old, *volatile g_young, *volatile g_dead;

static NOINLINE void expect_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("expect: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
}

static NOINLINE void child_init(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init with LULL_GC_DEBUG='%s' failed",
          getenv("LULL_GC_DEBUG") ? getenv("LULL_GC_DEBUG") : "");
    CHECK(lull_root_add_refs((void **)roots, 2) == 0, "lull_root_add_refs failed");
}

static NOINLINE void child_done(void)
{
    roots[0] = roots[1] = NULL;
    lull_root_remove((void *)roots);
    lull_shutdown();
}

/* An old object (the major heap) in roots[0]. */
static NOINLINE void make_old(const lull_type *t)
{
    g_old = roots[0] = lull_alloc_pinned(t);
    CHECK(g_old != NULL, "lull_alloc_pinned failed");
}

/* A young node, and behind it enough young garbage that its part of the
 * nursery becomes a fragment of its own at the next minor (smaller free
 * gaps are zeroed instead of filled by clear-nursery). */
static NOINLINE void make_young(uint64_t id)
{
    g_young = tnode_new(id);
    for (int i = 0; i < 40; i++)
        (void)tnode_new(1000 + (uint64_t)i);
}

/* The fault of check-cards, verify-nursery and clear-nursery: a reference
 * stored into an old object with a plain store (no card marked). */
static NOINLINE void store_young(bool barrier)
{
    struct tnode *old = g_old;
    if (barrier)
        LULL_SET(old, next, (struct tnode *)g_young);
    else
        old->next = g_young;
}

static NOINLINE void check_old_next(uint64_t id)
{
    const struct tnode *old = g_old;
    CHECK(tnode_ok(old->next, id), "the old node's young successor was lost");
}

/* Read the young node through the old one's slot; report what a stale
 * reference reads, and abort like a program that found garbage. */
static NOINLINE void read_through_old(uint64_t id)
{
    const struct tnode *old = g_old;
    const struct tnode *y = old->next;
    if (tnode_ok(y, id))
        return;
    const uintptr_t *w = (const uintptr_t *)y;
    fprintf(stderr, "debug_checks: stale reference %p reads header %#" PRIxPTR " next %#" PRIxPTR
            " id %#" PRIxPTR " sum %#" PRIxPTR "\n", (const void *)y, w[0], w[1], w[2], w[7]);
    abort();
}

static void case_check_cards(bool fault)
{
    child_init();
    make_old(&tnode_type);
    make_young(2);
    store_young(!fault);
    expect_line("lull: check-cards: object %p (type test-node): the reference at offset %zu to "
                "nursery object %p was stored without marking its card (every store of a "
                "reference into a heap object must go through lull_store)",
                g_old, offsetof(struct tnode, next), g_young);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    if (!fault)
        check_old_next(2);
    child_done();
}

static void case_verify_nursery(bool fault)
{
    child_init();
    make_old(&tnode_type);
    make_young(3);
    store_young(!fault);
    expect_line("lull: verify-nursery: object %p type test-node: slot %p points to %p in the "
                "evacuated nursery, not to a surviving (pinned) object",
                g_old, (void *)&((struct tnode *)g_old)->next, g_young);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    if (!fault)
        check_old_next(3);
    child_done();
}

static void case_clear_nursery(bool fault)
{
    child_init();
    make_old(&tnode_type);
    make_young(4);
    store_young(!fault);
    uintptr_t db = (uintptr_t)0xdbdbdbdbdbdbdbdbull;
    expect_line("debug_checks: stale reference %p reads header %#" PRIxPTR " next %#" PRIxPTR
                " id %#" PRIxPTR " sum %#" PRIxPTR, g_young, db, db, db, db);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    read_through_old(4);
    child_done();
}

/* The same fault in a young large array (lib/heap.h): one allocated since
 * the last minor, held by a precise root. Such an array is the young
 * generation's, but a minor scans only its marked cards (nursery.c:
 * scan_young_large), so a plain store into it is lost as one into an old
 * object is. */
#define YOUNG_ARRAY_LEN  4096u      /* 32 KiB: a large object */
#define YOUNG_ARRAY_SLOT 1234u
static NOINLINE void make_young_array(void)
{
    lull_collect(LULL_GEN_NURSERY);  /* nothing young but what follows */
    g_old = roots[0] = lull_alloc_array(&refs_type, YOUNG_ARRAY_LEN);
    CHECK(g_old != NULL, "lull_alloc_array failed");
}

static NOINLINE void store_young_in_array(bool barrier)
{
    struct refs *a = g_old;
    if (barrier)
        lull_store(a, &a->item[YOUNG_ARRAY_SLOT], g_young);
    else
        a->item[YOUNG_ARRAY_SLOT] = g_young;
}

static NOINLINE void check_array_slot(uint64_t id)
{
    const struct refs *a = g_old;
    CHECK(tnode_ok(a->item[YOUNG_ARRAY_SLOT], id), "the young array's node was lost");
}

static void case_check_cards_young_large(bool fault)
{
    child_init();
    make_young_array();
    make_young(6);
    store_young_in_array(!fault);
    expect_line("lull: check-cards: object %p (type test-refs): the reference at offset %zu to "
                "nursery object %p was stored without marking its card (every store of a "
                "reference into a heap object must go through lull_store)",
                g_old, offsetof(struct refs, item) + YOUNG_ARRAY_SLOT * sizeof(void *), g_young);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    if (!fault)
        check_array_slot(6);
    child_done();
}

static void case_verify_nursery_young_large(bool fault)
{
    child_init();
    make_young_array();
    make_young(7);
    store_young_in_array(!fault);
    expect_line("lull: verify-nursery: object %p type test-refs: slot %p points to %p in the "
                "evacuated nursery, not to a surviving (pinned) object",
                g_old, (void *)&((struct refs *)g_old)->item[YOUNG_ARRAY_SLOT], g_young);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    if (!fault)
        check_array_slot(7);
    child_done();
}

/* verify-missed: the holder's reference is hidden from the marker. */
static NOINLINE void make_hidden_target(void)
{
    struct holder *h = g_old;
    struct tnode *t = lull_alloc_pinned(&tnode_type);
    CHECK(t != NULL, "lull_alloc_pinned failed");
    tnode_fill(t, 5);
    g_dead = t;
    lull_store(h, &h->ref, t);
}

static void case_verify_missed(bool fault)
{
    child_init();
    make_old(&holder_type);
    make_hidden_target();
    expect_line("lull: verify: object %p (type holder): reference at offset %zu points to %p, "
                "which is unmarked: a reachable object would be freed",
                g_old, offsetof(struct holder, ref), g_dead);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);    /* the holder's card is clean: no minor traces it */
    hide_next_trace = fault;           /* the marker's call skips the reference */
    lull_collect(LULL_GEN_MAJOR);
    CHECK(hide_next_trace == 0, "the major never traced the holder");
    child_done();
}

/* verify-freed: a reference stored after its target was freed. */
static NOINLINE void make_leaf(void)
{
    struct leaf *l = lull_alloc_pinned(&leaf_type);
    CHECK(l != NULL, "lull_alloc_pinned failed");
    g_dead = l;
}

static NOINLINE void store_leaf(void)
{
    struct holder *h = g_old;
    lull_store(h, &h->ref, (void *)g_dead);
}

/* The fault: a reference to `make`'s object stored after the object was
 * freed (without it: stored while the object lives). */
static void verify_freed_case(bool fault, void (*make)(void))
{
    child_init();
    make_old(&holder_type);
    make();
    if (!fault)
        store_leaf();                   /* stored while it lives */
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);       /* the fault: the target is freed here */
    if (fault)
        store_leaf();
    expect_line("lull: verify: object %p (type holder): reference at offset %zu holds %p, "
                "which is not the start of a heap object",
                g_old, offsetof(struct holder, ref), g_dead);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    child_done();
}

static void case_verify_freed(bool fault)
{
    verify_freed_case(fault, make_leaf);
}

/* verify-freed-refs: the same with a target that has references and a
 * live neighbour in its block (roots[1]). */
struct rleaf {
    lull_header   h;
    struct rleaf *ref;
    uint64_t      v[4];
};
static const lull_type rleaf_type = { .name = "rleaf", .size = sizeof(struct rleaf),
                                      .refs = LULL_REF(struct rleaf, ref) };

static NOINLINE void make_rleaves(void)
{
    roots[1] = lull_alloc_pinned(&rleaf_type);
    g_dead = lull_alloc_pinned(&rleaf_type);
    CHECK(roots[1] != NULL && g_dead != NULL, "lull_alloc_pinned failed");
}

static void case_verify_freed_refs(bool fault)
{
    verify_freed_case(fault, make_rleaves);
}

/* poison: an object freed while the program still uses it. */
static NOINLINE void make_victim(void)
{
    struct tnode *t = lull_alloc_pinned(&tnode_type);
    CHECK(t != NULL, "lull_alloc_pinned failed");
    tnode_fill(t, 6);
    g_dead = roots[1] = t;
}

static NOINLINE void drop_victim(void)
{
    roots[1] = NULL;
}

static NOINLINE void use_victim(void)
{
    const struct tnode *t = g_dead;
    if (tnode_ok(t, 6))
        return;
    fprintf(stderr, "debug_checks: use after free: object %p reads id %#" PRIx64 " data[0] %#" PRIx64
            " data[3] %#" PRIx64 " sum %#" PRIx64 "\n", (const void *)t, t->id, t->data[0], t->data[3],
            t->sum);
    abort();
}

static void case_poison(bool fault)
{
    child_init();
    make_old(&tnode_type);              /* a neighbour that stays alive */
    make_victim();
    uint64_t a5 = 0xa5a5a5a5a5a5a5a5ull;
    expect_line("debug_checks: use after free: object %p reads id %#" PRIx64 " data[0] %#" PRIx64
                " data[3] %#" PRIx64 " sum %#" PRIx64, g_dead, a5, a5, a5, a5);
    if (fault)
        drop_victim();
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    use_victim();
    child_done();
}

/* verify-concurrent and check-mod-union: a reference stored without
 * lull_store while a concurrent mark runs, into an object the mark has
 * finished, and removed from where the mark would still have found it.
 * roots[0] holds the box B, B holds a chain of CHAIN nodes whose last one
 * alone holds X. The marker scans B first (it greys the chain's head) and,
 * slowed by mark-delay, reaches the chain's end a second or more later;
 * 50 ms into the mark the program moves X from the chain's end into B.
 * With lull_store, B's card is marked, a minor run next moves it into the
 * union table, and the final pause rescans B; with a plain store nothing
 * tells the mark. */
struct box {
    lull_header h;
    void       *ref;
    void       *chain;
};
static const lull_type box_type = { .name = "box", .size = sizeof(struct box),
                                    .refs = LULL_REF(struct box, ref) | LULL_REF(struct box, chain) };
struct cnode {
    lull_header   h;
    struct cnode *next;
    void         *x;
};
static const lull_type cnode_type = {
    .name = "cnode", .size = sizeof(struct cnode),
    .refs = LULL_REF(struct cnode, next) | LULL_REF(struct cnode, x),
};
#define CHAIN 40000

/* Builds the heap above and prints the line the check will print (fmt
 * takes B, X, or X, X, B, then the offset): no address of the chain
 * stays in this thread's frames to be found by the conservative scan. */
static NOINLINE void make_chain(const char *fmt, bool x_first)
{
    struct box *b = lull_alloc_pinned(&box_type);
    CHECK(b != NULL, "lull_alloc_pinned failed");
    g_old = roots[0] = b;
    struct cnode *head = lull_alloc(&cnode_type), *tail = head;
    CHECK(head != NULL, "alloc failed");
    lull_store(b, &b->chain, head);
    for (int i = 1; i < CHAIN; i++) {
        struct cnode *n = lull_alloc(&cnode_type);
        CHECK(n != NULL, "alloc failed");
        lull_store(tail, &tail->next, n);
        tail = n;
    }
    g_dead = lull_alloc_pinned(&leaf_type);
    CHECK(g_dead != NULL, "lull_alloc_pinned failed");
    lull_store(tail, &tail->x, g_dead);
    /* Neither X nor the chain's tail may be the last object this thread
     * allocated (outside its TLAB, and in it): those are roots while the
     * thread runs outside lull, which may be filling them (threads.h), and
     * this thread sleeps through the initial pause. A rooted tail would
     * stay in the nursery, whose references the initial pause greys. */
    CHECK(lull_alloc_pinned(&leaf_type) != NULL && lull_alloc(&cnode_type) != NULL, "alloc failed");
    if (x_first)
        expect_line(fmt, g_dead, g_dead, g_old, offsetof(struct box, ref));
    else
        expect_line(fmt, g_old, offsetof(struct box, ref), g_dead);
}

static NOINLINE void move_x(bool fault)
{
    /* The chain's end, found now: the major's minor has moved it. */
    struct box *b = g_old;
    struct cnode *tail = b->chain;
    while (tail->next)
        tail = tail->next;
    if (fault)
        __atomic_store_n(&b->ref, g_dead, __ATOMIC_RELEASE);   /* no card marked */
    else
        lull_store(b, &b->ref, g_dead);
    lull_store(tail, &tail->x, NULL);
}

static void *concurrent_major(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    lull_collect(LULL_GEN_MAJOR);
    lull_thread_detach();
    return NULL;
}

static void concurrent_case(bool fault)
{
    pthread_t t;
    lull_stats before, now;
    lull_get_stats(&before);
    CHECK(pthread_create(&t, NULL, concurrent_major, NULL) == 0, "pthread_create failed");
    /* Once the initial pause is over (slow under the sanitizers), B is
     * the first object the marker scans; the chain takes it a second. */
    do {
        sleep_ms(1);
        lull_get_stats(&now);
    } while (now.pauses_major == before.pauses_major);
    sleep_ms(50);
    move_x(fault);
    /* A minor inside the mark clears B's card: without the fault the mark
     * sees the store only through the union table that minor fills. */
    lull_collect(LULL_GEN_NURSERY);
    /* Joined unattached: under ThreadSanitizer a suspend signal landing in
     * pthread_join can deadlock its runtime (tests/thread_exit.c). */
    lull_thread_detach();
    pthread_join(t, NULL);
    CHECK(lull_thread_attach() == 0, "attach failed");
}

static void case_check_mod_union(bool fault)
{
    child_init();
    make_chain("lull: check-mod-union: object %p (type box), marked and scanned, holds at offset %zu a "
               "reference to unmarked %p on a card clean in the union table: the concurrent mark would free a "
               "reachable object (a store without lull_store, or a card cleared without its objects rescanned). "
               "The target is an object of type leaf; the slot's card in the minors' table is clean",
               false);
    clobber_stack();
    concurrent_case(fault);
    child_done();
}

static void case_verify_concurrent(bool fault)
{
    child_init();
    make_chain("lull: verify-concurrent: object %p (type leaf) is reachable but the concurrent mark left it "
               "unmarked: it would be freed. Path: %p <- %p (type box, marked, offset %zu) <- a root", true);
    clobber_stack();
    concurrent_case(fault);
    child_done();
}

static const struct dcase {
    const char *name;
    const char *debug;         /* LULL_GC_DEBUG of the check */
    void (*run)(bool fault);
} cases[] = {
    { "verify-missed",  "verify",         case_verify_missed },
    { "verify-freed",   "verify",         case_verify_freed },
    { "verify-freed-refs", "verify",      case_verify_freed_refs },
    { "poison",         "poison",         case_poison },
    { "check-cards",    "check-cards",    case_check_cards },
    { "verify-nursery", "verify-nursery", case_verify_nursery },
    { "check-cards-young-large", "check-cards", case_check_cards_young_large },
    { "verify-nursery-young-large", "verify-nursery", case_verify_nursery_young_large },
    { "clear-nursery",  "clear-nursery",  case_clear_nursery },
    { "check-mod-union", "check-mod-union,mark-delay=2000", case_check_mod_union },
    { "verify-concurrent", "verify-concurrent,mark-delay=2000", case_verify_concurrent },
};
#define NCASES (sizeof cases / sizeof cases[0])

static int child_main(const char *name, const char *mode)
{
    for (size_t i = 0; i < NCASES; i++)
        if (!strcmp(cases[i].name, name)) {
            cases[i].run(!strcmp(mode, "fault"));
            return 0;
        }
    fprintf(stderr, "debug_checks: unknown case %s\n", name);
    return 2;
}

/* Read a pipe to its end into buf (NUL-terminated). */
static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (len += (size_t)r) == cap - 1)
            break;
    }
    buf[len] = 0;
    close(fd);
}

/* Run this program as `--child name mode` with LULL_GC_DEBUG=debug (unset
 * when NULL); return its wait status, stdout and stderr. */
static int spawn(const char *name, const char *mode, const char *debug, char *out, char *err, size_t cap)
{
    int po[2], pe[2];
    CHECK(pipe(po) == 0 && pipe(pe) == 0, "pipe failed");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        if (debug)
            setenv("LULL_GC_DEBUG", debug, 1);
        else
            unsetenv("LULL_GC_DEBUG");
        alarm(60);                      /* a hang shows up as SIGALRM */
        execl("/proc/self/exe", "test_debug_checks", "--child", name, mode, (char *)NULL);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    read_all(pe[0], err, cap);         /* both are far below a pipe's capacity */
    read_all(po[0], out, cap);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid failed");
    return st;
}

static void test_case(const struct dcase *c)
{
    static char out[8192], err[8192], want[1024];

    /* The fault, with the check: SIGABRT and exactly the check's line. */
    int st = spawn(c->name, "fault", c->debug, out, err, sizeof out);
    const char *e = strstr(out, "expect: ");
    CHECK(e != NULL, "%s: the child did not say what to expect (stdout \"%s\", stderr \"%s\")",
          c->name, out, err);
    snprintf(want, sizeof want, "%s", e + strlen("expect: "));
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
          "%s: with LULL_GC_DEBUG=%s the fault was not caught: the child %s %d, expected SIGABRT; "
          "stderr: \"%s\"", c->name, c->debug, WIFEXITED(st) ? "exited with status" : "died of signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), err);
    CHECK(strcmp(err, want) == 0, "%s: with LULL_GC_DEBUG=%s the child aborted, but stderr is\n  \"%s\"\n"
          "expected exactly\n  \"%s\"", c->name, c->debug, err, want);

    /* The same program without the fault: a clean exit, nothing said. */
    st = spawn(c->name, "clean", c->debug, out, err, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && err[0] == 0,
          "%s: without the fault, LULL_GC_DEBUG=%s: the child %s %d; stderr: \"%s\"", c->name, c->debug,
          WIFEXITED(st) ? "exited with status" : "died of signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), err);

    /* The fault without the check goes unnoticed: the abort above is the
     * check's, not a crash the fault causes by itself. */
    st = spawn(c->name, "fault", NULL, out, err, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "%s: the fault without LULL_GC_DEBUG: the child %s %d (expected a clean exit: the fault "
          "alone must not be what aborts); stderr: \"%s\"", c->name,
          WIFEXITED(st) ? "exited with status" : "died of signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), err);
    printf("debug_checks: %-15s caught: %s", c->name, want);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--child"))
        return child_main(argv[2], argv[3]);
    /* test_debug_checks CASE: that case alone, no workload. */
    for (size_t i = 0; i < NCASES; i++)
        if (argc == 1 || !strcmp(argv[1], cases[i].name))
            test_case(&cases[i]);
    if (argc == 1)
        test_workload();
    printf("debug_checks: ok\n");
    return 0;
}
