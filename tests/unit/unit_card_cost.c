/* The card budget's cost of a card (policy.c: lull_policy_card_ns). The
 * least-squares fit follows the usual minors, whose cards are few; a minor
 * the barrier asked for is mostly cards, scattered ones that cost more.
 * On bench/graph at 2 ms the fit said 30 ns a card while the edge loop's
 * cards took 75-112: budgets of 64,000 cards and minors of 4.8-7.3 ms.
 *
 * Here 64 usual minors (1-3 MiB handed out, 1 ns a byte; 200-2,000 cards,
 * 30 ns each, 0.1 ms fixed) fit 30 ns; the budget still counts 100 ns a
 * card, as no minor the barrier asked for has measured one: 19,000 cards
 * for the 1.9 ms the 2 ms target leaves. Then the barrier asks for a minor
 * that promotes 900 KiB and scans 64,000 cards in 9.6 ms more (150 ns
 * each): the next budget must let a minor of such cards fit the target, at
 * most 2 ms / 150 ns = 13,333 cards. Then eight such minors at 40 ns a
 * card: the budget grows back past 1.9 ms / 50 ns = 38,000 (the moving
 * average halves the distance each time; the fit, which still weighs the
 * 150 ns minor a little, is the floor: 47 ns). Without the measurement the
 * budget stays at 19,000 and both checks fail. Each budget is set in the
 * pause of the minor that measured (collect.c), so it counts with that
 * minor already: a budget set before the measurement lets the next minor
 * of the edge loop overshoot as much.
 *
 * Last, minors the barrier asks for while everything handed out survives
 * (bench/gameloop mid-frame): their copying is not the cards' cost, and
 * the budget stays where the cards' own cost puts it. */
#include <inttypes.h>

#include "gc/collect.h"
#include "lull.h"
#include "gc/policy.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

/* What collect.c tells the policy about a minor: in its pause, then after. */
static void minor(uint64_t handed, uint64_t promoted, uint64_t cards, uint64_t trace_ns)
{
    lull_policy_set_card_budgets(promoted, cards, trace_ns);
    lull_policy_after_minor(handed, trace_ns, trace_ns + 100000, 0);
}

static uint32_t asked_minor(uint64_t promoted, uint64_t cards, uint64_t trace_ns)
{
    const char *reason = "";
    UCHECK(lull_policy_decide(LULL_POLICY_CARDS, lull_policy_card_budget(), &reason) == LULL_GEN_NURSERY,
               "a minor for the cards (the thread used up its whole budget)");
    minor(900 * 1024, promoted, cards, trace_ns);
    return lull_policy_card_budget();
}

int main(void)
{
    UCHECK(lull_init("pause-target=2ms") == 0, "init");
    lull_gc_lock();
    for (unsigned i = 0; i < 64; i++) {
        uint64_t handed = MIB + (i % 3) * MIB, cards = 200 + (i * 37) % 1800;
        uint64_t trace = handed + 30 * cards;
        minor(handed, handed, cards, trace);   /* everything survives, at 1 ns a byte */
    }
    uint32_t first = lull_policy_card_budget();
    printf("unit_card_cost: after 64 usual minors: a card %.1f ns, budget %u cards\n", lull_policy_card_ns(), first);
    UCHECK(first >= 18500 && first <= 19500, "budget %u before any minor the barrier asked for, 19,000 expected",
           first);

    uint32_t costly = asked_minor(900 * 1024, 64000, 9600000 + 900 * 1024);
    printf("unit_card_cost: after a minor of 64000 cards in 9.6 ms: a card %.1f ns, budget %u cards\n",
           lull_policy_card_ns(), costly);
    UCHECK((double)costly * 150.0 <= 2e6, "a budget of %u cards at 150 ns each exceeds the 2 ms target", costly);

    uint32_t cheap = 0;
    for (int i = 0; i < 8; i++)
        cheap = asked_minor(900 * 1024, 64000, 64000 * 40 + 900 * 1024);
    printf("unit_card_cost: after 8 minors at 40 ns a card: a card %.1f ns, budget %u cards\n",
           lull_policy_card_ns(), cheap);
    UCHECK(cheap >= 38000, "the budget stayed at %u cards after 8 minors at 40 ns a card", cheap);

    /* The barrier asks in the middle of the program's work, when all it
     * handed out is alive: 1.5 MiB promoted (1.57 ms at the fitted 1 ns a
     * byte) and 4,000 cards at 40 ns, 1.73 ms in all. Its cards cost 40 ns
     * each, as before: the budget stays. Counting the copying as the
     * cards' (432 ns a card) would cut it to a tenth. */
    uint32_t busy = 0;
    for (int i = 0; i < 4; i++)
        busy = asked_minor(3 * MIB / 2, 4000, 3 * MIB / 2 + 4000 * 40);
    printf("unit_card_cost: after 4 minors of 1.5 MiB promoted and 4000 cards at 40 ns: a card %.1f ns, "
           "budget %u cards\n", lull_policy_card_ns(), busy);
    UCHECK(busy >= 40000, "the budget fell to %u cards: the copying of 1.5 MiB of survivors was counted as the "
           "cost of 4,000 cards", busy);
    lull_gc_unlock();
    lull_shutdown();
    puts("unit_card_cost: ok");
    return 0;
}
