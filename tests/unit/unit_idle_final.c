/* lull_idle and a done mark's final pause (policy.c:
 * lull_policy_idle_major, predicted_final_pause_ns): before any final
 * pause has been measured, the prediction is the fixed cost of a minor's
 * pause (stopping the world and scanning roots, which a final pause does
 * too). So a call whose idle time is shorter than that (1 ns) leaves the
 * done mark alone, and one long enough (1 s) ends it. Taken as fitting
 * any idle time while unmeasured, the 1 ns call ran the final pause. */
#include <inttypes.h>
#include <unistd.h>

#include "gc/collect.h"
#include "lull.h"
#include "trace/mark.h"
#include "unit.h"
#include "base/util.h"

int main(void)
{
    UCHECK(lull_init("major=concurrent") == 0, "init");
    lull_collect(LULL_GEN_NURSERY);        /* measures the fixed cost of a pause */
    lull_gc_lock();
    lull_collect_locked(LULL_COLLECT_MAJOR_START, "unit");
    UCHECK(lull_marking(), "a concurrent mark runs");
    lull_gc_unlock();
    uint64_t t0 = lull_now_ns();
    while (!lull_mark_ready()) {
        UCHECK(lull_now_ns() - t0 < 10000000000ull, "the mark of an empty heap took 10 s");
        usleep(500);
    }
    lull_stats a;
    lull_get_stats(&a);
    int r = lull_idle(1);
    UCHECK(r == 0, "lull_idle(1 ns) with a done mark, no final pause measured yet, returned %d", r);
    UCHECK(lull_marking(), "lull_idle(1 ns) ended the mark");
    r = lull_idle(1000000000ull);
    lull_stats b;
    lull_get_stats(&b);
    UCHECK(r == 1, "lull_idle(1 s) with a done mark returned %d", r);
    UCHECK(!lull_marking(), "lull_idle(1 s) left the done mark running");
    UCHECK(b.majors_idle == a.majors_idle + 1 && b.collections_major == a.collections_major + 1,
           "majors_idle %" PRIu64 " -> %" PRIu64 ", collections_major %" PRIu64 " -> %" PRIu64, a.majors_idle,
           b.majors_idle, a.collections_major, b.collections_major);
    lull_shutdown();
    printf("unit_idle_final: ok\n");
    return 0;
}
