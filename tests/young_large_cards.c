/*
 * young_large_cards — a minor scans only the marked cards of a young large
 * object it reaches (lib/nursery.c: scan_young_large).
 *
 *  1. Card-limited, outside a mark and during one: a fresh 1 MiB reference
 *     array holds one nursery node stored with lull_store and a second
 *     stored with a plain store (no card; a misuse, made here on purpose).
 *     After a minor the first slot
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
 *
 *  3. Made old during a mark: while the markers crawl a chain of old nodes
 *     (mark-delay), node X moves from the chain's unscanned end into a
 *     young array allocated during the mark; the preclean clears the
 *     array's union card without scanning it (unmarked), and the array's
 *     second minor makes it old and marked. The minor hands it to the
 *     markers (lull_mark_grey_made_old); without that, verify-concurrent
 *     aborts at the final pause with X reachable and unmarked (checked),
 *     as stress_graph lost objects in 4 runs of 6.
 *
 *  Parts 1 and 3 also run with verify-concurrent and check-mod-union.
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

/* A mark that visits the array marks the card of every slot of it that
 * points into the nursery (mark.c: visit): the parts below that need a
 * minor to see only the cards the program's stores marked end a running
 * mark first (end_mark), or allocate the array after it began.
 *
 * start_lull: lull_init with LULL_GC_DEBUG=debug, proots registered,
 * mark_running kept (check.h); marks end when done, not when the
 * allowance is used up. */
