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
 * 16 MiB). A mark cut short before its job got through a quarter of the
 * heap is no sample when there is an estimate already (then the two
 * marks' wall times no longer cancel out: the check allows for that).
 * Nor is a mark begun with its allowance already used up (late_first_mark).
 * A mark whose final pause waited for an idle call counts its rate to the
 * end of its background job, not to the pause (waited_final_pause). */
#include <inttypes.h>
#include <unistd.h>

#include "gc/collect.h"
#include "lull.h"
#include "trace/mark.h"
#include "gc/policy.h"
#include "space/meter.h"
#include "base/util.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static uint64_t one_mark(double done)
{
    lull_gc_lock();
    lull_policy_note_mark_start();
    lull_meter_allocated(16 * MIB);
    lull_gc_unlock();
    usleep(50000);
    lull_gc_lock();
    lull_policy_after_major(64 * MIB, done);
    uint64_t trigger, allowance;
    lull_policy_pacing(&trigger, &allowance);
    lull_gc_unlock();
    UCHECK(allowance == 64 * MIB, "allowance %" PRIu64, allowance);
    return trigger;
}

/* The trigger after a whole mark and then, if `then` > 0, a second one
 * that got through only that share. */
static uint64_t trigger_after(double done, double then)
{
    UCHECK(lull_init("major=concurrent") == 0, "init");
    uint64_t trigger = one_mark(done);
    if (then > 0)
        trigger = one_mark(then);
    lull_shutdown();
    uint64_t allowance = 64 * MIB;
    printf("a mark that got through %.0f%% of the live heap%s: the next starts after %.1f MiB of %.1f MiB\n",
           (then > 0 ? then : done) * 100, then > 0 ? " after a whole one" : "", (double)trigger / MIB,
           (double)allowance / MIB);
    return trigger;
}

/* A first mark begun with its allowance already used up: a large
 * allocation (graph's 32 MB array) took the program past the trigger and
 * the 4 MiB first allowance at once, and the mark was finished at the
 * next slow path, nothing allocated in between. It measures no rate: the
 * next trigger is half the allowance, as before any measurement (counted,
 * an allocation rate of 0 put it at seven eighths, 56 MiB of 64), and a
 * whole mark after it is measured as if it were the first (trigger 40). */
static void late_first_mark(uint64_t *after_late, uint64_t *after_whole)
{
    UCHECK(lull_init("major=concurrent") == 0, "init");
    lull_gc_lock();
    lull_meter_allocated(40 * MIB);
    lull_policy_note_mark_start();
    lull_gc_unlock();
    usleep(50000);
    lull_gc_lock();
    lull_policy_after_major(64 * MIB, 0.0);
    uint64_t allowance;
    lull_policy_pacing(after_late, &allowance);
    lull_gc_unlock();
    *after_whole = one_mark(1.0);
    lull_shutdown();
    printf("a first mark begun past its allowance: the next starts after %.1f MiB of 64, and after a whole one "
           "%.1f MiB\n", (double)*after_late / MIB, (double)*after_whole / MIB);
}

/* A real mark of an almost empty heap, whose final pause comes WAIT_MS
 * after it began (as one that waits for the program's next lull_idle
 * call, policy.c: final_pause_waits_for_idle), 16 MiB allocated
 * meanwhile. The room before the next is 1.5 * 16 MiB * (the mark's time
 * / WAIT_MS) of the 4 MiB allowance. Counted to the final pause, the mark
 * took the whole WAIT_MS: a room of 24 MiB, and the trigger at its floor,
 * an eighth of the allowance (0.5 MiB); counted to the end of its
 * background job (some ms), above 1 MiB for any mark under 40 ms. Returns
 * the trigger; *mark_ms gets the mark's time. */
#define WAIT_MS 300
static uint64_t waited_final_pause(double *mark_ms)
{
    UCHECK(lull_init("major=concurrent") == 0, "init");
    lull_gc_lock();
    uint64_t t0 = lull_now_ns();
    lull_collect_locked(LULL_COLLECT_MAJOR_START, "unit");
    UCHECK(lull_marking(), "a concurrent mark runs");
    lull_meter_allocated(16 * MIB);
    lull_gc_unlock();
    while (!lull_mark_ready()) {
        UCHECK(lull_now_ns() - t0 < (uint64_t)WAIT_MS * 1000000, "the mark of an empty heap took %d ms", WAIT_MS);
        usleep(500);
    }
    *mark_ms = (lull_now_ns() - t0) / 1e6;
    usleep(WAIT_MS * 1000);
    lull_gc_lock();
    lull_collect_locked(LULL_COLLECT_MAJOR_FINISH, "unit");
    uint64_t trigger, allowance;
    lull_policy_pacing(&trigger, &allowance);
    lull_gc_unlock();
    lull_shutdown();
    UCHECK(allowance == 4 * MIB, "allowance %" PRIu64 " KiB, 4 MiB expected", allowance >> 10);
    printf("a mark of %.1f ms whose final pause came after %d ms: the next starts after %.2f MiB of 4\n", *mark_ms,
           WAIT_MS, (double)trigger / MIB);
    return trigger;
}

int main(void)
{
    double mark_ms;
    uint64_t waited = waited_final_pause(&mark_ms);
    UCHECK(mark_ms >= 40 || waited > 1 * MIB,
           "a mark of %.1f ms whose final pause waited: trigger %.2f MiB (0.5: counted to the pause)", mark_ms,
           (double)waited / MIB);

    uint64_t late, then;
    late_first_mark(&late, &then);
    UCHECK(late == 32 * MIB, "a mark begun past its allowance: trigger %.1f MiB, 32 expected (no measurement)",
           (double)late / MIB);
    UCHECK(then > 39 * MIB && then < 41 * MIB, "a whole mark after it: trigger %.1f MiB, 40 expected",
           (double)then / MIB);
    uint64_t whole = trigger_after(1.0, 0), half = trigger_after(0.5, 0), stub = trigger_after(1.0, 0.1);
    UCHECK(whole > 39 * MIB && whole < 41 * MIB, "whole mark: trigger %" PRIu64 " MiB, 40 expected", whole / MIB);
    UCHECK(half > 15 * MIB && half < 17 * MIB,
           "a mark cut short at half: trigger %" PRIu64 " MiB, 16 expected (the measured rate ignored it)",
           half / MIB);
    /* A mark cut short before its job got through a quarter of the heap
     * (graph's first, as it began) is no sample: the estimate stands. */
    /* Here the wall times no longer cancel: the program's allocation rate
     * is the average of the two marks', each 16 MiB over its own ~50 ms,
     * so scheduling moves the trigger by a few MiB around 40. Counted as
     * a sample, the tenth would have put it near 20. */
    UCHECK(stub > 30 * MIB && stub < 50 * MIB,
           "a mark cut short at a tenth after a whole one: trigger %" PRIu64 " MiB, about 40 expected (near 20 "
           "if it counted)", stub / MIB);
    printf("unit_pacing: ok\n");
    return 0;
}
