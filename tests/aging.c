/*
 * aging — promotion-age=2: a nursery object that survives its first minor
 * is copied within the nursery (the aging space) and promoted only if it
 * survives a second one (nursery.h, "Aging").
 *
 *  - ages: a list that survives one minor is still young (bytes_aged
 *    grows, bytes_promoted does not), the next minor promotes it; it moves
 *    both times and stays intact;
 *  - once: a root slot scanned twice in one minor (two overlapping root
 *    ranges) must not copy the copy: both ranges see one object, and it
 *    is aged once;
 *  - pinned: an aged object a conservative root points to stays where it
 *    is; dropped from that root, it is promoted by the next minor;
 *  - old slots: old objects that point to young ones keep pointing to them
 *    while they age and when they are promoted (one target referenced from
 *    more old slots than the cementing threshold, and 100 separate ones);
 *  - dies young: a weak handle follows an aged object and is cleared by
 *    the minor after it is dropped, and a finalizer registered on an aged
 *    object runs after a minor, with no major;
 *  - full: when the aging space cannot take a minor's survivors, the rest
 *    are promoted, nothing lost;
 *  - parallel: with mark-workers=4, a list whose nodes are also held by a
 *    reference array (two slots to each node) survives minors intact, and
 *    every node is one object;
 *  - auto: with promotion-age=auto, minors that age a structure that only
 *    grows promote as much as minors that do not, so after a trial they
 *    stop aging; a structure replaced at every minor dies in the aging
 *    space, so after the first trial they keep aging and promote nothing;
 *  - options: promotion-age=0 and 3 are -EINVAL, auto is accepted.
 *
 * LULL_GC_DEBUG defaults to verify-nursery,check-cards here (after every
 * minor nothing may point into the evacuated nursery; before each, every
 * old-to-young reference has its card).
 */
#include "check.h"

#define SERIAL   "promotion-age=2,nursery-size=1m,mark-workers=1"

static void *root[4];                   /* precise roots */
static volatile uintptr_t hidden;       /* an address kept off the stack, complemented */
static int detached_gen;

static void collect_now(void)
{
    lull_collect(detached_gen);
}

/* A collection from a fresh thread: no stale word on this one's stack
 * pins what the test expects to move. */
static void collect_detached(int gen)
{
    detached_gen = gen;
    run_in_fresh_thread(collect_now);
}

static void init(const char *params)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    memset(root, 0, sizeof root);
    CHECK(lull_root_add_refs(root, 4) == 0, "lull_root_add_refs(root) failed");
}

static void fini(void)
{
    lull_root_remove(root);
    lull_shutdown();
}

/* ---- ages ---- */

static NOINLINE void make_list(void)
{
    root[0] = list_build(1000, 200);
    hidden = ~(uintptr_t)root[0];
}

static void ages(void)
{
    init(SERIAL);
    run_in_fresh_thread(make_list);
    lull_stats s0 = get_stats();
    collect_detached(LULL_GEN_NURSERY);
    lull_stats s1 = get_stats();
    uintptr_t first = (uintptr_t)root[0];
    CHECK(first != ~hidden, "the list's head did not move in its first minor (the test needs it to)");
    list_verify(root[0], 1000, 200, "after its first minor");
    size_t bytes = 200 * sizeof(struct tnode);
    CHECK(s1.bytes_aged - s0.bytes_aged >= bytes,
          "the first minor aged %" PRIu64 " bytes, the list is %zu", s1.bytes_aged - s0.bytes_aged, bytes);
    CHECK(s1.bytes_promoted == s0.bytes_promoted,
          "the first minor promoted %" PRIu64 " bytes: survivors of one minor must stay young",
          s1.bytes_promoted - s0.bytes_promoted);
    collect_detached(LULL_GEN_NURSERY);
    lull_stats s2 = get_stats();
    CHECK((uintptr_t)root[0] != first, "the aged list's head did not move in its second minor");
    list_verify(root[0], 1000, 200, "after its second minor");
    CHECK(s2.bytes_promoted - s1.bytes_promoted >= bytes,
          "the second minor promoted %" PRIu64 " bytes, the aged list is %zu", s2.bytes_promoted - s1.bytes_promoted,
          bytes);
    /* Old now: a third minor leaves it where it is. */
    uintptr_t old = (uintptr_t)root[0];
    collect_detached(LULL_GEN_NURSERY);
    CHECK((uintptr_t)root[0] == old, "a promoted list moved in a minor");
    list_verify(root[0], 1000, 200, "after a third minor");
    fini();
    printf("aging: ages: %zu bytes aged by the first minor, promoted by the second\n", bytes);
}

