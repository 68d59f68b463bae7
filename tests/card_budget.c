/*
 * card_budget — a thread that stores young references into old objects
 * without allocating gets a minor from its write barrier once it has
 * marked its share of the cards the next minor may scan within the pause
 * target (lull__cards_slow, policy.c).
 *
 * Without that, nothing allocates during such a loop and no minor can run:
 * the next minor scans every card the loop marked. bench/graph links each
 * garbage graph's nodes with random edges after allocating them; the edges
 * to the nodes still in the nursery marked 100,000-140,000 cards, and the
 * minor after the loop took 7-10 ms at a 2 ms target.
 *
 * Here 160,000 old objects of 128 bytes (one card each) each get a
 * reference to one of 2,048 young targets, in a loop that allocates
 * nothing: minors must run during the loop (minors_for_cards counts them),
 * and after it every reference must lead to its intact target. The
 * targets are held by precise roots only, so a minor moves them and the
 * old objects' slots must have been updated. The target is 500 us so that
 * the loop marks more cards than any fitted budget allows: a card is taken
 * to cost at least 5 ns (CARD_NS_MIN, policy.c), so the budget is at most
 * 100,000 cards. (At 2 ms it could reach 400,000, and it did pass 160,000
 * once in CI, under ASan, when the fit came out below 12.5 ns a card.)
 * Then LULL_GC_DEBUG=
 * card-budget=100 runs a minor for every 100 new cards: 40 batches of
 * 1,000 stores to new young targets run at least 40.
 */
#include "check.h"

#define NOLD     160000u
#define NTARGETS 2048u

typedef struct holder {
    lull_header h;
    void *ref;
    uint64_t id;
    uint64_t pad[13];       /* 128 bytes: one card each */
} holder;
_Static_assert(sizeof(holder) == 128, "a holder fills one card");

typedef struct target {
    lull_header h;
    uint64_t id, check;
} target;

typedef struct holders {
    lull_array_header a;
    void *slot[];
} holders;

static const lull_type holder_type = { .name = "holder", .size = sizeof(holder), .refs = 1u << 1 };
static const lull_type target_type = { .name = "target", .size = sizeof(target) };
static const lull_type holders_type = { .name = "holders", .size = sizeof(holders), .elem_size = sizeof(void *),
                                        .elem_refs = 1 };

static holders *olds;
static void *targets[NTARGETS];

static lull_stats stats(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s;
}

static NOINLINE void make_olds(void)
{
    olds = lull_alloc_array(&holders_type, NOLD);
    CHECK(olds, "lull_alloc_array");
    for (uint32_t i = 0; i < NOLD; i++) {
        holder *h = lull_alloc(&holder_type);
        CHECK(h, "lull_alloc");
        h->id = i;
        lull_store(olds, &olds->slot[i], h);
    }
    /* Promote them all: the array and the holders are old from here on. */
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);
}

static NOINLINE void make_targets(void)
{
    for (uint32_t j = 0; j < NTARGETS; j++) {
        target *t = lull_alloc(&target_type);
        CHECK(t, "lull_alloc");
        t->id = j;
        t->check = mix64(j);
        targets[j] = t;
    }
}

/* The loop under test: no allocation, one new card per store. */
static NOINLINE void link_range(uint32_t from, uint32_t n)
{
    for (uint32_t i = from; i < from + n; i++) {
        holder *h = olds->slot[i];
        LULL_SET(h, ref, targets[i % NTARGETS]);
    }
}

/* Every holder of [0, n) intact, its reference to an intact target of
 * its index (the very object targets[] holds, when `same`). */
static NOINLINE void verify(uint32_t n, bool same)
{
    lull_collect(LULL_GEN_NURSERY);
    for (uint32_t i = 0; i < n; i++) {
        holder *h = olds->slot[i];
        CHECK(h->id == i, "holder %u has id %" PRIu64, i, h->id);
        target *t = h->ref;
        CHECK(!same || t == targets[i % NTARGETS], "holder %u points to %p, its target is at %p", i, (void *)t,
              targets[i % NTARGETS]);
        CHECK(t->id == i % NTARGETS && t->check == mix64(t->id), "holder %u: target damaged (id %" PRIu64 ")", i,
              t->id);
    }
}

static void start(const char *params)
{
    CHECK(lull_init(params) == 0, "lull_init");
    CHECK(lull_root_add(&olds, sizeof olds) == 0, "lull_root_add");
    CHECK(lull_root_add_refs(targets, NTARGETS) == 0, "lull_root_add_refs");
    make_olds();
}

int main(void)
{
    /* The fitted budget: the loop runs a minor. */
    unsetenv("LULL_GC_DEBUG");
    start("nursery-size=8m,pause-target=500us");
    make_targets();
    lull_stats before = stats();
    link_range(0, NOLD);
    lull_stats after = stats();
    uint64_t minors = after.collections_minor - before.collections_minor,
             for_cards = after.minors_for_cards - before.minors_for_cards;
    printf("card_budget: %u stores into old objects ran %" PRIu64 " minors (%" PRIu64 " asked for by the barrier)\n",
           NOLD, minors, for_cards);
    CHECK(for_cards >= 1 && minors >= for_cards,
          "no minor ran while %u cards were marked without allocation (%" PRIu64 " minors)", NOLD, minors);
    verify(NOLD, true);
    lull_shutdown();

    /* LULL_GC_DEBUG=card-budget=100: batches of 1,000 stores, each to new
     * young targets, each runs a minor. */
    setenv("LULL_GC_DEBUG", "card-budget=100", 1);
    start("nursery-size=8m,pause-target=2ms");
    enum { BATCHES = 40, BATCH = 1000 };
    before = stats();
    for (uint32_t b = 0; b < BATCHES; b++) {
        make_targets();
        link_range(b * BATCH, BATCH);
    }
    after = stats();
    for_cards = after.minors_for_cards - before.minors_for_cards;
    printf("card_budget: with card-budget=100, %d batches of %d stores ran %" PRIu64 " minors from the barrier\n",
           BATCHES, BATCH, for_cards);
    CHECK(for_cards >= BATCHES, "card-budget=100: %" PRIu64 " minors from the barrier in %d batches", for_cards,
          BATCHES);
    verify(BATCHES * BATCH, false);
    lull_shutdown();
    puts("card_budget: ok");
    return 0;
}
