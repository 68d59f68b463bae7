/*
 * fragmented — with concurrent majors, the policy chooses a synchronous,
 * evacuating major when the heap is fragmented and synchronous majors are
 * allowed (policy.c: lull_policy_prefers_evacuation), and never otherwise.
 *
 * A population of small objects is promoted, nine in ten dropped
 * (scattered: every block keeps a tenth of its slots), and a concurrent
 * major measures the damage. Then lull_collect(LULL_GEN_MAJOR):
 *
 *   - with synchronous majors switched off, it runs a concurrent major:
 *     nothing synchronous, nothing evacuated;
 *   - switched back on, it runs a synchronous one that evacuates (counted
 *     in collections_major_sync and objects_evacuated);
 *   - afterwards the heap is no longer fragmented: the next explicit
 *     majors are concurrent again, and once the emptied blocks have aged
 *     out, heap_bytes is down by at least a quarter of what the whole
 *     population took.
 *
 * With evacuation-threshold=0 (argv[1]) no major is synchronous.
 */
#include "check.h"

#define N      600000u
#define KEEP   10u

static struct refs *volatile keep;       /* a precise root */

static void fragment(void)
{
    fragment_heap(N, KEEP, &keep);
}

static void verify(const char *when)
{
    fragment_verify(N, KEEP, keep, when);
}

static lull_stats stats(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s;
}

int main(int argc, char **argv)
{
    bool off = argc > 1;
    CHECK(lull_init(off ? argv[1] : NULL) == 0, "lull_init");
    CHECK(lull_root_add_refs((void **)&keep, 1) == 0, "lull_root_add_refs");
    run_in_fresh_thread(fragment);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);         /* concurrent: frees the dropped nine tenths, measures the rest */
    verify("after the first major");

    CHECK(lull_set_allow_synchronous_major(false), "the switch was not honoured");
    lull_stats a = stats();
    lull_collect(LULL_GEN_MAJOR);
    lull_stats b = stats();
    CHECK(b.collections_major_sync == a.collections_major_sync && b.objects_evacuated == a.objects_evacuated,
          "synchronous majors off, yet the explicit major was synchronous (%" PRIu64 " -> %" PRIu64
          ") or evacuated", a.collections_major_sync, b.collections_major_sync);
    verify("after a concurrent major");

    CHECK(lull_set_allow_synchronous_major(true), "the switch was not honoured");
    lull_collect(LULL_GEN_MAJOR);
    lull_stats c = stats();
    verify("after the major the fragmentation chose");
    if (off) {
        CHECK(c.collections_major_sync == b.collections_major_sync && c.objects_evacuated == b.objects_evacuated,
              "%s: a synchronous major ran or evacuated", argv[1]);
        printf("fragmented: %s: majors stay concurrent\n", argv[1]);
    } else {
        CHECK(c.collections_major_sync == b.collections_major_sync + 1,
              "a fragmented heap with synchronous majors allowed: the explicit major was not synchronous");
        CHECK(c.objects_evacuated > b.objects_evacuated, "the synchronous major evacuated nothing");
        /* The emptied blocks are swept, then kept two majors before they
         * go back to the OS (LULL_EMPTY_BLOCK_MAX_AGE). */
        lull_collect(LULL_GEN_MAJOR);
        lull_collect(LULL_GEN_MAJOR);
        lull_stats d = stats();
        CHECK(d.collections_major_sync == c.collections_major_sync,
              "the heap, compacted, still chose a synchronous major");
        CHECK(d.heap_bytes + (uint64_t)N * sizeof(struct fitem) / 4 <= b.heap_bytes,
              "heap_bytes %" PRIu64 " -> %" PRIu64 " KiB: the evacuation gave back too little",
              b.heap_bytes >> 10, d.heap_bytes >> 10);
        verify("after the next majors");
        printf("fragmented: %" PRIu64 " objects evacuated by the one synchronous major; heap %" PRIu64
               " -> %" PRIu64 " KiB\n", c.objects_evacuated - b.objects_evacuated, b.heap_bytes >> 10,
               d.heap_bytes >> 10);
    }
    lull_root_remove((void *)&keep);
    lull_shutdown();
    return 0;
}
