/* The preclean takes no lock (mark.c: preclean_step) until the program has
 * used half of the mark's runway, so a program thread that needs the gc
 * lock (a TLAB refill, a major-heap allocation) does not wait for it; from
 * there on it takes the lock for its rescans, to slow the program down so
 * that the mark ends in time. All under verify-concurrent and
 * check-mod-union: nothing may be lost.
 *
 * 1. Once a concurrent mark is done, the preclean goes on with passes
 *    until the final pause. The program stores into every one of 200,000
 *    old nodes, then holds the gc lock: a pass must still rescan those
 *    cards while it is held (when the preclean took the gc lock for its
 *    rescans, it rescanned nothing until the lock was released).
 *
 * 2. While a mark runs and its preclean rescans, the program allocates
 *    4 KiB arrays in the major heap and 64 KiB large objects (blocks are
 *    formatted under the preclean, whose rescans read their descriptors
 *    without the lock), stores old nodes into them and drops the nodes'
 *    other holders; every node must be intact after the cycle and after
 *    two more majors.
 *
 * 3. As in 1, with half of the runway used (the allocation counted by
 *    the policy as the allocator does): while the program holds the gc
 *    lock the preclean must rescan next to nothing (the few cards it may
 *    have claimed before it looked at the runway), and the rest once the
 *    lock is released; without the throttle it rescans them all at once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "lull.h"
#include "trace/mark.h"
#include "space/nursery.h"
#include "gc/policy.h"
#include "space/meter.h"
#include "unit.h"
#include "unit_nodes.h"

#define NODES 200000u
/* How long a preclean gets to rescan half of what was dirtied. It needs a
 * second or two; ThreadSanitizer with a stress test beside it on the CI's
 * two cores took over 20 s (32,277 of 75,000 cards in 20 s once). The old,
 * locking preclean rescanned nothing while the lock was held, however
 * long. */
#define WAIT_S 90u
#define SMALL_LEN 500u              /* 4 KiB arrays: the major heap's size classes */
#define LARGE_LEN 8192u             /* 64 KiB arrays: large objects */
#define HOLDERS 400u

static void *roots[2];              /* the nodes; the arrays of part 2 */

static uint64_t precleaned(void)
{
    uint64_t pre = 0, final_cards = 0, final_young = 0;
    lull_mark_concurrent_work(&pre, &final_cards, &final_young);
    return pre;
}

/* Cards dirty in the union table now (outside the nursery): what the
 * stores just made left for the preclean. The preclean runs while the
 * program stores (without the lock, or throttled, taking it only when
 * free), so on a loaded machine it may have rescanned much of what the
 * stores dirtied before they end (CI, ThreadSanitizer beside other tests:
 * 4,882 of 75,000 cards "in 90 s", the rest rescanned during the stores);
 * the checks below count from what is left. */
static uint64_t union_dirty(void)
{
    uint32_t lo = lull_block_index(lull_nursery_start), hi = lull_block_index(lull_nursery_end);
    uint32_t frontier = lull_frontier();
    uint64_t n = 0;
    for (uint32_t bi = 0; bi < frontier; bi++) {
        if (bi >= lo && bi < hi)
            continue;
        const uint8_t *u = lull_heap_g.union_cards + ((size_t)bi << (LULL_BLOCK_SHIFT - LULL_CARD_SHIFT));
        for (size_t c = 0; c < ((size_t)1 << (LULL_BLOCK_SHIFT - LULL_CARD_SHIFT)); c++)
            n += __atomic_load_n(&u[c], __ATOMIC_RELAXED) != 0;
    }
    return n;
}

/* Holder h of part 2 holds nodes [h * per, (h + 1) * per). */
static uint32_t holder_len(uint32_t h)
{
    return h % 8 == 7 ? LARGE_LEN : SMALL_LEN;
}

