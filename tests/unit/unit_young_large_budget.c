/* A young large object is the major heap's allocation only once a minor
 * makes it old (space/heap.h), and the minor that judges young large
 * objects is due at a nursery's worth of them or, when more survived the
 * last minor, at that times the heap growth (gc/policy.c).
 *
 * 1. A dropped young large object never reaches the allocation meter
 *    (space/meter.h); one kept through its minors reaches it when it is
 *    made old, and not before. (Counted at allocation, a server's dead
 *    request bodies started majors.)
 * 2. A program that keeps each large object for the next W allocations,
 *    W objects taking three nurseries: each dies young. With the budget at
 *    the nursery, each saw three minors, was made old and waited for a
 *    major: a major every few allocations' worth of the allowance. Here
 *    at most the first objects are (until a minor has seen W survive), and
 *    each object sees about one minor.
 * 3. Under a memory limit the budget is at most what is left of the
 *    major heap's allowance.
 * 4. Survivors that hold references do not grow it: every minor scans
 *    their marked cards and a concurrent major's final pause all their
 *    slots, so more of them would lengthen both pauses. The same window
 *    of reference arrays runs a minor at each nursery's worth (the
 *    nursery's size, at most 4 MiB here). */
#include <pthread.h>
#include <stdint.h>

#include "lull.h"
#include "space/heap.h"
#include "space/meter.h"
#include "space/nursery.h"
#include "unit_nodes.h"   /* refs_type */

#define MB ((size_t)1 << 20)
#define W  12u                  /* objects kept: 12 MiB, three 4 MiB nurseries */
#define NALLOC 600u

typedef struct bytes {
    lull_array_header a;
    uint8_t b[];
} bytes;
static const lull_type bytes_type = { .name = "bytes", .size = sizeof(bytes), .elem_size = 1 };

static void *window[W];          /* a precise root */

static uint64_t meter(void)
{
    return lull_meter_get(&lull_meter_g.allocated);
}

static void *drop_one(void *arg)
{
    (void)arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    UCHECK(lull_alloc_array(&bytes_type, MB), "allocation");
    lull_thread_detach();
    return NULL;
}

static uint64_t majors(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s.collections_major;
}

static uint64_t minors(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s.collections_minor;
}

