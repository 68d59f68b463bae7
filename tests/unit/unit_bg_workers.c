/* The concurrent mark runs on every worker thread (issue 9: "the workers
 * trace the major heap while mutators run"). With mark-workers=4 there
 * are three worker threads (on this machine's two cores or however many);
 * a concurrent major of a 4-wide tree of 349,525 nodes must have at least
 * two of them blacken objects while the world runs
 * (lull_mark_background_work: each worker's count), the background mark
 * must do most of the marking, and the tree must be intact afterwards.
 * Marks are stretched by mark-delay (each worker sleeps 20 us every 64
 * objects) so that a loaded machine still schedules every worker during
 * the mark; the test tries a few majors and needs one that shows it.
 *
 * With mark-workers=1 the one worker thread started for the background
 * marks alone. */
#include <inttypes.h>
#include <stdlib.h>

#include "lull.h"
#include "trace/mark.h"
#include "unit.h"
#include "unit_nodes.h"
#include "trace/workers.h"

#define DEPTH 9     /* (4^10 - 1) / 3 nodes */

static uint64_t next_id;

static struct node *tree(int depth)
{
    struct node *n = lull_alloc(&node_type);
    UCHECK(n != NULL, "alloc");
    n->id = next_id++;
    if (depth)
        for (int i = 0; i < 4; i++)
            lull_store(n, &n->k[i], tree(depth - 1));
    return n;
}

/* Nodes and the sum of their ids. */
static uint64_t walk(const struct node *n, uint64_t *sum)
{
    if (!n)
        return 0;
    *sum += n->id;
    uint64_t c = 1;
    for (int i = 0; i < 4; i++)
        c += walk(n->k[i], sum);
    return c;
}

static void *root[1];

static void run(const char *params, unsigned want_threads, unsigned want_busy)
{
    UCHECK(lull_init(params) == 0, "init %s", params);
    UCHECK(lull_root_add_refs(root, 1) == 0, "root");
    next_id = 0;
    root[0] = tree(DEPTH);
    uint64_t nodes = next_id, sum = 0;
    UCHECK(walk(root[0], &sum) == nodes, "%s: the tree has not %" PRIu64 " nodes", params, nodes);
    lull_collect(LULL_GEN_NURSERY);     /* the tree is old: the major marks it */

    uint64_t w[LULL_MAX_WORKERS] = { 0 };
    unsigned nw = 0, busy = 0;
    uint64_t total = 0;
    for (int attempt = 0; attempt < 4 && busy < want_busy; attempt++) {
        lull_collect(LULL_GEN_MAJOR);
        nw = lull_mark_background_work(w, LULL_MAX_WORKERS);
        UCHECK(nw == want_threads, "%s: the background mark ran on %u threads, %u expected", params, nw,
               want_threads);
        busy = 0;
        total = 0;
        for (unsigned i = 0; i < nw; i++) {
            total += w[i];
            busy += w[i] >= nodes / 100;     /* a real share, not a stray steal */
        }
        printf("%s, major %d: the background mark scanned %" PRIu64 " objects:", params, attempt, total);
        for (unsigned i = 0; i < nw; i++)
            printf(" lull-mark/%u %" PRIu64, i + 1, w[i]);
        printf("\n");
        /* Nearly all of the tree was marked while the world ran (a few
         * objects a pause greys stay for the final pause). */
        UCHECK(total >= nodes / 2, "%s: the background mark scanned %" PRIu64 " of %" PRIu64 " objects", params,
               total, nodes);
    }
    UCHECK(busy >= want_busy, "%s: only %u worker thread(s) each blackened at least 1%% of the %" PRIu64
           " objects while the world ran (%u expected)", params, busy, nodes, want_busy);
    uint64_t sum2 = 0;
    UCHECK(walk(root[0], &sum2) == nodes && sum2 == sum, "%s: the tree changed", params);
    root[0] = NULL;
    lull_root_remove(root);
    lull_shutdown();
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "mark-delay=20", 0);
    run("mark-workers=4,major=concurrent", 3, 2);
    run("mark-workers=1,major=concurrent", 1, 1);
    printf("unit_bg_workers: ok\n");
    return 0;
}