static void check_holders(const char *when)
{
    struct refs *hs = roots[1];
    uint32_t next = 0;
    for (uint32_t h = 0; h < HOLDERS; h++) {
        struct refs *x = hs->item[h];
        UCHECK(x != NULL, "%s: holder %u lost", when, h);
        for (uint32_t j = 0; j < holder_len(h); j++, next = (next + 1) % NODES) {
            struct node *n = x->item[j];
            UCHECK(n && n->id == next, "%s: holder %u item %u: %p", when, h, j, (void *)n);
        }
    }
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify-concurrent,check-mod-union", 0);
    UCHECK(lull_init("mark-workers=2,allow-synchronous-major=no,pause-target=10s") == 0, "init");
    UCHECK(lull_root_add_refs(roots, 2) == 0, "root");

    struct refs *a = lull_alloc_array(&refs_type, NODES);
    UCHECK(a != NULL, "array");
    roots[0] = a;
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = lull_alloc(&node_type);
        UCHECK(n != NULL, "alloc");
        n->id = i;
        lull_store(a, &a->item[i], n);
    }
    lull_collect(LULL_GEN_MAJOR);       /* old now; the allowance is the live size */
    a = roots[0];

    /* 1. A pass rescans while the program holds the gc lock. */
    pause_now(LULL_COLLECT_MAJOR_START);
    wait_mark_ready();
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        lull_store(n, &n->k[0], a->item[(i * 7u + 1u) % NODES]);
    }
    uint64_t dirtied = ((uint64_t)NODES * sizeof(struct node)) >> LULL_CARD_SHIFT;
    lull_gc_lock();
    uint64_t before = precleaned(), left = union_dirty();
    uint64_t t0 = (uint64_t)time(NULL), now = before;
    while ((now = precleaned()) - before < left / 2 && (uint64_t)time(NULL) - t0 < WAIT_S)
        usleep(1000);
    lull_gc_unlock();
    printf("while the program held the gc lock the preclean rescanned %" PRIu64 " cards (the stores dirtied "
           "about %" PRIu64 ", %" PRIu64 " were left when it took the lock)\n", now - before, dirtied, left);
    UCHECK(now - before >= left / 2,
           "the preclean rescanned %" PRIu64 " cards in %u s while the program held the gc lock (%" PRIu64
           " were dirty when it took it): it waits for the lock",
           now - before, WAIT_S, left);
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        UCHECK(n && n->id == i, "node %u damaged", i);
        UCHECK(n->k[0] && n->k[0]->id == (i * 7u + 1u) % NODES, "node %u: k[0] is %p", i, (void *)n->k[0]);
    }

    /* 2. Blocks formatted and large objects placed under the preclean. */
    struct refs *hs = lull_alloc_array(&refs_type, HOLDERS);
    UCHECK(hs != NULL, "holders");
    roots[1] = hs;
    lull_collect(LULL_GEN_NURSERY);
    hs = roots[1];
    pause_now(LULL_COLLECT_MAJOR_START);
    uint32_t next = 0;
    for (uint32_t h = 0; h < HOLDERS; h++) {
        struct refs *x = lull_alloc_array(&refs_type, holder_len(h));
        UCHECK(x != NULL, "holder %u", h);
        lull_store(hs, &hs->item[h], x);
        for (uint32_t j = 0; j < holder_len(h); j++, next = (next + 1) % NODES) {
            lull_store(x, &x->item[j], a->item[next]);
            /* Old stores the preclean must rescan as it goes. */
            struct node *n = a->item[(next * 13u + h) % NODES];
            lull_store(n, &n->k[1], a->item[next]);
        }
        if (h % 50 == 49)
            usleep(2000);   /* let the preclean's passes run between the allocations */
    }
    wait_mark_ready();
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    check_holders("after the cycle");
    /* 3. The throttle, with half of the runway used. */
    lull_collect(LULL_GEN_MAJOR);       /* a fresh runway */
    a = roots[0];
    pause_now(LULL_COLLECT_MAJOR_START);
    wait_mark_ready();
    uint64_t trigger = 0, allowance = 0;
    lull_gc_lock();
    lull_policy_pacing(&trigger, &allowance);
    lull_meter_allocated(allowance);      /* as if the program had allocated that much */
    lull_gc_unlock();
    UCHECK(lull_meter_runway_used() >= 0.5, "runway used: %.2f", lull_meter_runway_used());
    usleep(100000);         /* a pass under way looks at the runway */
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        lull_store(n, &n->k[2], a->item[(i * 11u + 3u) % NODES]);
    }
    lull_gc_lock();
    before = precleaned();
    left = union_dirty();
    usleep(500000);
    uint64_t while_held = precleaned() - before;
    lull_gc_unlock();
    t0 = (uint64_t)time(NULL);
    while ((now = precleaned()) - before < left / 2 && (uint64_t)time(NULL) - t0 < WAIT_S)
        usleep(1000);
    printf("half the runway used: %" PRIu64 " cards rescanned while the program held the gc lock for 0.5 s, %" PRIu64
           " in all (%" PRIu64 " of the about %" PRIu64 " dirtied were left when it took the lock)\n",
           while_held, now - before, left, dirtied);
    UCHECK(while_held <= left / 8,
           "with half of the runway used the preclean rescanned %" PRIu64 " of the %" PRIu64
           " dirty cards while the program held the gc lock: it does not throttle the program",
           while_held, left);
    UCHECK(now - before >= left / 2, "the throttled preclean rescanned only %" PRIu64 " of %" PRIu64 " cards in %u s",
           now - before, left, WAIT_S);
    lull_gc_lock();
    lull_meter_unused(allowance);
    lull_gc_unlock();
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    for (uint32_t i = 0; i < NODES; i++) {
        struct node *n = a->item[i];
        UCHECK(n->k[2] && n->k[2]->id == (i * 11u + 3u) % NODES, "node %u: k[2] is %p", i, (void *)n->k[2]);
    }
    check_holders("after the throttled cycle");

    roots[0] = NULL;                    /* the holders alone keep the nodes now */
    a = NULL;
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    check_holders("after two more majors");

    roots[0] = roots[1] = NULL;
    lull_root_remove(roots);
    lull_shutdown();
    printf("unit_preclean_nolock: ok\n");
    return 0;
}
