/*
 * young_large_cards — a minor scans only the marked cards of a young large
 * object it reaches (lib/nursery.c: scan_young_large), outside a
 * concurrent mark.
 *
 *  1. Card-limited: a fresh 1 MiB reference array holds one nursery node
 *     stored with lull_store and a second stored with a plain store (no
 *     card; a misuse, made here on purpose). After a minor the first slot
 *     leads to the node's copy, and the second still holds the node's old
 *     address: the minor did not read that card. (Before, a minor read the
 *     whole array and updated both: bench/graph's first minor at 2 ms read
 *     a fresh 32 MB array for 16 KiB of survivors, 9-17 ms.)
 *
 *  2. Cementing: a node pinned by a conservative root is referenced from
 *     96 old objects, enough for a minor to cement it, then from 96 slots
 *     of a new young large array, each on a card of its own. The array's
 *     first minor (the one lull_collect(LULL_GEN_MAJOR) begins with) leaves
 *     their cards clean, as it would an old slot's, the node being
 *     cemented: the major marks them again (mark.c: visit), and for a young
 *     array only its final pause can, which visits every young large
 *     object. Then the concurrent major ends (forgetting the cement table),
 *     the conservative root lets go, and the next minor, the array's
 *     second, still young, moves the node: every slot of the array must
 *     lead to the copy. Run twice: checking the slots, and with
 *     LULL_GC_DEBUG=check-cards,verify-nursery, which abort at that minor
 *     if a card was left clean. (With visit() marking no card of a young
 *     large object, the first run reads a stale node and the second
 *     aborts.)
 */
#include "check.h"

typedef struct refs refs;      /* check.h: refs_type, items in item[] */

#define BIG     ((size_t)1 << 17)     /* items: 1 MiB, well within a major's allowance (4 MiB) */
#define FAR     (BIG / 2)
#define NOLD    96u
#define NSLOTS  96u
#define STRIDE  32u                   /* items between the array's slots: 256 bytes, another card */
#define ARRAY   (NSLOTS * STRIDE)

static void *proots[4];               /* precise roots */
static void *volatile pin_word;       /* a conservative root: pins what it holds */

/* While a concurrent mark runs, a minor scans a young large object whole
 * (allocate black): the parts below that need a minor outside a mark end
 * a running one first (end_mark). */
static volatile int mark_running;      /* between an initial and a final pause */

static void hook(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (ev->phase == LULL_PHASE_INITIAL)
        mark_running = 1;
    else if (ev->phase == LULL_PHASE_FINAL)
        mark_running = 0;
}

static void end_mark(void)
{
    if (mark_running)
        lull_collect(LULL_GEN_MAJOR);
    CHECK(!mark_running, "a concurrent mark still runs");
}

/* ---- 1. card-limited ---- */

static uintptr_t far_before;

static NOINLINE void make_big(void)
{
    refs *a = lull_alloc_array(&refs_type, BIG);
    CHECK(a, "lull_alloc_array(%zu refs) failed", BIG);
    proots[0] = a;
}

static NOINLINE void plant(void)
{
    refs *a = proots[0];
    struct tnode *n1 = tnode_new(1), *n2 = tnode_new(2);
    proots[1] = n2;
    lull_store(a, &a->item[10], n1);
    a->item[FAR] = n2;                 /* no card: the minor must not look */
    far_before = (uintptr_t)n2;
}

static NOINLINE void card_limited(void)
{
    lull_collect(LULL_GEN_NURSERY);    /* nothing young but the array */
    make_big();
    /* Its allocation may start a mark; one that scans the array after the
     * stores below marks the card of every slot into the nursery. */
    end_mark();
    plant();
    CHECK(!mark_running, "a concurrent mark began");
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    refs *a = proots[0];
    CHECK(tnode_ok(a->item[10], 1), "the node stored with lull_store was lost");
    CHECK(proots[1] != (void *)far_before, "node 2 did not move (pinned?): the test shows nothing");
    printf("young_large_cards: slot 10 -> %p (moved), slot %zu -> %p (node now at %p)\n", a->item[10], FAR,
           a->item[FAR], proots[1]);
    CHECK((uintptr_t)a->item[FAR] == far_before,
          "the minor updated a slot on a card no store marked: it read the young array whole");
    lull_store(a, &a->item[FAR], proots[1]);     /* made right again */
    CHECK(tnode_ok(a->item[FAR], 2), "node 2");
    proots[0] = proots[1] = NULL;
}

