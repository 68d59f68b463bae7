/* Pacing of concurrent majors (policy.c): a mark that the allowance cut
 * short, whose final pause had to mark the rest with the world stopped,
 * got through only part of the live heap in the time it ran. The rate it
 * measured must say so, so that the next mark starts earlier; counted as
 * if it had marked everything, the next mark started as late, was cut
 * short again, and half the game loop's majors were synchronous.
 *
 * The trigger leaves room for 1.5 times what the program allocates while
 * a mark runs: 1.5 * alloc_rate * allowance / mark_rate, in which the
 * mark's wall time cancels out: with 64 MiB live, 16 MiB allocated during
 * the mark, a mark that finished on its own leaves 24 MiB of room
 * (trigger 40 MiB), one that got through half leaves 48 MiB (trigger
 * 16 MiB). */
#include <inttypes.h>
#include <unistd.h>

#include "collect.h"
#include "lull.h"
#include "policy.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static uint64_t trigger_after(double done)
{
    UCHECK(lull_init("major=concurrent") == 0, "init");
    lull_gc_lock();
    lull_policy_note_mark_start();
    lull_policy_note_allocated(16 * MIB);
    lull_gc_unlock();
    usleep(10000);
    lull_gc_lock();
    lull_policy_after_major(64 * MIB, done);
    uint64_t trigger, allowance;
    lull_policy_pacing(&trigger, &allowance);
    lull_gc_unlock();
    lull_shutdown();
    UCHECK(allowance == 64 * MIB, "allowance %" PRIu64, allowance);
    printf("a mark that got through %.0f%% of the live heap: the next starts after %.1f MiB of %.1f MiB\n",
           done * 100, (double)trigger / MIB, (double)allowance / MIB);
    return trigger;
}

int main(void)
{
    uint64_t whole = trigger_after(1.0), half = trigger_after(0.5);
    UCHECK(whole > 39 * MIB && whole < 41 * MIB, "whole mark: trigger %" PRIu64 " MiB, 40 expected", whole / MIB);
    UCHECK(half > 15 * MIB && half < 17 * MIB,
           "a mark cut short at half: trigger %" PRIu64 " MiB, 16 expected (the measured rate ignored it)",
           half / MIB);
    printf("unit_pacing: ok\n");
    return 0;
}
