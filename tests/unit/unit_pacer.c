/* The pacer (gc/pacer.c): the heap goal from heap-growth and memory-limit,
 * and the trigger's correction by the last marks' error.
 *
 * Goal: with 100 MiB live, growth 100 allows 100 MiB before the next
 * major, growth 50 allows 50; a memory limit of 180 MiB with an 8 MiB
 * nursery cuts it to 72; a limit below live leaves the minimum (4 MiB); a
 * tiny live heap gets the minimum too.
 *
 * Correction: the trigger leaves room for 1.5 x the model (allocation rate
 * x live / mark rate). A mark that saw twice the model allocated moves
 * the correction halfway to 2, so the next trigger leaves 1.5x more room;
 * one that saw half moves it back down; one cut short before a quarter of
 * the heap moves nothing; one cut short at half counts its allocation
 * doubled. */
#include <inttypes.h>
#include <math.h>

#include "gc/pacer.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

static uint64_t room(uint64_t a, uint64_t t) { return a - t; }

int main(void)
{
    lull_pacer_init(100, 0);
    UCHECK(lull_pacer_allowance(100 * MIB, 8 * MIB) == 100 * MIB, "growth 100: allowance = live");
    UCHECK(lull_pacer_goal() == 200 * MIB, "goal %" PRIu64 " MiB, 200 expected", lull_pacer_goal() / MIB);
    lull_pacer_init(50, 0);
    UCHECK(lull_pacer_allowance(100 * MIB, 8 * MIB) == 50 * MIB, "growth 50: allowance half of live");
    lull_pacer_init(100, 180 * MIB);
    UCHECK(lull_pacer_allowance(100 * MIB, 8 * MIB) == 72 * MIB, "a limit of 180 MiB: allowance 72 MiB, got %" PRIu64,
           lull_pacer_allowance(100 * MIB, 8 * MIB) / MIB);
    UCHECK(lull_pacer_near_limit(170 * MIB) && !lull_pacer_near_limit(100 * MIB), "near the limit from 7/8 of it");
    lull_pacer_init(100, 64 * MIB);
    UCHECK(lull_pacer_allowance(100 * MIB, 8 * MIB) == 4 * MIB, "live over the limit: the minimum allowance");
    lull_pacer_init(100, 0);
    UCHECK(lull_pacer_allowance(1 * MIB, 8 * MIB) == 4 * MIB, "a tiny live heap: the minimum allowance");
    UCHECK(!lull_pacer_near_limit(1ull << 40), "no limit: never near it");

    /* 256 MiB allowance, 256 MiB live, marks at 1 byte/ns, allocation at
     * 0.125 bytes/ns: the model is 32 MiB, the room 48. */
    lull_pacer_init(100, 0);
    uint64_t a = 256 * MIB, live = 256 * MIB;
    uint64_t t0 = lull_pacer_trigger(a, live, 0.125, 1.0);
    UCHECK(room(a, t0) > 47 * MIB && room(a, t0) < 49 * MIB, "room %" PRIu64 " MiB, 48 expected", room(a, t0) / MIB);
    lull_pacer_note_mark_end(0, 64 * MIB, 1.0);     /* twice the model */
    UCHECK(fabs(lull_pacer_correction() - 1.5) < 1e-9, "correction %.3f, 1.5 expected", lull_pacer_correction());
    uint64_t t1 = lull_pacer_trigger(a, live, 0.125, 1.0);
    UCHECK(room(a, t1) > 71 * MIB && room(a, t1) < 73 * MIB, "after a mark that saw twice the model: room %" PRIu64
           " MiB, 72 expected", room(a, t1) / MIB);
    lull_pacer_note_mark_end(10 * MIB, 26 * MIB, 1.0);  /* half the model */
    UCHECK(fabs(lull_pacer_correction() - 1.0) < 1e-9, "correction %.3f, 1.0 expected", lull_pacer_correction());
    lull_pacer_trigger(a, live, 0.125, 1.0);
    lull_pacer_note_mark_end(0, 64 * MIB, 0.1);     /* cut short at a tenth: no sample */
    UCHECK(fabs(lull_pacer_correction() - 1.0) < 1e-9, "a stub mark moved the correction to %.3f",
           lull_pacer_correction());
    lull_pacer_note_mark_end(0, 32 * MIB, 0.5);     /* cut short at half: counted as 64 MiB */
    UCHECK(fabs(lull_pacer_correction() - 1.5) < 1e-9, "correction %.3f after a half mark, 1.5 expected",
           lull_pacer_correction());
    for (int i = 0; i < 20; i++)
        lull_pacer_note_mark_end(0, 1024 * MIB, 1.0);
    UCHECK(lull_pacer_correction() <= 4.0, "the correction is bounded: %.3f", lull_pacer_correction());
    uint64_t t2 = lull_pacer_trigger(a, live, 0.125, 1.0);
    UCHECK(t2 >= a / 8, "the trigger stays at an eighth of the allowance at least");
    printf("pacer: rooms %" PRIu64 ", %" PRIu64 " MiB; trigger after twenty large errors %" PRIu64 " MiB\n", room(a, t0) / MIB,
           room(a, t1) / MIB, t2 / MIB);
    return 0;
}