/* ---- 2. cementing ---- */

static NOINLINE void make_olds(void)
{
    refs *olds = lull_alloc_array(&refs_type, NOLD);
    CHECK(olds, "lull_alloc_array");
    proots[2] = olds;
    for (uint32_t i = 0; i < NOLD; i++)
        lull_store(olds, &olds->item[i], tnode_new(100 + i));
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);    /* old from here on */
}

static NOINLINE void link_olds(void)
{
    refs *olds = proots[2];
    struct tnode *t = tnode_new(77);
    pin_word = t;
    for (uint32_t i = 0; i < NOLD; i++) {
        struct tnode *o = olds->item[i];
        LULL_SET(o, next, t);
    }
}

static NOINLINE void link_young(void)
{
    refs *young = lull_alloc_array(&refs_type, ARRAY);
    CHECK(young, "lull_alloc_array");
    proots[3] = young;
    for (uint32_t i = 0; i < NSLOTS; i++)
        lull_store(young, &young->item[i * STRIDE], pin_word);
}

static NOINLINE void check_links(const char *when)
{
    refs *olds = proots[2], *young = proots[3];
    const struct tnode *t = ((struct tnode *)olds->item[0])->next;
    CHECK(tnode_ok(t, 77), "%s: the old objects' node is damaged", when);
    for (uint32_t i = 0; young && i < NSLOTS; i++)
        CHECK(young->item[i * STRIDE] == t && tnode_ok(young->item[i * STRIDE], 77),
              "%s: slot %u of the young array holds %p, the node is at %p", when, i * STRIDE,
              young->item[i * STRIDE], (const void *)t);
}

static uintptr_t node_at;

static NOINLINE void cemented(const char *debug)
{
    if (debug)
        CHECK(setenv("LULL_GC_DEBUG", debug, 1) == 0, "setenv");
    else
        unsetenv("LULL_GC_DEBUG");
    CHECK(lull_init(NULL) == 0, "lull_init");
    CHECK(lull_root_add_refs(proots, 4) == 0, "lull_root_add_refs");
    CHECK(lull_root_add((void *)&pin_word, sizeof pin_word) == 0, "lull_root_add");
    lull_set_pause_hook(hook, NULL);
    make_olds();
    link_olds();
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);    /* the node stays (pinned) and is cemented */
    node_at = (uintptr_t)pin_word;     /* a plain global: no root */
    check_links("after the pinning minor");
    link_young();
    uint64_t sync = get_stats().collections_major_sync;
    /* Its minor is the array's first: the node, cemented until this major
     * ends, leaves the array's cards clean. */
    lull_collect(LULL_GEN_MAJOR);
    /* A synchronous one would make the array old (its minor) and mark it. */
    CHECK(get_stats().collections_major_sync == sync, "the major was synchronous: the test shows nothing");
    check_links("after the major");
    pin_word = NULL;
    end_mark();
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);    /* moves the node */
    const struct tnode *now = ((struct tnode *)((refs *)proots[2])->item[0])->next;
    printf("young_large_cards: %s: the cemented node %#" PRIxPTR " is at %p after the major and a minor\n",
           debug ? debug : "no checks", node_at, (const void *)now);
    CHECK((uintptr_t)now != node_at, "the node did not move: the test shows nothing");
    check_links("after the minor that moved the node");
    lull_collect(LULL_GEN_NURSERY);
    check_links("after one more minor");
    for (size_t i = 0; i < 4; i++)
        proots[i] = NULL;
    lull_root_remove((void *)&pin_word);
    lull_root_remove(proots);
    lull_shutdown();
}

int main(void)
{
    unsetenv("LULL_GC_DEBUG");
    CHECK(lull_init(NULL) == 0, "lull_init");
    CHECK(lull_root_add_refs(proots, 4) == 0, "lull_root_add_refs");
    lull_set_pause_hook(hook, NULL);
    card_limited();
    lull_root_remove(proots);
    lull_shutdown();

    cemented(NULL);
    cemented("check-cards,verify-nursery");
    puts("young_large_cards: ok");
    return 0;
}
