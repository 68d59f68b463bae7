/*
 * medium_nursery — objects over the inline limit (2 KiB) and up to 8 KiB
 * live in the nursery, as small ones do: their garbage costs no major.
 *
 * 1. 256 MiB of pointer-free arrays of 2-8 KiB, dropped as soon as made,
 *    from two threads: at most three majors run (the kept ones below, a
 *    64th, are promoted and dropped; in the major heap all of it would
 *    use up the allowance dozens of times) and the heap stays within
 *    twice the nursery and 16 MiB.
 * 2. A medium array reachable only from a precise root is copied out by
 *    the next minor (found at another address, intact); medium arrays kept
 *    by one of the threads (every 64th, in a ring of 255) are intact when
 *    replaced.
 * 3. A medium array held only by a local variable across minors stays in
 *    place (pinned by the conservative scan) and intact.
 */
#include "check.h"

#include <stdatomic.h>

#define GARBAGE ((size_t)128 << 20)    /* per thread */
#define RING    256u

static struct refs *ring;

static size_t len_of(uint64_t k)
{
    return 2048 + mix64(k) % (8192 - 2048 - 64) / 8 * 8;
}

static void fill(struct bytes *b, uint64_t k)
{
    for (size_t i = 0; i + 8 <= b->a.length; i += 512)
        memcpy(&b->b[i], &k, 8);
}

static bool intact(const struct bytes *b, uint64_t k)
{
    if (b->a.length != len_of(k))
        return false;
    for (size_t i = 0; i + 8 <= b->a.length; i += 512) {
        uint64_t v;
        memcpy(&v, &b->b[i], 8);
        if (v != k)
            return false;
    }
    return true;
}

static atomic_int finished;

static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 40;
    lull_thread_attach();
    uint64_t k = 0;
    for (size_t done = 0; done < GARBAGE; k++) {
        struct bytes *b = lull_alloc_array(&bytes_type, len_of(base + k));
        CHECK(b, "lull_alloc_array");
        fill(b, base + k);
        done += b->a.length;
        if (base && k % 64 == 0) {
            size_t s = 1 + (size_t)(k / 64) % (RING - 1);
            struct bytes *old = ring->item[s];
            if (old) {
                uint64_t ok = k - 64 * (RING - 1);
                CHECK(intact(old, base + ok), "kept medium array %" PRIu64 " corrupted", ok);
            }
            lull_store(ring, &ring->item[s], b);
        }
    }
    lull_thread_detach();
    atomic_fetch_add(&finished, 1);
    return NULL;
}

/* A medium array reachable only from the ring's slot 0; its address,
 * disguised so that no stack word pins it. */
#define DISGUISE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
static NOINLINE uintptr_t kept_in_ring(void)
{
    struct bytes *b = lull_alloc_array(&bytes_type, len_of(1));
    fill(b, 1);
    lull_store(ring, &ring->item[0], b);
    return (uintptr_t)b ^ DISGUISE;
}

int main(void)
{
    CHECK(lull_init("nursery-size=4m") == 0, "lull_init");
    CHECK(lull_root_add_refs((void **)&ring, 1) == 0, "lull_root_add_refs");
    ring = lull_alloc_array(&refs_type, RING);

    /* 3: pinned by the stack across minors. */
    struct bytes *volatile held = lull_alloc_array(&bytes_type, len_of(7));
    fill(held, 7);
    uintptr_t at = (uintptr_t)held;

    /* 2: a kept one is copied out by the next minor. */
    uintptr_t was = kept_in_ring();
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    CHECK(((uintptr_t)ring->item[0] ^ DISGUISE) != was, "a medium array reachable from a precise root was not "
          "copied by a minor: not in the nursery");
    CHECK(intact(ring->item[0], 1), "the copied medium array is broken");

    lull_stats s0 = get_stats();
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, churn, (void *)i) == 0, "pthread_create");
    uint64_t peak = 0;
    while (atomic_load(&finished) < 2) {
        lull_stats s = get_stats();
        if (s.heap_bytes > peak)
            peak = s.heap_bytes;
        sleep_ms(1);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    lull_stats s1 = get_stats();
    printf("medium_nursery: %" PRIu64 " minors, %" PRIu64 " majors for 256 MiB of 2-8 KiB garbage; heap peak "
           "%.1f MiB (nursery %.1f MiB)\n", s1.collections_minor - s0.collections_minor,
           s1.collections_major - s0.collections_major, peak / 1048576.0, s1.nursery_bytes / 1048576.0);
    CHECK(s1.collections_minor - s0.collections_minor >= 20, "too few minors: medium garbage not in the nursery?");
    CHECK(s1.collections_major - s0.collections_major <= 3, "%" PRIu64 " majors ran for medium garbage",
          s1.collections_major - s0.collections_major);
    CHECK(peak < s1.nursery_bytes * 2 + ((uint64_t)16 << 20), "heap peak %.1f MiB", peak / 1048576.0);

    CHECK((uintptr_t)held == at && intact(held, 7), "a medium array held by the stack moved or broke");
    CHECK(intact(ring->item[0], 1), "the promoted medium array is broken");
    for (unsigned i = 1; i < RING; i++)
        CHECK(ring->item[i], "ring slot %u empty", i);
    lull_root_remove((void **)&ring);
    lull_shutdown();
    return 0;
}