/* ---- once ---- */

static NOINLINE void make_shared(void)
{
    root[1] = root[2] = tnode_new(7);
}

static void once(void)
{
    init(SERIAL);
    /* root[1] lies in both ranges: the minor visits it twice, the second
     * time holding the copy the first made. */
    CHECK(lull_root_add_refs(&root[1], 2) == 0, "lull_root_add_refs(&root[1]) failed");
    run_in_fresh_thread(make_shared);
    lull_stats s0 = get_stats();
    collect_detached(LULL_GEN_NURSERY);
    lull_stats s1 = get_stats();
    CHECK(root[1] == root[2], "one object became two: the roots read %p and %p", root[1], root[2]);
    CHECK(tnode_ok(root[1], 7), "the twice-visited object is corrupt");
    CHECK(s1.bytes_promoted == s0.bytes_promoted && s1.bytes_aged - s0.bytes_aged == sizeof(struct tnode),
          "the minor aged %" PRIu64 " and promoted %" PRIu64 " bytes for one %zu-byte object",
          s1.bytes_aged - s0.bytes_aged, s1.bytes_promoted - s0.bytes_promoted, sizeof(struct tnode));
    lull_root_remove(&root[1]);
    fini();
    printf("aging: once: a slot visited twice, one copy\n");
}

/* ---- pinned ---- */

static void *conservative_slot[1];

static NOINLINE void make_pinned(void)
{
    root[0] = tnode_new(21);
}

static void pinned(void)
{
    init(SERIAL);
    CHECK(lull_root_add(conservative_slot, sizeof conservative_slot) == 0, "lull_root_add failed");
    run_in_fresh_thread(make_pinned);
    collect_detached(LULL_GEN_NURSERY);     /* aged */
    uintptr_t aged = (uintptr_t)root[0];
    conservative_slot[0] = root[0];
    lull_stats s1 = get_stats();
    collect_detached(LULL_GEN_NURSERY);
    lull_stats s2 = get_stats();
    CHECK((uintptr_t)root[0] == aged, "an aged object a conservative root points to moved");
    CHECK(tnode_ok(root[0], 21), "the pinned aged object is corrupt");
    CHECK(s2.bytes_promoted == s1.bytes_promoted, "a pinned aged object was counted as promoted");
    conservative_slot[0] = NULL;
    collect_detached(LULL_GEN_NURSERY);
    CHECK((uintptr_t)root[0] != aged, "an aged object no longer pinned was not moved out of the nursery");
    CHECK(tnode_ok(root[0], 21), "the unpinned aged object is corrupt after its promotion");
    lull_root_remove(conservative_slot);
    fini();
    printf("aging: pinned: stayed while pinned, promoted after\n");
}

/* ---- old slots ---- */

#define OLD 100

static NOINLINE void make_old(void)
{
    struct refs *r = lull_alloc_array(&refs_type, OLD);
    CHECK(r, "lull_alloc_array failed");
    for (size_t i = 0; i < OLD; i++)
        lull_store(r, &r->item[i], tnode_new(i));
    root[0] = r;
}

static NOINLINE void point_old_at_young(void)
{
    struct refs *r = root[0];
    struct tnode *shared = tnode_new(5000);
    for (size_t i = 0; i < OLD; i++) {
        struct tnode *o = r->item[i];
        /* The even ones point to one shared object (more slots than the
         * cementing threshold), the odd ones each to its own. */
        lull_store(o, &o->next, i % 2 ? tnode_new(6000 + i) : shared);
    }
}

static void verify_old(const char *when)
{
    struct refs *r = root[0];
    const struct tnode *shared = ((struct tnode *)r->item[0])->next;
    for (size_t i = 0; i < OLD; i++) {
        const struct tnode *o = r->item[i];
        CHECK(tnode_ok(o, i), "%s: old object %zu is corrupt", when, i);
        CHECK(tnode_ok(o->next, i % 2 ? 6000 + i : 5000), "%s: the young object old object %zu points to is "
              "missing or corrupt", when, i);
        CHECK(i % 2 || o->next == shared, "%s: old object %zu points to a second copy of the shared object", when, i);
    }
}

