/* The write barrier's card filter (lull.h: lull_store). Outside a
 * concurrent mark a store marks its card only when the stored reference is
 * young: into the nursery, or to a young large object, which a minor must
 * find from the old slots that hold it or free it. An old-to-old store
 * leaves the card clean, so that the next minor does not scan it for
 * nothing. While a concurrent mark runs every store marks its card in the
 * union table, the mark's (it rescans what was stored behind it), and an
 * old-to-old store still leaves the card table, the minors', clean: a
 * minor during a mark scans no card for the mark's sake. With
 * card-filter=no every store marks the card table. Each case reads the
 * tables themselves; the young large object must also survive a minor
 * that only the old slot keeps it through. */
#include <stdint.h>
#include <string.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "lull.h"
#include "trace/mark.h"
#include "space/nursery.h"
#include "unit.h"

struct node {
    lull_header h;
    struct node *ref;
    uint64_t v;
};
static const lull_type node_type = { .name = "node", .size = sizeof(struct node),
                                     .refs = LULL_REF(struct node, ref) };

#define BIG 8192   /* 64 KiB of slots: a large object, young when new */
struct big {
    lull_header h;
    uint64_t v[BIG];
};
static const lull_type big_type = { .name = "big", .size = sizeof(struct big) };

static void *roots[2];

static uint8_t card_of(void *slot)
{
    return __atomic_load_n(&lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT],
                           __ATOMIC_RELAXED);
}

static uint8_t union_of(void *slot)
{
    return __atomic_load_n(&lull_heap_g.union_cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT],
                           __ATOMIC_RELAXED);
}

/* lull_init with `params`, then two old objects held by the roots
 * (lull_alloc_pinned allocates in the major heap: a minor would leave one
 * in the nursery that a stale stack word pins), and a's card clean. */
static void start(const char *params, struct node **a, struct node **b)
{
    UCHECK(lull_init(params) == 0, "init");
    UCHECK(lull_root_add_refs(roots, 2) == 0, "roots");
    roots[0] = lull_alloc_pinned(&node_type);
    roots[1] = lull_alloc_pinned(&node_type);
    UCHECK(roots[0] && roots[1], "alloc");
    lull_collect(LULL_GEN_NURSERY);
    *a = roots[0];
    *b = roots[1];
    UCHECK(!lull_in_nursery((uintptr_t)*a) && !lull_in_nursery((uintptr_t)*b), "old");
    UCHECK(card_of(&(*a)->ref) == 0, "a's card is clean");
}

static void filtered(void)
{
    struct node *a, *b;
    start("major=concurrent,mark-workers=1", &a, &b);   /* no worker: no preclean clears a union card */

    /* Old to old, no mark: nothing to record. */
    lull_store(a, &a->ref, b);
    UCHECK(card_of(&a->ref) == 0, "an old-to-old store outside a mark left its card clean");

    /* Old to nursery: the minors' remembered set. */
    struct node *n = lull_alloc(&node_type);
    UCHECK(n && lull_in_nursery((uintptr_t)n), "a nursery object");
    lull_store(a, &a->ref, n);
    UCHECK(card_of(&a->ref) != 0, "an old-to-nursery store marked its card");
    lull_store(a, &a->ref, NULL);
    n = NULL;
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(card_of(&a->ref) == 0, "the minor cleaned the card");

    /* Old to a young large object: only this slot keeps it through the
     * next minor. */
    struct big *big = lull_alloc(&big_type);
    UCHECK(big && lull_young_large_at((uintptr_t)big) == (uintptr_t)big, "a young large object");
    for (size_t i = 0; i < BIG; i++)
        big->v[i] = i * 7 + 1;
    lull_store(a, &a->ref, (struct node *)big);
    UCHECK(card_of(&a->ref) != 0, "an old-to-young-large store marked its card");
    big = NULL;
    lull_collect(LULL_GEN_NURSERY);
    struct big *kept = (struct big *)a->ref;
    UCHECK(lull_type_of(kept) == &big_type, "the young large object survived the minor");
    for (size_t i = 0; i < BIG; i++)
        UCHECK(kept->v[i] == i * 7 + 1, "its contents are intact (word %zu)", i);
    lull_store(a, &a->ref, NULL);
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(card_of(&a->ref) == 0, "clean again");

    /* While a concurrent mark runs, every store is recorded for the mark,
     * in the union table; only a young one in the card table. */
    UCHECK(union_of(&a->ref) == 0, "a's union card is clean");
    lull_gc_lock();
    lull_collect_locked(LULL_COLLECT_MAJOR_START, "unit");
    UCHECK(lull_marking(), "a concurrent mark runs");
    lull_store(a, &a->ref, b);
    UCHECK(union_of(&a->ref) != 0, "an old-to-old store during a mark marked its union card");
    UCHECK(card_of(&a->ref) == 0, "an old-to-old store during a mark left the minors' card clean");
    void *young = lull_alloc(&node_type);
    lull_store(a, &a->ref, young);
    UCHECK(card_of(&a->ref) != 0, "an old-to-nursery store during a mark marked the minors' card");
    lull_store(a, &a->ref, NULL);
    young = NULL;
    lull_gc_unlock();
    lull_collect(LULL_GEN_MAJOR);
    UCHECK(!lull_marking(), "the mark ended");
    UCHECK(union_of(&a->ref) == 0, "the final pause cleaned the union card");
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(card_of(&a->ref) == 0, "the minor cleaned the card");
    lull_store(a, &a->ref, b);
    UCHECK(card_of(&a->ref) == 0 && union_of(&a->ref) == 0,
           "after the mark, old-to-old stores are filtered again and the union table is left alone");
    lull_shutdown();
}

static void unfiltered(void)
{
    struct node *a, *b;
    start("major=concurrent,card-filter=no", &a, &b);
    lull_store(a, &a->ref, b);
    UCHECK(card_of(&a->ref) != 0, "with card-filter=no an old-to-old store marked its card");
    lull_shutdown();
}

int main(void)
{
    filtered();
    unfiltered();
    printf("unit_card_filter: ok\n");
    return 0;
}
