/*
 * alloc_locks — how often allocation outside the inline fast path takes a
 * shared lock (lull_stats.alloc_outside_tlab and alloc_locked).
 *
 * Two threads each allocate 20,000 pointer-free arrays of 7-8 KiB (the
 * largest size class) and keep every 16th in a ring of 64, checking each
 * kept one when it is replaced. They live in the nursery; a TLAB refill
 * for one must be a batch (LULL_TLAB_MEDIUM): the nursery lock is taken
 * for fewer than 200 of every thousand such allocations (a TLAB per
 * object would be 1000). Then 4,000 objects of 7.5 KiB straight into the
 * major heap (lull_alloc_pinned): each refill of the thread's free list
 * must be a batch too, the gc lock taken for fewer than 200 a thousand
 * (once per block would be 500). Then large objects: 400 of 12 KiB and
 * 200 of 64 KiB are carved from the thread's reserve, which a refill
 * takes with the gc lock for several at once (fewer than 200 a thousand,
 * besides what collections take); 20 of 1 MiB are too big for the
 * reserve and take the lock once each, never more than once plus what
 * collections take. The counts survive the threads' detaching.
 */
#include "check.h"

#define PER_THREAD 20000u
#define RING 64u

typedef struct arr { lull_array_header a; uint64_t w[]; } arr;
static const lull_type arr_type = { .name = "arr", .size = sizeof(arr), .elem_size = 1 };
typedef struct ring { lull_array_header a; arr *slot[]; } ring;
static const lull_type ring_type = { .name = "ring", .size = sizeof(ring), .elem_size = sizeof(void *),
                                     .elem_refs = 1 };

static void *medium(void *arg)
{
    uintptr_t seed = (uintptr_t)arg;
    lull_thread_attach();
    ring *r = lull_alloc_array(&ring_type, RING);
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        size_t len = 7168 + 8 * (mix64(seed + i) % 120);   /* 7-8 KiB less the header */
        arr *a = lull_alloc_array(&arr_type, len);
        CHECK(a, "allocation %" PRIu64 " failed", i);
        a->w[0] = seed + i;
        a->w[len / 8 - 1] = ~(seed + i);
        if (i % 16 == 0) {
            unsigned s = (unsigned)(i / 16) % RING;
            arr *old = r->slot[s];
            if (old) {
                uint64_t j = i - 16 * RING;
                CHECK(old->w[0] == seed + j && old->w[old->a.length / 8 - 1] == ~(seed + j),
                      "kept array %" PRIu64 " corrupted", j);
            }
            lull_store(r, &r->slot[s], a);
        }
    }
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init");
    lull_stats s0, s1, s2;
    lull_get_stats(&s0);
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, medium, (void *)(i << 32)) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    lull_get_stats(&s1);
    uint64_t outside = s1.alloc_outside_tlab - s0.alloc_outside_tlab, locked = s1.alloc_locked - s0.alloc_locked;
    printf("medium: %" PRIu64 " allocations outside the fast path, %" PRIu64 " took a lock (%.1f per thousand)\n",
           outside, locked, 1000.0 * (double)locked / (double)outside);
    CHECK(outside >= 2 * PER_THREAD, "every medium allocation is counted (%" PRIu64 ")", outside);
    CHECK(locked * 1000 < 200 * outside, "a lock was taken %" PRIu64 " times for %" PRIu64
          " medium allocations: TLAB refills are not batched", locked, outside);

    static const lull_type pinned_type = { .name = "pinned-7.5k", .size = 7680 };
    for (int i = 0; i < 4000; i++) {
        uint64_t *p = lull_alloc_pinned(&pinned_type);
        CHECK(p && p[1] == 0 && p[7680 / 8 - 1] == 0, "pinned object %d", i);
        p[1] = (uint64_t)i;
    }
    lull_stats sp;
    lull_get_stats(&sp);
    outside = sp.alloc_outside_tlab - s1.alloc_outside_tlab;
    locked = sp.alloc_locked - s1.alloc_locked;
    printf("pinned: %" PRIu64 " allocations, %" PRIu64 " took the gc lock (%.1f per thousand)\n", outside, locked,
           1000.0 * (double)locked / (double)outside);
    CHECK(outside >= 4000, "every pinned allocation is counted (%" PRIu64 ")", outside);
    CHECK(locked * 1000 < 200 * outside, "the gc lock was taken %" PRIu64 " times for %" PRIu64
          " pinned medium allocations: refills are not batched", locked, outside);
    s1 = sp;

    static const struct { size_t bytes; unsigned n; bool carved; } large[] = {
        { 12288, 400, true }, { 65536, 200, true }, { 1u << 20, 20, false },
    };
    for (size_t k = 0; k < sizeof large / sizeof large[0]; k++) {
        uint64_t before = s1.collections_minor + s1.collections_major;
        size_t len = large[k].bytes - sizeof(lull_array_header);
        for (unsigned i = 0; i < large[k].n; i++) {
            arr *a = lull_alloc_array(&arr_type, len);
            CHECK(a && a->w[0] == 0 && a->w[len / 8 - 1] == 0, "large object %u of %zu bytes", i, large[k].bytes);
            a->w[0] = a->w[len / 8 - 1] = i + 1;
        }
        lull_get_stats(&s2);
        locked = s2.alloc_locked - s1.alloc_locked;
        uint64_t collections = s2.collections_minor + s2.collections_major - before;
        printf("large, %zu bytes: %u allocations, %" PRIu64 " took the gc lock, %" PRIu64 " collections\n",
               large[k].bytes, large[k].n, locked, collections);
        CHECK(s2.alloc_outside_tlab - s1.alloc_outside_tlab >= large[k].n, "large allocations counted");
        if (large[k].carved)
            CHECK(locked * 1000 < 200 * large[k].n + 2000 * collections, "%" PRIu64 " lock takings for %u "
                  "large objects of %zu bytes: the reserve is not refilled in batches", locked, large[k].n,
                  large[k].bytes);
        else
            CHECK(locked >= large[k].n && locked <= large[k].n + 2 * collections, "%" PRIu64 " lock takings for %u "
                  "large objects of %zu bytes", locked, large[k].n, large[k].bytes);
        s1 = s2;
    }
    lull_shutdown();
    return 0;
}