static void old_slots(void)
{
    init(SERIAL);
    run_in_fresh_thread(make_old);
    collect_detached(LULL_GEN_NURSERY);
    collect_detached(LULL_GEN_NURSERY);     /* the array and its nodes are old now */
    run_in_fresh_thread(point_old_at_young);
    for (int m = 0; m < 3; m++) {
        collect_detached(LULL_GEN_NURSERY);
        verify_old(m == 0 ? "young targets aged" : m == 1 ? "young targets promoted" : "a minor later");
    }
    collect_detached(LULL_GEN_MAJOR);
    verify_old("after a major");
    fini();
    printf("aging: old slots: %d old objects kept their young targets through aging and promotion\n", OLD);
}

/* ---- dies young ---- */

static lull_handle weak;
static volatile int finalized;

static void on_final(void *obj, void *data)
{
    (void)data;
    if (tnode_ok(obj, 31))
        finalized++;
}

static NOINLINE void make_mortal(void)
{
    struct tnode *n = tnode_new(31);
    root[0] = n;
    weak = lull_handle_new(n, LULL_HANDLE_WEAK);
    CHECK(weak, "lull_handle_new(WEAK) failed");
    struct tnode *f = tnode_new(31);
    root[1] = f;
    CHECK(lull_register_finalizer(f, on_final, NULL) == 0, "lull_register_finalizer failed");
}

static void dies_young(void)
{
    init(SERIAL ",finalizers=manual");
    run_in_fresh_thread(make_mortal);
    collect_detached(LULL_GEN_NURSERY);
    CHECK(lull_handle_get(weak) == root[0], "the weak handle reads %p, the aged object is at %p",
          lull_handle_get(weak), root[0]);
    CHECK(tnode_ok(root[0], 31), "the aged object is corrupt");
    root[0] = root[1] = NULL;
    lull_stats s1 = get_stats();
    collect_detached(LULL_GEN_NURSERY);
    lull_stats s2 = get_stats();
    CHECK(lull_handle_get(weak) == NULL, "a weak handle to an aged object dropped reads %p after a minor",
          lull_handle_get(weak));
    CHECK(s2.finalizers_queued == s1.finalizers_queued + 1,
          "an aged object dropped: %" PRIu64 " finalizers queued by the minor, expected 1",
          s2.finalizers_queued - s1.finalizers_queued);
    CHECK(s2.collections_major == s1.collections_major, "a major ran");
    lull_run_finalizers();
    CHECK(finalized == 1, "the finalizer ran %d times on an intact object, expected once", finalized);
    lull_handle_free(weak);
    fini();
    printf("aging: dies young: weak handle cleared and finalizer run by a minor\n");
}

/* ---- full ---- */

#define FULL_NODES 1500    /* about 100 KiB: more than a 64 KiB aging space */

static NOINLINE void make_batch(void)
{
    root[root[0] ? 1 : 0] = list_build(root[0] ? 20000 : 10000, FULL_NODES);
}

static void full(void)
{
    init("promotion-age=2,nursery-size=64k,mark-workers=1");
    run_in_fresh_thread(make_batch);
    run_in_fresh_thread(make_batch);
    for (int m = 0; m < 3; m++)
        collect_detached(LULL_GEN_NURSERY);
    lull_stats s = get_stats();
    list_verify(root[0], 10000, FULL_NODES, "the first batch");
    list_verify(root[1], 20000, FULL_NODES, "the second batch");
    /* Every promoted byte was aged first, unless the aging space was full
     * and it was promoted at once. */
    CHECK(s.bytes_aged > 0, "nothing was aged");
    CHECK(s.bytes_promoted > s.bytes_aged, "nothing overflowed into the major heap: %" PRIu64 " bytes aged, %"
          PRIu64 " promoted", s.bytes_aged, s.bytes_promoted);
    fini();
    printf("aging: full: %" PRIu64 " bytes aged, %" PRIu64 " promoted\n", s.bytes_aged, s.bytes_promoted);
}

/* ---- parallel ---- */

#define PAR_NODES 40000

static NOINLINE void make_par(void)
{
    struct refs *r = lull_alloc_array(&refs_type, PAR_NODES);
    CHECK(r, "lull_alloc_array failed");
    root[1] = r;
    struct tnode *head = list_build(0, PAR_NODES);
    root[0] = head;
    size_t i = 0;
    for (struct tnode *n = head; n; n = n->next)
        lull_store(r, &r->item[i++], n);
}

