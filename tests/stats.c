/*
 * stats — lull_get_stats reports what happened:
 *
 *  - before lull_init every field is 0;
 *  - bytes_allocated grows by at least what was allocated, and restarts
 *    with a new lull_init;
 *  - every forced collection is counted (majors in collections_major), and
 *    each one pauses the world at least once;
 *  - pause figures are nonzero and ordered: p50 <= p95 <= p99 <= max <= total;
 *  - with major=stw every major is synchronous; sync never exceeds majors;
 *  - heap_bytes covers the live data; live_bytes_after_major covers what is
 *    reachable and falls when it is dropped;
 *  - bytes_promoted grows by at least the small objects that outlived the
 *    nursery, hardly at all for garbage, never passes bytes_allocated, and
 *    restarts with a new lull_init;
 *  - counters never go backwards.
 */
#include "check.h"

#define MB ((size_t)1 << 20)

#define MONO(field)                                                                   \
    CHECK(b->field >= a->field, "%s: " #field " went back from %" PRIu64 " to %" PRIu64,  \
          when, a->field, b->field)

static void check_monotonic(const lull_stats *a, const lull_stats *b, const char *when)
{
    MONO(collections_minor);
    MONO(collections_major);
    MONO(collections_major_sync);
    MONO(pauses);
    MONO(pause_total_ns);
    MONO(pause_max_ns);
    MONO(bytes_allocated);
    MONO(bytes_promoted);
    CHECK(b->bytes_promoted <= b->bytes_allocated, "%s: bytes_promoted %" PRIu64 " > bytes_allocated %" PRIu64,
          when, b->bytes_promoted, b->bytes_allocated);
}

static void check_pauses(const lull_stats *s, const char *when)
{
    CHECK(s->pause_total_ns > 0 && s->pause_max_ns > 0, "%s: pause_total_ns %" PRIu64
          ", pause_max_ns %" PRIu64 " after pauses", when, s->pause_total_ns, s->pause_max_ns);
    CHECK(s->pause_p50_ns > 0, "%s: pause_p50_ns is 0 after %" PRIu64 " pauses", when, s->pauses);
    CHECK(s->pause_p50_ns <= s->pause_p95_ns && s->pause_p95_ns <= s->pause_p99_ns &&
          s->pause_p99_ns <= s->pause_max_ns,
          "%s: percentiles out of order: p50 %" PRIu64 " p95 %" PRIu64 " p99 %" PRIu64 " max %" PRIu64,
          when, s->pause_p50_ns, s->pause_p95_ns, s->pause_p99_ns, s->pause_max_ns);
    CHECK(s->pause_max_ns <= s->pause_total_ns, "%s: pause_max_ns %" PRIu64 " > pause_total_ns %" PRIu64,
          when, s->pause_max_ns, s->pause_total_ns);
    CHECK(s->pause_max_ns < 60ull * 1000000000ull, "%s: pause_max_ns %" PRIu64 " is absurd",
          when, s->pause_max_ns);
    CHECK(s->collections_major_sync <= s->collections_major,
          "%s: collections_major_sync %" PRIu64 " > collections_major %" PRIu64, when,
          s->collections_major_sync, s->collections_major);
}

#define NNODES 100000
#define NBIG   10

static struct refs *keep;   /* conservative root */

static NOINLINE void allocate_live(void)
{
    keep = lull_alloc_array(&refs_type, NBIG + 1);
    CHECK(keep != NULL, "alloc failed");
    for (int i = 0; i < NBIG; i++)
        lull_store(keep, &keep->item[i], bytes_new(MB, (uint64_t)i));
    lull_store(keep, &keep->item[NBIG], list_build(1, NNODES));
}

/* Garbage: nodes no root leads to, each on its own (a word a sanitizer's
 * frame leaves on the stack may pin one, but then only that one: under
 * ThreadSanitizer a list's head was pinned so, and all the list promoted). */
static NOINLINE void allocate_garbage(size_t count)
{
    for (size_t i = 0; i < count; i++)
        (void)tnode_new(2 * NNODES + i);
}

/* Only NOINLINE helpers touch `keep`'s contents: had run() loaded a
 * pointer into a callee-saved register, that stale copy would keep the
 * data alive after run() drops it (seen under ASan). */
static NOINLINE void verify_kept(void)
{
    list_verify(keep->item[NBIG], 1, NNODES, "kept list");
}