int main(void)
{
    UCHECK(lull_init("nursery-size=4m") == 0, "init");
    UCHECK(lull_thread_attach() == 0, "attach");
    UCHECK(lull_root_add_refs(window, W) == 0, "root");
    lull_collect(LULL_GEN_MAJOR);

    /* 1. charged when made old */
    uint64_t m0 = meter();
    pthread_t t;
    UCHECK(pthread_create(&t, NULL, drop_one, NULL) == 0 && pthread_join(t, NULL) == 0, "thread");
    uint64_t m_alloc = meter();
    lull_collect(LULL_GEN_NURSERY);
    uint64_t m_freed = meter();
    window[0] = lull_alloc_array(&bytes_type, MB);
    UCHECK(window[0], "allocation");
    uint64_t m_kept = meter();
    lull_collect(LULL_GEN_NURSERY);
    uint64_t m_young = meter();
    lull_collect(LULL_GEN_NURSERY);     /* its second: old */
    uint64_t m_old = meter();
    printf("unit_young_large_budget: meter +%llu KiB at a young allocation, +%llu after the minor that freed it, "
           "+%llu at a kept one, +%llu after its first minor, +%llu after its second (old)\n",
           (unsigned long long)(m_alloc - m0) >> 10, (unsigned long long)(m_freed - m0) >> 10,
           (unsigned long long)(m_kept - m0) >> 10, (unsigned long long)(m_young - m0) >> 10,
           (unsigned long long)(m_old - m0) >> 10);
    UCHECK(m_alloc == m0 && m_freed == m0 && m_kept == m0 && m_young == m0,
           "a young large object was counted as the major heap's allocation");
    UCHECK(m_old >= m0 + MB && m_old < m0 + 2 * MB, "the object made old was not counted once (+%llu bytes)",
           (unsigned long long)(m_old - m0));
    window[0] = NULL;
    lull_collect(LULL_GEN_MAJOR);

    /* 2. a window of W objects, three nurseries */
    uint64_t maj0 = majors(), min0 = minors();
    for (unsigned i = 0; i < NALLOC; i++) {
        bytes *b = lull_alloc_array(&bytes_type, MB - sizeof(bytes));
        UCHECK(b, "allocation %u", i);
        b->b[0] = (uint8_t)i;
        UCHECK(!window[i % W] || ((bytes *)window[i % W])->b[0] == (uint8_t)(i - W), "object %u lost", i - W);
        window[i % W] = b;
    }
    uint64_t maj = majors() - maj0, min = minors() - min0;
    printf("unit_young_large_budget: %u objects of 1 MiB, each kept for the next %u: %llu minors, %llu majors; "
           "%llu KiB survived the last minor\n", NALLOC, W, (unsigned long long)min, (unsigned long long)maj,
           (unsigned long long)lull_los_survived_bytes() >> 10);
    UCHECK(maj <= 2, "%llu majors: the objects were made old before they died", (unsigned long long)maj);
    UCHECK(min <= NALLOC / W + 8, "%llu minors: the budget stayed at the nursery", (unsigned long long)min);

    /* 3. a memory limit caps it: W MiB survive, the limit leaves an
     * allowance of a nursery's worth (20 MiB less W less the nursery).
     * Uncapped, the budget would be W MiB: 4 minors in 4 W allocations;
     * capped, about 12. */
    UCHECK(lull_set_memory_limit(20 * MB) == 0, "lull_set_memory_limit");
    lull_collect(LULL_GEN_MAJOR);
    uint64_t allowance = lull_meter_get(&lull_meter_g.allowance);
    min0 = minors();
    for (unsigned i = 0; i < 4 * W; i++) {
        window[i % W] = lull_alloc_array(&bytes_type, MB - sizeof(bytes));
        UCHECK(window[i % W], "allocation");
    }
    min = minors() - min0;
    printf("unit_young_large_budget: under a 20 MiB limit (allowance %llu KiB): %llu minors in %u allocations\n",
           (unsigned long long)allowance >> 10, (unsigned long long)min, 4 * W);
    UCHECK(allowance <= W * MB / 2, "the limit left an allowance of %llu KiB: the test shows nothing",
           (unsigned long long)allowance >> 10);
    UCHECK(min >= 8, "%llu minors: the budget passed the allowance", (unsigned long long)min);

    /* 4. survivors with references: the budget stays at the nursery */
    UCHECK(lull_set_memory_limit(0) == 0, "lull_set_memory_limit");
    for (unsigned i = 0; i < W; i++)
        window[i] = NULL;
    lull_collect(LULL_GEN_MAJOR);
    min0 = minors();
    for (unsigned i = 0; i < 8 * W; i++) {
        window[i % W] = lull_alloc_array(&refs_type, (MB - sizeof(struct refs)) / sizeof(void *));
        UCHECK(window[i % W], "allocation");
    }
    min = minors() - min0;
    printf("unit_young_large_budget: %u reference arrays of 1 MiB, each kept for the next %u: %llu minors "
           "(nursery %zu KiB)\n", 8 * W, W, (unsigned long long)min, lull_nursery_size() >> 10);
    /* At most a nursery's worth (4 MiB) between minors: 24 or more; grown
     * to the survivors (W MiB): about 8. */
    UCHECK(min >= 16, "%llu minors: reference arrays that survived grew the budget",
           (unsigned long long)min);
    for (unsigned i = 0; i < W; i++)
        window[i] = NULL;
    lull_thread_detach();
    lull_shutdown();
    return 0;
}