static void start_lull(const char *debug)
{
    CHECK(setenv("LULL_GC_DEBUG", debug, 1) == 0, "setenv");
    CHECK(lull_init(NULL) == 0, "lull_init");
    CHECK(lull_root_add_refs(proots, 4) == 0, "lull_root_add_refs");
    lull_set_pause_hook(mark_running_hook, NULL);
    CHECK(lull_set_allow_synchronous_major(false), "lull_set_allow_synchronous_major");
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

/* Start a concurrent mark (its initial pause runs no minor: what is
 * young stays young), stretched by mark-delay so that it still runs after
 * what follows; its final pause waits for the next allocation's decision. */
static NOINLINE void start_mark(void)
{
    CHECK(lull_collect_start() == 0, "lull_collect_start");
    CHECK(mark_running, "no concurrent mark began");
}

/* Old nodes reachable only through the array's slots: the array's card
 * scans never see them; a mark must. */
#define NOLDREF 64u
#define OLDREF_AT(i) (20 + (size_t)(i) * 1000)
static NOINLINE void store_old_refs(void)
{
    refs *a = proots[0];
    refs *hold = lull_alloc_array(&refs_type, NOLDREF);
    CHECK(hold, "lull_alloc_array");
    proots[1] = hold;
    for (uint32_t i = 0; i < NOLDREF; i++)
        lull_store(hold, &hold->item[i], tnode_new(500 + i));
    lull_collect(LULL_GEN_NURSERY);    /* the nodes are old, the array still young */
    hold = proots[1];
    for (uint32_t i = 0; i < NOLDREF; i++)
        lull_store(a, &a->item[OLDREF_AT(i)], hold->item[i]);
    proots[1] = NULL;
}

static NOINLINE void check_old_refs(const char *when)
{
    const refs *a = proots[0];
    for (uint32_t i = 0; i < NOLDREF; i++)
        CHECK(tnode_ok(a->item[OLDREF_AT(i)], 500 + i), "%s: old node %u behind the array is lost", when, i);
}

/* Old nodes for every mark of card_limited to crawl through (mark-delay
 * sleeps after every 64 objects a marker scans: 16 sleeps), so that a mark
 * it starts still runs after the few allocations that follow, however
 * soon the markers get going: of its own the heap holds a handful of
 * objects, one slice's worth. */
#define BALLAST 1024u

static NOINLINE void card_limited(bool in_mark)
{
    proots[3] = list_build(9000, BALLAST);
    lull_collect(LULL_GEN_NURSERY);    /* nothing young but the array (and the ballast, now old) */
    if (in_mark)
        start_mark();
    make_big();
    if (!in_mark) {
        /* Its allocation may start a mark; one that scans the array after
         * the stores below marks the card of every slot into the nursery. */
        end_mark();
        store_old_refs();
    }
    plant();
    CHECK(mark_running == in_mark, "a concurrent mark %s", in_mark ? "ended" : "began");
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    CHECK(mark_running == in_mark, "a concurrent mark %s", in_mark ? "ended" : "began");
    refs *a = proots[0];
    CHECK(tnode_ok(a->item[10], 1), "the node stored with lull_store was lost");
    CHECK(proots[1] != (void *)far_before, "node 2 did not move (pinned?): the test shows nothing");
    printf("young_large_cards: %s: slot 10 -> %p (moved), slot %zu -> %p (node now at %p)\n",
           in_mark ? "during a mark" : "no mark", a->item[10], FAR, a->item[FAR], proots[1]);
    CHECK((uintptr_t)a->item[FAR] == far_before,
          "the minor updated a slot on a card no store marked: it read the young array whole");
    lull_store(a, &a->item[FAR], proots[1]);     /* made right again */
    CHECK(tnode_ok(a->item[FAR], 2), "node 2");
    proots[1] = NULL;
    if (!in_mark) {
        /* Its second minor makes the array old during a mark, which must
         * scan it: the old nodes it holds have no other reference. */
        start_mark();
        lull_collect(LULL_GEN_NURSERY);
        CHECK(mark_running, "the concurrent mark ended");
        end_mark();
        check_old_refs("after the mark the array became old in");
        lull_collect(LULL_GEN_MAJOR);
        check_old_refs("after one more major");
    }
    proots[0] = proots[3] = NULL;
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
    lull_set_pause_hook(mark_running_hook, NULL);
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

/* ---- 3. made old during a mark ---- */

#define CHAIN 320u
static struct tnode *chain_end;        /* no root: reached through proots[2] */

/* An old chain of CHAIN nodes from proots[2]; its last node's `next` is
 * the only reference to node X (id 4242), old too. */
static NOINLINE void make_chain(void)
{
    struct tnode *head = tnode_new(0);
    proots[2] = head;
    struct tnode *t = head;
    for (uint32_t i = 1; i < CHAIN; i++) {
        struct tnode *n = tnode_new(i);
        LULL_SET(t, next, n);
        t = n;
    }
    LULL_SET(t, next, tnode_new(4242));
}

/* After the thread that made it ended (its stack pinned some of it): all
 * old, none left in the nursery, which the initial pause visits as roots. */
static NOINLINE void find_chain_end(void)
{
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);
    struct tnode *t;
    for (t = proots[2]; t->next->id != 4242; t = t->next)
        ;
    chain_end = t;
}

/* While the markers crawl down the chain (mark-delay): X moves from the
 * chain's end, not scanned yet, into a young array allocated during the
 * mark (its union card marked), and the chain lets go of it. */
static NOINLINE void move_x(void)
{
    refs *a = lull_alloc_array(&refs_type, 4096);
    CHECK(a, "lull_alloc_array");
    proots[0] = a;
    lull_store(a, &a->item[100], chain_end->next);
    LULL_SET(chain_end, next, (struct tnode *)NULL);
}

/* The classic lost object, planted: the preclean clears the array's union
 * card without scanning it (it is unmarked); the array's second minor
 * makes it old and marked; the rest of the mark must still scan it. With
 * the array scanned by nothing, X stays white and is freed by the final
 * pause's sweep: verify-concurrent aborts there ("reachable but not
 * marked"), and without it the check below reads a freed node. */
static NOINLINE void made_old_in_mark(void)
{
    start_lull("mark-delay=20000,verify-concurrent");
    /* In a thread of its own: no register or stack word of this one may
     * hold X when the mark begins (it would be marked as a root). */
    run_in_fresh_thread(make_chain);
    run_in_fresh_thread(find_chain_end);
    clobber_stack();
    start_mark();
    move_x();
    /* The chain takes the markers CHAIN / 64 sleeps of 20 ms; then the
     * grey stacks are dry and the preclean runs. */
    usleep(1500 * 1000);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);    /* the array's first: it stays young */
    lull_collect(LULL_GEN_NURSERY);    /* its second: old, and marked */
    CHECK(mark_running, "the concurrent mark ended before the array became old: the test shows nothing");
    end_mark();
    lull_collect(LULL_GEN_MAJOR);
    const refs *a = proots[0];
    CHECK(tnode_ok(a->item[100], 4242), "node X, held only by an array made old during a mark, was lost");
    puts("young_large_cards: an array made old during a mark kept what it held");
    for (size_t i = 0; i < 4; i++)
        proots[i] = NULL;
    lull_root_remove(proots);
    lull_shutdown();
}

int main(void)
{
    for (int in_mark = 0; in_mark < 2; in_mark++) {
        start_lull("mark-delay=20000,verify-concurrent,check-mod-union");
        card_limited(in_mark);
        end_mark();
        lull_root_remove(proots);
        lull_shutdown();
    }

    cemented(NULL);
    cemented("check-cards,verify-nursery");
    made_old_in_mark();
    puts("young_large_cards: ok");
    return 0;
}
