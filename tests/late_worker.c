/*
 * late_worker — a pause never waits for a worker thread to be scheduled.
 *
 * With mark-workers=2 the stopping thread shares each pause's copying and
 * marking with one lull-mark thread. LULL_GC_DEBUG=join-delay=1000000 makes
 * that thread come to every pause's job a second late, as a descheduled one
 * does on a machine with more runnable threads than cores. The stopping
 * thread does the whole job itself and the pause ends without it: every
 * minor and every stop-the-world major here must end before the worker
 * comes (one that waits for it takes the whole delay or more; under
 * ThreadSanitizer beside another test these pauses take up to about half
 * of it on their own), and the list they copied and marked must be intact.
 */
#include "check.h"

#define DELAY_MS 1000
#define NODES    20000u

static uint64_t worst_ns, npauses;

static void hook(const lull_pause_event *e, void *data)
{
    (void)data;
    npauses++;
    if (e->duration_ns > worst_ns)
        worst_ns = e->duration_ns;
}

static struct tnode *root[1];

int main(void)
{
    char params[64];
    snprintf(params, sizeof params, "mark-workers=2,major=stw");
    CHECK(lull_init(params) == 0, "lull_init: %s", strerror(errno));
    CHECK(lull_root_add(root, sizeof root) == 0, "lull_root_add");
    lull_set_pause_hook(hook, NULL);
    for (int round = 0; round < 4; round++) {
        root[0] = list_build((uint64_t)round * NODES, NODES);
        lull_collect(round % 2 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        list_verify(root[0], (uint64_t)round * NODES, NODES, "after the collection");
    }
    lull_set_pause_hook(NULL, NULL);
    printf("late_worker: %llu pauses, longest %.3f ms (the worker comes %d ms late)\n",
           (unsigned long long)npauses, (double)worst_ns / 1e6, DELAY_MS);
    CHECK(npauses >= 4, "only %llu pauses", (unsigned long long)npauses);
    CHECK(worst_ns < (uint64_t)DELAY_MS * 1000000 * 9 / 10,
          "a pause took %.3f ms: it waited for the late worker", (double)worst_ns / 1e6);
    lull_shutdown();
    return 0;
}
