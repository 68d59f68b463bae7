/* A nursery the barrier's minors keep from filling is still sized from
 * them (policy.c: lull_policy_after_minor). On bench/gameloop at 2 ms the
 * policy could settle into minors nearly all the barrier's, mid-frame with
 * the frame's 1 MiB alive, 3.2-3.5 ms each, in a 2.7 MiB nursery that never
 * filled: the barrier's minors did not update the cost per byte, so the
 * nursery was never resized. One that came with a quarter of the nursery
 * or more handed out now counts as a usual minor does.
 *
 * Here: 16 usual minors of the whole nursery at 0.4 ns a byte (it grows to
 * its 4 MiB ceiling), then 16 minors the barrier asks for, each with 40% of
 * the nursery handed out and a copying phase of 2.5 ns a byte (3.5-4 ms at
 * first): the nursery must shrink until such a minor is predicted to fit
 * 2 ms, below 1 MiB. And 16 barrier minors of 5% of the nursery each (the
 * graph benchmark's edge loop: cards, not allocation) must leave it where
 * it is. */
#include "gc/collect.h"
#include "lull.h"
#include "space/nursery.h"
#include "gc/policy.h"
#include "trace/workers.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static void minor(bool asked, uint64_t handed, double ns_per_byte)
{
    const char *reason = "";
    if (asked)
        UCHECK(lull_policy_decide(LULL_POLICY_CARDS, lull_policy_card_budget(), &reason) == LULL_GEN_NURSERY,
               "a minor for the cards (the thread used up its whole budget)");
    uint64_t trace = (uint64_t)(ns_per_byte * (double)handed);
    lull_workers_stop_background();   /* as a pause does: no job reads the block reserve */
    lull_policy_note_promoted(handed / 2, handed);
    lull_policy_set_card_budgets(handed / 2, 1000, trace);
    lull_policy_after_minor(handed, trace, trace + 50000, 0);
}

int main(void)
{
    UCHECK(lull_init("pause-target=2ms") == 0, "init");
    lull_gc_lock();
    for (int i = 0; i < 16; i++)
        minor(false, lull_nursery_size(), 0.4);
    size_t usual = lull_nursery_size();
    printf("unit_barrier_sizing: after usual minors at 0.4 ns a byte: nursery %zu KiB\n", usual >> 10);
    UCHECK(usual == 4 * MIB, "the nursery is %zu KiB after minors at 0.4 ns a byte, not its 4 MiB ceiling",
           usual >> 10);

    for (int i = 0; i < 16; i++)
        minor(true, lull_nursery_size() / 20, 2.5);
    size_t small = lull_nursery_size();
    printf("unit_barrier_sizing: after barrier minors of 5%% of the nursery: %zu KiB\n", small >> 10);
    UCHECK(small == usual, "barrier minors of 5%% of the nursery resized it to %zu KiB", small >> 10);

    for (int i = 0; i < 16; i++)
        minor(true, lull_nursery_size() * 2 / 5, 2.5);
    size_t big = lull_nursery_size();
    printf("unit_barrier_sizing: after barrier minors of 40%% of the nursery at 2.5 ns a byte: %zu KiB\n",
           big >> 10);
    UCHECK(big < MIB, "the nursery is still %zu KiB after 16 barrier minors of 40%% of it at 2.5 ns a byte",
           big >> 10);
    lull_gc_unlock();
    lull_shutdown();
    puts("unit_barrier_sizing: ok");
    return 0;
}
