/* A tracer whose grey stack is shallow still shares with an idle one.
 *
 * A depth-first trace of a tree keeps about its depth on the grey stack
 * (a binary tree of a million nodes: twenty entries, most of the time
 * fewer). A tracer that splits only deep stacks leaves the other tracers
 * of a minor idle while it copies the whole tree alone (gcbench's first
 * minors: no byte copied by a worker). Here a sharing tracer holds six
 * entries and another tracer is idle: its next look (every 64 pops) must
 * hand the older half to the shared pool, keep the rest, and lose or
 * duplicate nothing; with no idle tracer it keeps them all. */
#include <stdatomic.h>
#include <string.h>

#include "trace/trace.h"
#include "unit.h"

#define N 6u

static unsigned drain(lull_tracer *tr, uintptr_t *seen, unsigned n)
{
    uintptr_t v;
    while (lull_tracer_pop(tr, &v)) {
        UCHECK(v >= 1 && v <= N, "popped %#lx, never pushed", (unsigned long)v);
        seen[v]++;
        n++;
    }
    return n;
}

int main(void)
{
    lull_trace_init(0);
    uintptr_t seen[N + 1];

    /* No tracer idle: no split. */
    lull_tracer a = { .share = true };
    for (uintptr_t i = 1; i <= N; i++)
        lull_tracer_push(&a, i);
    a.pops = 63;                      /* the next pop looks for idle tracers */
    uintptr_t v;
    UCHECK(lull_tracer_pop(&a, &v) && v == N, "the newest entry first");
    UCHECK(!lull_trace_shared_nonempty(), "shared with no tracer idle");
    memset(seen, 0, sizeof seen);
    seen[v]++;
    unsigned n = drain(&a, seen, 1);
    UCHECK(n == N, "popped %u of %u", n, N);

    /* One tracer idle: the older half goes to the shared pool. */
    lull_tracer b = { .share = true };
    for (uintptr_t i = 1; i <= N; i++)
        lull_tracer_push(&b, i);
    lull_trace_note_idle(1);
    b.pops = 63;
    UCHECK(lull_tracer_pop(&b, &v), "pop");
    UCHECK(lull_trace_shared_nonempty(), "a stack of %u entries was not split for an idle tracer", N);
    lull_trace_note_idle(-1);
    memset(seen, 0, sizeof seen);
    seen[v]++;
    b.share = false;                  /* its own entries only */
    unsigned own = drain(&b, seen, 1);
    lull_tracer c = { .share = true };   /* the idle one takes the shared half */
    unsigned taken = drain(&c, seen, 0);
    UCHECK(own + taken == N && own >= 1 && taken >= 1, "kept %u, shared %u of %u", own, taken, N);
    for (unsigned i = 1; i <= N; i++)
        UCHECK(seen[i] == 1, "entry %u popped %lu times", i, (unsigned long)seen[i]);
    lull_tracer_release(&a);
    lull_tracer_release(&b);
    lull_tracer_release(&c);
    printf("unit_grey_split: %u entries, %u kept, %u shared with the idle tracer\n", N, own, taken);
    return 0;
}
