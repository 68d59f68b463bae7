/* A paced thread is woken when the drain reaches what it waits for, not at
 * every step of the drain (trace/mark.c: lull_mark_wait_progress). A
 * thread ahead of the markers waits for the drain to get through a share
 * of the last mark's work; the marker used to wake every waiter every 64
 * objects, each of which went back to sleep (the drain was not far
 * enough), thousands of context switches a mark. Here a 300,000-node list
 * is marked by one worker slowed by mark-delay while this thread waits for
 * 90% of the work: at most a few of its waits may end early (a preclean
 * pass or the mark's end are steps too; a wait that timed out is no wake). */
#include <inttypes.h>
#include <stdlib.h>

#include "base/gclock.h"
#include "base/util.h"
#include "gc/collect.h"
#include "lull.h"
#include "trace/mark.h"
#include "unit.h"

struct node {
    lull_header h;
    struct node *next;
};
static const lull_type node_type = { .name = "node", .size = sizeof(struct node),
                                     .refs = LULL_REF(struct node, next) };
static struct node *root[1];
#define WAIT_NS 200000000ull

int main(void)
{
    setenv("LULL_GC_DEBUG", "mark-delay=20", 1);
    UCHECK(lull_init("mark-workers=2,allow-synchronous-major=no") == 0, "init");
    UCHECK(lull_root_add(root, sizeof root) == 0, "root");
    for (int i = 0; i < 300000; i++) {
        struct node *n = lull_alloc(&node_type);
        UCHECK(n, "alloc");
        LULL_SET(n, next, root[0]);
        root[0] = n;
    }
    lull_collect(LULL_GEN_MAJOR);       /* the list old, and a mark's work to measure progress by */
    lull_collect(LULL_GEN_MAJOR);
    lull_gc_lock();
    lull_collect_locked(LULL_COLLECT_MAJOR_START, "unit_pace_wake");
    lull_gc_unlock();
    unsigned early = 0, waits = 0;
    while (lull_marking() && !lull_mark_ready() && lull_mark_progress() < 0.9) {
        uint64_t t0 = lull_now_ns();
        lull_mark_wait_progress(WAIT_NS, 0.9);
        waits++;
        /* Woken (not timed out: a slow sanitizer build's drain may take
         * longer than the bound) before the drain got there. */
        if (lull_now_ns() - t0 < WAIT_NS * 9 / 10 && lull_marking() && !lull_mark_ready() &&
            lull_mark_progress() < 0.9)
            early++;
    }
    printf("pace_wake: %u waits, %u ended before the drain got through 90%% (progress now %.2f)\n", waits, early,
           lull_mark_progress());
    UCHECK(waits >= 1, "the mark was over before this thread waited: nothing measured");
    UCHECK(early <= 4, "%u waits ended before the progress waited for", early);
    lull_collect(LULL_GEN_MAJOR);
    lull_shutdown();
    return 0;
}
