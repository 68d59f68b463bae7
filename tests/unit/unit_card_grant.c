/* Card grants (policy.h: lull_policy_card_grant, LULL_POLICY_CARDS): a
 * minor for the cards is judged with what the nursery handed out. On
 * bench/graph the barrier asked for a minor when a thread had marked a
 * whole budget of cards, sized for an empty nursery: asked late in a
 * nursery, the minor copied the nursery's survivors on top of the cards,
 * 5-9 ms at the 5 ms target (26 of graph's minors over 4.5 ms).
 *
 * The model: 16 usual minors of a whole nursery at 0.8 ns a byte, a card
 * at 100 ns (unmeasured), a 5 ms target. Then:
 *  - nothing handed out: the barrier's first asks get more grants (the
 *    budget is for an empty nursery), and the minor comes within it;
 *  - 3/4 of the nursery handed out: the first ask runs the minor;
 *  - cards of used-up grants and then allocation: the allocation's slow
 *    path runs a minor for the cards before the nursery fills.
 * Before grants every ask ran a minor, and allocation never did. */
#include "gc/collect.h"
#include "lull.h"
#include "space/nursery.h"
#include "gc/policy.h"
#include "trace/workers.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static void fake_minor(uint64_t handed, double ns_per_byte)
{
    uint64_t trace = (uint64_t)(ns_per_byte * (double)handed);
    lull_workers_stop_background();   /* as a pause does: no job reads the block reserve */
    lull_policy_note_promoted(handed / 2, handed);
    lull_policy_set_card_budgets(handed / 2, 1000, trace);
    lull_policy_after_minor(handed, trace, trace + 50000, 0);
}

/* Asks of used-up grants until the policy runs a minor (at most 64). */
static unsigned asks_until_minor(void)
{
    for (unsigned k = 1; k <= 64; k++) {
        const char *reason = "";
        if (lull_policy_decide(LULL_POLICY_CARDS, lull_policy_card_grant(), &reason) == LULL_GEN_NURSERY)
            return k;
    }
    return 0;
}

static const lull_type small_type = { .name = "small", .size = 64 };

/* Allocate (gc lock not held) until the nursery handed out `bytes`. */
static void hand_out(uint64_t bytes)
{
    while (lull_nursery_handed() < bytes)
        UCHECK(lull_alloc(&small_type), "allocation");
}

int main(void)
{
    UCHECK(lull_init("pause-target=5ms,nursery-size=4m") == 0, "init");
    lull_gc_lock();
    for (int i = 0; i < 16; i++)
        fake_minor(lull_nursery_size(), 0.8);
    size_t nursery = lull_nursery_size();
    uint32_t budget = lull_policy_card_budget(), grant = lull_policy_card_grant();
    printf("unit_card_grant: nursery %zu KiB, budget %u cards, grants of %u, a card %.1f ns\n", nursery >> 10,
           budget, grant, lull_policy_card_ns());
    UCHECK(grant < budget, "the grant (%u) is the whole budget (%u)", grant, budget);

    unsigned empty = asks_until_minor();
    printf("unit_card_grant: nothing handed out (%llu KiB): a minor at ask %u\n",
           (unsigned long long)lull_nursery_handed() >> 10, empty);
    UCHECK(empty >= 2, "the first used-up grant ran a minor with the nursery empty (ask %u)", empty);
    UCHECK((uint64_t)empty * grant <= budget, "%u grants of %u passed the budget of %u", empty, grant, budget);
    fake_minor(lull_nursery_size(), 0.8);

    /* Grants used up with the nursery empty, then allocation: the
     * slow path (or a TLAB refill's own ask) runs a minor for the cards. */
    const char *reason = "";
    UCHECK(lull_policy_decide(LULL_POLICY_CARDS, grant, &reason) < 0, "a minor at the first grant of a fresh nursery");
    UCHECK(lull_policy_decide(LULL_POLICY_CARDS, grant, &reason) < 0, "a minor at the second grant");
    uint64_t asked = lull_policy_minors_for_cards();
    bool ran = false;
    while (!ran && lull_nursery_handed() < nursery - nursery / 8) {
        ran = lull_policy_decide(LULL_POLICY_SLOW_ALLOC, 0, &reason) == LULL_GEN_NURSERY;
        lull_gc_unlock();
        hand_out(lull_nursery_handed() + 64 * 1024);
        lull_gc_lock();
        ran = ran || lull_policy_minors_for_cards() > asked;
    }
    printf("unit_card_grant: 2 grants used up, then allocation: a minor for the cards %s (%llu KiB handed out)\n",
           ran ? "ran" : "never ran", (unsigned long long)lull_nursery_handed() >> 10);
    UCHECK(ran, "no minor for the cards before the nursery filled");
    fake_minor(lull_nursery_size(), 0.8);
    lull_gc_unlock();

    hand_out(nursery * 3 / 4);
    lull_gc_lock();
    unsigned late = asks_until_minor();
    printf("unit_card_grant: %llu KiB handed out: a minor at ask %u\n",
           (unsigned long long)lull_nursery_handed() >> 10, late);
    UCHECK(late == 1, "with 3/4 of the nursery handed out the minor came at ask %u", late);
    fake_minor(lull_nursery_size(), 0.8);
    lull_gc_unlock();

    lull_shutdown();
    return 0;
}
