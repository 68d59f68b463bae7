/* The nursery leaves a margin under the pause target for the model's
 * error (policy.c: note_error, margin), and a wait for the background job
 * is not the model's error.
 * 1. Minors alternate between 0.3 and 0.7 ns a nursery byte (a mean of
 *    0.5): an 8 MiB nursery is predicted at 4.3 ms, under the 5 ms target,
 *    but every other minor takes 6 ms. With the margin the nursery comes
 *    down until the slow ones fit the target too.
 * 2. Minors at a steady 0.5 ns a byte whose pauses each include 20 ms of
 *    waiting for the background job: the nursery stays at 8 MiB (the wait
 *    is reported apart and the nursery's size cannot change it).
 * 3. Before any minor the spread is unknown: the first nursery leaves the
 *    widest margin (1.5), so that the first minor, at the unmeasured cost
 *    of a byte, is predicted at the target over 1.5, not at the target.
 * 4. The margin is kept apart for minors inside a concurrent mark, and a
 *    mark's start sizes the nursery with that one: after steady minors at
 *    0.55 ns a byte outside any mark (margin 1.0, 8 MiB predicted at
 *    4.7 ms), a mark begins with no minor of its own measured yet (margin
 *    1.5): the nursery must come down to what fits the target over 1.5
 *    (about 5.9 MiB). The start used to size it with the outside margin,
 *    before the mark is flagged as running, and left it at 8 MiB. */
#include <inttypes.h>

#include "gc/policy.h"
#include "base/gclock.h"
#include "lull.h"
#include "space/nursery.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)
#define FIXED_NS 100000u

static void minor(double ns_per_byte, uint64_t job_wait_ns)
{
    uint64_t handed = lull_nursery_size();
    uint64_t trace = (uint64_t)(ns_per_byte * (double)handed);
    lull_gc_lock();
    lull_policy_after_minor(handed, trace, trace + FIXED_NS + job_wait_ns, job_wait_ns);
    lull_gc_unlock();
}

int main(void)
{
    UCHECK(lull_init("nursery-size=8m,pause-target=5ms") == 0, "init");
    double first_ms = lull_policy_predicted_minor_ns() / 1e6;
    printf("minor_margin: the first nursery %zu KiB, predicted %.2f ms, margin x%.2f\n", lull_nursery_size() >> 10,
           first_ms, lull_policy_minor_margin());
    UCHECK(first_ms <= 5.0 / 1.5 * 1.01, "the first minor is predicted at %.2f ms: no margin before any measurement",
           first_ms);
    for (int i = 0; i < 64; i++)
        minor(i % 2 ? 0.7 : 0.3, 0);
    size_t n = lull_nursery_size();
    double slow_ms = (0.7 * (double)n + FIXED_NS) / 1e6;
    printf("minor_margin: a spread of 0.3-0.7 ns a byte: nursery %zu KiB, margin x%.2f, a slow minor %.2f ms\n",
           n >> 10, lull_policy_minor_margin(), slow_ms);
    UCHECK(slow_ms <= 5.0 * 1.05, "the slow minors of a %zu KiB nursery take %.2f ms, over the 5 ms target",
           n >> 10, slow_ms);
    lull_shutdown();

    UCHECK(lull_init("nursery-size=8m,pause-target=5ms") == 0, "init");
    for (int i = 0; i < 64; i++)
        minor(0.5, 20000000);
    n = lull_nursery_size();
    printf("minor_margin: 20 ms job waits at 0.5 ns a byte: nursery %zu KiB, margin x%.2f\n", n >> 10,
           lull_policy_minor_margin());
    UCHECK(n == 8 * MIB, "waits for the job shrank the nursery to %zu KiB", n >> 10);
    lull_shutdown();

    UCHECK(lull_init("nursery-size=8m,pause-target=5ms") == 0, "init");
    for (int i = 0; i < 64; i++)
        minor(0.55, 0);
    size_t outside = lull_nursery_size();
    double outside_margin = lull_policy_minor_margin();
    lull_gc_lock();
    lull_policy_note_mark_start();
    lull_gc_unlock();
    n = lull_nursery_size();
    double at_start_ms = (0.55 * 1.5 * (double)n + FIXED_NS) / 1e6;
    printf("minor_margin: 0.55 ns a byte: nursery %zu KiB (margin x%.2f); at a mark's start %zu KiB, a minor "
           "%.2f ms at 1.5 times the model\n", outside >> 10, outside_margin, n >> 10, at_start_ms);
    UCHECK(outside == 8 * MIB && outside_margin < 1.1, "steady minors left %zu KiB, margin x%.2f: the case shows "
           "nothing", outside >> 10, outside_margin);
    UCHECK(at_start_ms <= 5.0 * 1.02, "a mark's start left the nursery at %zu KiB: a minor at 1.5 times the model "
           "takes %.2f ms, over the 5 ms target (sized with the outside margin)", n >> 10, at_start_ms);
    lull_shutdown();
    return 0;
}