static void verify_par(const char *when)
{
    const struct refs *r = root[1];
    size_t i = 0;
    for (const struct tnode *n = root[0]; n; n = n->next, i++) {
        CHECK(i < PAR_NODES, "%s: the list is too long", when);
        CHECK(tnode_ok(n, i), "%s: node %zu is corrupt", when, i);
        CHECK(r->item[i] == n, "%s: node %zu is two objects: the list has %p, the array %p", when, i, (void *)n,
              r->item[i]);
    }
    CHECK(i == PAR_NODES, "%s: the list has %zu nodes", when, i);
}

static void parallel(void)
{
    init("promotion-age=2,nursery-size=8m,mark-workers=4");
    for (int round = 0; round < 3; round++) {
        run_in_fresh_thread(make_par);
        collect_detached(LULL_GEN_NURSERY);
        verify_par("aged");
        collect_detached(LULL_GEN_NURSERY);
        verify_par("promoted");
    }
    fini();
    printf("aging: parallel: %d nodes held twice, aged and promoted by 5 tracers, one object each\n", PAR_NODES);
}

/* ---- auto ---- */

#define ROUNDS      40
#define ROUND_NODES 2000     /* 128 KiB */

static NOINLINE void grow(void)
{
    struct tnode *head = list_build(0, ROUND_NODES), *tail = head;
    while (tail->next)
        tail = tail->next;
    lull_store(tail, &tail->next, root[0]);
    root[0] = head;
}

static NOINLINE void replace(void)
{
    root[0] = list_build(0, ROUND_NODES);
}

/* ROUNDS rounds of fn then a minor; returns the rounds whose minor aged
 * anything, and in *promoted the bytes promoted over the rounds after
 * the first SETTLE (the first stop and trial of promotion-age=auto). */
#define SETTLE 20
static unsigned rounds(void (*fn)(void), uint64_t *promoted)
{
    unsigned aging = 0;
    lull_stats prev = get_stats(), settled = prev;
    for (unsigned r = 0; r < ROUNDS; r++) {
        run_in_fresh_thread(fn);
        collect_detached(LULL_GEN_NURSERY);
        lull_stats s = get_stats();
        aging += s.bytes_aged > prev.bytes_aged;
        prev = s;
        if (r + 1 == SETTLE)
            settled = s;
    }
    *promoted = prev.bytes_promoted - settled.bytes_promoted;
    return aging;
}

static void auto_mode(void)
{
    uint64_t promoted;
    init("promotion-age=auto,nursery-size=1m,mark-workers=1");
    unsigned growing = rounds(grow, &promoted);
    CHECK(growing <= ROUNDS / 2, "a structure that only grows: %u of %d minors aged (aging promoted as much "
          "as not aging)", growing, ROUNDS);
    CHECK(growing >= 1, "a structure that only grows: no minor aged (no trial)");
    fini();
    init("promotion-age=auto,nursery-size=1m,mark-workers=1");
    unsigned replaced = rounds(replace, &promoted);
    CHECK(replaced >= ROUNDS - SETTLE, "a structure replaced at every minor: %u of %d minors aged", replaced,
          ROUNDS);
    CHECK(promoted < ROUND_NODES * sizeof(struct tnode), "a structure replaced at every minor: %" PRIu64
          " bytes promoted over the last %d minors, expected nearly none", promoted, ROUNDS - SETTLE);
    fini();
    printf("aging: auto: %u of %d minors aged for a growing structure, %u of %d for a replaced one\n", growing,
           ROUNDS, replaced, ROUNDS);
}

/* ---- options ---- */

static void options(void)
{
    CHECK(lull_init("promotion-age=0") == -EINVAL, "promotion-age=0 was accepted");
    CHECK(lull_init("promotion-age=3") == -EINVAL, "promotion-age=3 was accepted");
    CHECK(lull_init("promotion-age=auto") == 0, "promotion-age=auto was refused");
    lull_shutdown();
    printf("aging: options: 0 and 3 refused, auto accepted\n");
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify-nursery,check-cards", 0);
    options();
    ages();
    once();
    pinned();
    old_slots();
    dies_young();
    full();
    parallel();
    auto_mode();
    return 0;
}
