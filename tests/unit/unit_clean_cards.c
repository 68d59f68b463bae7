/* Cleaning cards between minors (nursery.h: lull_nursery_clean_cards):
 * worker 0 clears the dirty cards of old objects that no longer point
 * into the nursery, so the next minor does not scan them, and leaves
 * dirty every card that still does.
 *
 * 100,000 old nodes (about 10,000 cards) are rewired among themselves,
 * and 500 of them get a young child; the program sleeps (the cleaning's
 * passes), then runs a minor. That minor must scan at most the young
 * children's cards and a few more (without the cleaning: every card the
 * rewiring dirtied), and every young child must come out of it promoted
 * and intact (a card cleaned by mistake would leave its slot pointing into
 * the evacuated nursery, which clear-nursery fills with 0xdb; check-cards
 * aborts first if such a card is clean when the minor begins).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "collect.h"
#include "lull.h"
#include "nursery.h"
#include "unit.h"

struct node {
    lull_header h;
    struct node *k[2];
    uint64_t id;
};
static const lull_type node_type = {
    .name = "node", .size = sizeof(struct node),
    .refs = LULL_REF(struct node, k[0]) | LULL_REF(struct node, k[1]),
};
struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

#define NODES 100000u
#define YOUNG 500u
#define YOUNG_ID(i) (((uint64_t)1 << 40) | (i))

static void *roots[1];

static struct node *node_new(uint64_t id)
{
    struct node *n = lull_alloc(&node_type);
    UCHECK(n != NULL, "alloc");
    n->id = id;
    return n;
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "check-cards,clear-nursery", 0);
    /* One worker besides this thread; a nursery and a pause target that no
     * allocation here reaches, so that the only minors are this test's. */
    UCHECK(lull_init("mark-workers=2,allow-synchronous-major=no,pause-target=10s,nursery-size=64m") == 0, "init");
    UCHECK(lull_root_add_refs(roots, 1) == 0, "root");
    struct refs *a = lull_alloc_array(&refs_type, NODES);
    UCHECK(a != NULL, "array");
    roots[0] = a;
    for (uint32_t i = 0; i < NODES; i++)
        lull_store(a, &a->item[i], node_new(i));
    /* Old, and a whole major cycle over (no concurrent mark runs, whose
     * preclean owns the cards meanwhile). */
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(!lull_marking(), "a mark runs");
    a = roots[0];

    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        lull_store(n, &n->k[0], a->item[(i * 7u + 1u) % NODES]);
    }
    for (uint32_t j = 0; j < YOUNG; j++) {
        struct node *n = a->item[(size_t)j * (NODES / YOUNG)];
        lull_store(n, &n->k[1], node_new(YOUNG_ID(j)));
    }
    usleep(300000);     /* the cleaning's passes: back to back while they find work */
    UCHECK(!lull_marking(), "a mark started");
    lull_collect(LULL_GEN_NURSERY);
    uint64_t scanned = lull_nursery_cards_scanned(), cleaned = lull_nursery_cards_cleaned();
    printf("unit_clean_cards: %u nodes rewired, %u given a young child: the minor scanned %" PRIu64
           " dirty cards, %" PRIu64 " were cleaned before it\n", NODES, YOUNG, scanned, cleaned);
    UCHECK(scanned <= 2 * YOUNG, "the minor scanned %" PRIu64 " dirty cards: the cards the rewiring dirtied "
           "were not cleaned", scanned);

    a = roots[0];
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        UCHECK(n && n->id == i, "node %u damaged", i);
        UCHECK(n->k[0] == a->item[(i * 7u + 1u) % NODES], "node %u: k[0] changed", i);
        if (i % (NODES / YOUNG) == 0) {
            struct node *y = n->k[1];
            UCHECK(y && y->id == YOUNG_ID(i / (NODES / YOUNG)), "node %u: its young child is %p (id %" PRIx64
                   "): a card that pointed young was cleaned", i, (void *)y, y ? y->id : 0);
        }
    }
    lull_shutdown();
    printf("unit_clean_cards: ok\n");
    return 0;
}
