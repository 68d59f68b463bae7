/* Two things that keep a concurrent major's pauses short when the program
 * does something large between them (issue 9: "the longest major pause at
 * most 5 ms"), each checked where a test can see it, and both under
 * verify-concurrent and check-mod-union (nothing may be lost by them):
 *
 * 1. The final pause stays small when the program stores a lot after the
 *    mark is done. The program stores into every one of 200,000 old nodes
 *    without allocating, waits, and ends the mark: its final pause must
 *    rescan at most PRECLEAN_ENOUGH (4,096) cards, where it would rescan
 *    every card the stores dirtied (about 19,000) if nothing cleaned them
 *    first. Two mechanisms see to it, whichever comes first: the preclean
 *    goes on after the mark is done (mark.c: preclean_tail), and the
 *    stores' slow path (every 1,024 stores during a mark) runs the final
 *    pause of a done mark.
 *
 * 2. The initial pause leaves a big young large object to the background
 *    markers instead of visiting its slots (mark.c: defer_young_large):
 *    an 8 MiB array allocated after the last minor, the only holder of
 *    10,000 old nodes, must be reported as left to the markers, and every
 *    node must be intact after the cycle and after two more majors.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gc/collect.h"
#include "lull.h"
#include "trace/mark.h"
#include "unit.h"
#include "unit_nodes.h"

#define NODES 200000u
#define EXTRA 10000u
#define YOUNG_SLOTS (1u << 20)      /* 8 MiB of references */
#define PRECLEAN_ENOUGH 4096u       /* mark.c */

static void *roots[3];              /* the nodes, the young array, a holder */

static struct node *node_new(uint64_t id)
{
    struct node *n = lull_alloc(&node_type);
    UCHECK(n != NULL, "alloc");
    n->id = id;
    return n;
}

static void check_nodes(const char *when)
{
    struct refs *a = roots[0];
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        UCHECK(n && n->id == i, "%s: node %u damaged", when, i);
        struct node *t = n->k[0];
        UCHECK(t && t->id == (i * 7u + 1u) % NODES, "%s: node %u: k[0] is %p", when, i, (void *)t);
    }
}

static void check_extra(const char *when)
{
    struct refs *y = roots[1];
    for (uint32_t j = 0; j < EXTRA; j++) {
        struct node *n = y->item[(size_t)j * (YOUNG_SLOTS / EXTRA)];
        UCHECK(n && n->id == NODES + j, "%s: extra node %u damaged (%p)", when, j, (void *)n);
    }
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify-concurrent,check-mod-union", 0);
    UCHECK(lull_init("mark-workers=2,allow-synchronous-major=no,pause-target=10s") == 0, "init");
    UCHECK(lull_root_add_refs(roots, 3) == 0, "root");

    struct refs *a = lull_alloc_array(&refs_type, NODES);
    UCHECK(a != NULL, "array");
    roots[0] = a;
    for (uint32_t i = 0; i < NODES; i++)
        lull_store(a, &a->item[i], node_new(i));
    lull_collect(LULL_GEN_NURSERY);     /* old now */
    a = roots[0];

    /* 1. Stores after the mark is done, none of them allocating. */
    pause_now(LULL_COLLECT_MAJOR_START);
    wait_mark_ready();
    for (int round = 0; round < 3; round++)
        for (uint32_t i = 0; i < NODES; i++) {
            struct node *n = a->item[i];
            lull_store(n, &n->k[0], a->item[(i * 7u + 1u) % NODES]);
        }
    usleep(500000);     /* the tail's passes (naps of at most 64 ms) */
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    uint64_t pre = 0, final_cards = 0, final_young = 0;
    lull_mark_concurrent_work(&pre, &final_cards, &final_young);
    printf("stores after the mark was done: %" PRIu64 " cards precleaned, %" PRIu64
           " rescanned in the final pause\n", pre, final_cards);
    UCHECK(final_cards <= PRECLEAN_ENOUGH,
           "the final pause rescanned %" PRIu64 " cards: the preclean stopped when the mark was done", final_cards);
    check_nodes("after the final pause");

    /* 2. A big young large object at the initial pause. */
    struct refs *h = lull_alloc_array(&refs_type, EXTRA);
    UCHECK(h != NULL, "holder");
    roots[2] = h;
    for (uint32_t j = 0; j < EXTRA; j++)
        lull_store(h, &h->item[j], node_new(NODES + j));
    lull_collect(LULL_GEN_NURSERY);     /* the extra nodes are old; nothing is young */
    h = roots[2];
    struct refs *y = lull_alloc_array(&refs_type, YOUNG_SLOTS);
    UCHECK(y != NULL, "young array");
    roots[1] = y;
    for (uint32_t j = 0; j < EXTRA; j++) {
        lull_store(y, &y->item[(size_t)j * (YOUNG_SLOTS / EXTRA)], h->item[j]);
        lull_store(h, &h->item[j], NULL);       /* the young array alone holds them */
    }
    pause_now(LULL_COLLECT_MAJOR_START);
    uint64_t deferred = lull_mark_deferred_young_bytes();
    printf("the initial pause left %" PRIu64 " KiB of young large objects to the markers\n", deferred >> 10);
    UCHECK(deferred >= (uint64_t)YOUNG_SLOTS * sizeof(void *),
           "the initial pause visited the 8 MiB young array itself (%" PRIu64 " bytes left to the markers)",
           deferred);
    wait_mark_ready();
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    check_extra("after the cycle");
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    check_extra("after two more majors");
    check_nodes("after two more majors");

    roots[0] = roots[1] = roots[2] = NULL;
    lull_root_remove(roots);
    lull_shutdown();
    printf("unit_preclean_tail: ok\n");
    return 0;
}