static void run(const char *params, bool stw)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params ? params : "NULL");
    CHECK(lull_root_add(&keep, sizeof keep) == 0, "lull_root_add failed");
    lull_stats s1 = get_stats();

    allocate_live();
    lull_stats s2 = get_stats();
    check_monotonic(&s1, &s2, "after allocating");
    uint64_t allocated = (uint64_t)NNODES * sizeof(struct tnode) + (uint64_t)NBIG * MB;
    CHECK(s2.bytes_allocated - s1.bytes_allocated >= allocated,
          "bytes_allocated grew by %" PRIu64 " after allocating at least %" PRIu64 " bytes",
          s2.bytes_allocated - s1.bytes_allocated, allocated);

    for (int i = 0; i < 5; i++) {
        lull_collect(LULL_GEN_MAJOR);
        lull_collect(LULL_GEN_NURSERY);
    }
    lull_stats s3 = get_stats();
    check_monotonic(&s2, &s3, "after collecting");
    uint64_t colls = (s3.collections_minor + s3.collections_major) -
                     (s2.collections_minor + s2.collections_major);
    CHECK(s3.collections_major - s2.collections_major >= 5,
          "5 forced majors counted as %" PRIu64, s3.collections_major - s2.collections_major);
    CHECK(colls >= 10, "10 forced collections counted as %" PRIu64, colls);
    CHECK(s3.pauses - s2.pauses >= 10, "10 forced collections made %" PRIu64 " pauses",
          s3.pauses - s2.pauses);
    check_pauses(&s3, params ? params : "defaults");
    if (stw)
        CHECK(s3.collections_major_sync == s3.collections_major,
              "major=stw: %" PRIu64 " majors but only %" PRIu64 " counted as synchronous",
              s3.collections_major, s3.collections_major_sync);

    /* The list's nodes were in the nursery; the forced collections (or
     * minors along the way) promoted them. The 1 MiB objects are large:
     * never in the nursery, never counted. */
    uint64_t small = (uint64_t)NNODES * sizeof(struct tnode);
    /* A node a stale stack word pins stays in the nursery, uncounted
     * (one did under AddressSanitizer): all but a hundredth. */
    CHECK(s3.bytes_promoted - s1.bytes_promoted >= small - small / 100,
          "%" PRIu64 " bytes of list outlived the nursery, bytes_promoted grew by %" PRIu64, small,
          s3.bytes_promoted - s1.bytes_promoted);
    CHECK(s3.bytes_promoted - s1.bytes_promoted < small + 4 * MB,
          "%" PRIu64 " bytes of list outlived the nursery, bytes_promoted grew by %" PRIu64
          " (are the large objects counted?)", small, s3.bytes_promoted - s1.bytes_promoted);
    allocate_garbage(NNODES / 4);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    lull_stats sg = get_stats();
    check_monotonic(&s3, &sg, "after a minor of garbage");
    CHECK(sg.bytes_promoted - s3.bytes_promoted < small / 8,
          "a minor of %" PRIu64 " bytes of garbage promoted %" PRIu64, small / 4,
          sg.bytes_promoted - s3.bytes_promoted);
    s3 = sg;

    verify_kept();
    uint64_t live = (uint64_t)NBIG * MB + (uint64_t)NNODES * sizeof(struct tnode);
    CHECK(s3.live_bytes_after_major >= live, "live_bytes_after_major = %" PRIu64
          " with at least %" PRIu64 " bytes reachable", s3.live_bytes_after_major, live);
    CHECK(s3.live_bytes_after_major <= live + 16 * MB, "live_bytes_after_major = %" PRIu64
          " with about %" PRIu64 " bytes reachable", s3.live_bytes_after_major, live);
    CHECK(s3.heap_bytes >= s3.live_bytes_after_major, "heap_bytes %" PRIu64
          " < live_bytes_after_major %" PRIu64, s3.heap_bytes, s3.live_bytes_after_major);

    keep = NULL;
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_stats s4 = get_stats();
    check_monotonic(&s3, &s4, "after dropping");
    /* Checked in every build. Under AddressSanitizer this once failed on
     * every run: an interior pointer into `keep` (&keep->item[NBIG], the
     * slot address allocate_live or verify_kept computes), spilled by a
     * callee 128 bytes below run()'s frame, lay in the part of
     * clobber_stack's frame its C array never covered (the array's right
     * redzone), and kept the array and all it holds alive conservatively. clobber_stack (check.h) now zeroes
     * everything below the caller's frame. */
    CHECK(s4.live_bytes_after_major + live * 3 / 4 <= s3.live_bytes_after_major,
          "dropping %" PRIu64 " bytes: live_bytes_after_major only went from %" PRIu64 " to %" PRIu64,
          live, s3.live_bytes_after_major, s4.live_bytes_after_major);
    printf("stats (%s): bytes_allocated %" PRIu64 " heap %" PRIu64 " live %" PRIu64 "->%" PRIu64
           " minor %" PRIu64 " major %" PRIu64 " sync %" PRIu64 " pauses %" PRIu64
           " p50/p95/p99/max %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64 " us promoted %" PRIu64 "\n",
           params ? params : "defaults", s4.bytes_allocated, s4.heap_bytes,
           s3.live_bytes_after_major, s4.live_bytes_after_major, s4.collections_minor,
           s4.collections_major, s4.collections_major_sync, s4.pauses, s4.pause_p50_ns / 1000,
           s4.pause_p95_ns / 1000, s4.pause_p99_ns / 1000, s4.pause_max_ns / 1000, s4.bytes_promoted);
    lull_root_remove(&keep);
    lull_shutdown();
}

int main(void)
{
    lull_stats s0 = get_stats();
    static const lull_stats zero;
    CHECK(memcmp(&s0, &zero, sizeof s0) == 0, "lull_get_stats before lull_init is not all zero");

    run("major=stw", true);

    /* bytes_allocated counts since the latest lull_init */
    CHECK(lull_init(NULL) == 0, "lull_init failed");
    lull_stats fresh = get_stats();
    CHECK(fresh.bytes_allocated < (uint64_t)NBIG * MB,
          "bytes_allocated right after a new lull_init is %" PRIu64, fresh.bytes_allocated);
    CHECK(fresh.bytes_promoted == 0, "bytes_promoted right after a new lull_init is %" PRIu64, fresh.bytes_promoted);
    lull_shutdown();

    /* Heap addresses repeat across lull_init cycles: a slot of run()'s
     * frame left over from the previous run can point at this run's data
     * and keep it alive conservatively (seen under ASan). Zero the stack
     * where run()'s frame will be. */
    clobber_stack();
    run(NULL, false);
    clobber_stack();
    run("mark-workers=1,concurrent-sweep=no", false);
    printf("stats: ok\n");
    return 0;
}
