/*
 * young_large — large objects allocated since the last minor are young
 * (lib/heap.h):
 *
 *  - a dropped large reference array holding 64 Ki nursery nodes is freed
 *    by the next minor and the nodes are not promoted: heap_bytes grows by
 *    less than 1 MiB, where the nodes take 5 MiB (an old array's dirty
 *    cards would promote them all, dead as it is);
 *  - a young large array survives with the nodes it holds intact when the
 *    only path to it is a precise root, a slot of an old object, a nursery
 *    node, another young large array, or the stack, through minors (it
 *    stays young for two, so the old slot's card must still lead to it in
 *    the second) and majors, concurrent or not;
 *  - a dropped young array while a concurrent mark runs is freed by the
 *    minor, or, if the mark holds it, kept for the final pause's sweep with
 *    its references into the nursery cleared (ctest young_large_marking
 *    runs this with verify-nursery and the mark stretched, so that minors
 *    run during marks; tests/unit/unit_young_large_mark checks which).
 */
#include "check.h"

#define MB     ((size_t)1 << 20)
#define NDEAD  (64u << 10)
#define K      4000u         /* nodes per live array: 32 KiB, a large object */

typedef struct refs refs;      /* check.h: refs_type, items in item[] */

/* ---- dropped young arrays ---- */

static NOINLINE void fill_dead(void)
{
    refs *a = lull_alloc_array(&refs_type, NDEAD);
    CHECK(a, "lull_alloc_array(%u refs) failed", NDEAD);
    for (uint32_t i = 0; i < NDEAD; i++)
        lull_store(a, &a->item[i], tnode_new(i));
}

static void dead_array(void)
{
    lull_collect(LULL_GEN_MAJOR);
    uint64_t h0 = get_stats().heap_bytes;
    run_in_fresh_thread(fill_dead);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    uint64_t h1 = get_stats().heap_bytes;
    printf("dropped array of %u nodes: heap %" PRIu64 " -> %" PRIu64 " KiB across the minor\n", NDEAD, h0 >> 10,
           h1 >> 10);
    CHECK(h1 < h0 + MB, "the minor after a dropped young array grew the heap by %" PRIu64
          " KiB: the array's nodes were promoted", (h1 - h0) >> 10);
}

/* ---- young arrays kept by each kind of path ---- */

enum { BY_ROOT, BY_OLD, BY_NURSERY, BY_YOUNG, BY_STACK, NKINDS };
static const char *const kind_name[] = { "a precise root", "an old object", "a nursery node",
                                         "another young array", "the stack" };
static void *roots[3];          /* precise: [0] array, [1] old node, [2] nursery node */

static NOINLINE refs *make_array(uint32_t kind, uint32_t extra)
{
    refs *a = lull_alloc_array(&refs_type, K + extra);
    CHECK(a, "lull_alloc_array failed");
    for (uint32_t i = 0; i < K; i++)
        lull_store(a, &a->item[i], tnode_new(kind * K + i));
    return a;
}

static void check_array(const refs *a, uint32_t kind, const char *when)
{
    CHECK(a && a->a.length >= K, "%s: the array held by %s is gone (length %zu)", when, kind_name[kind],
          a ? a->a.length : 0);
    for (uint32_t i = 0; i < K; i++)
        CHECK(tnode_ok(a->item[i], kind * K + i), "%s: node %u of the array held by %s is wrong", when, i,
              kind_name[kind]);
}

static refs *array_of(uint32_t kind, refs *on_stack)
{
    switch (kind) {
    case BY_ROOT: return roots[0];
    case BY_OLD: return (refs *)((struct tnode *)roots[1])->next;
    case BY_NURSERY: return (refs *)((struct tnode *)roots[2])->next;
    case BY_YOUNG: return ((refs *)roots[0])->item[K];
    default: return on_stack;
    }
}

/* Everything but the stack's array is reachable from roots[] only. */
static NOINLINE void build(void)
{
    roots[0] = make_array(BY_ROOT, 1);
    roots[1] = tnode_new(900000);
    lull_collect(LULL_GEN_NURSERY);            /* roots[1] is old now, roots[0] too */
    LULL_SET((struct tnode *)roots[1], next, (struct tnode *)make_array(BY_OLD, 0));
    roots[2] = tnode_new(900001);
    LULL_SET((struct tnode *)roots[2], next, (struct tnode *)make_array(BY_NURSERY, 0));
    lull_store(roots[0], &((refs *)roots[0])->item[K], make_array(BY_YOUNG, 0));
}

static NOINLINE void garbage(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        CHECK(lull_alloc(&tnode_type), "lull_alloc failed");
}

static void kept_arrays(void)
{
    CHECK(lull_root_add_refs(roots, 3) == 0, "lull_root_add_refs");
    build();
    clobber_stack();
    refs *volatile on_stack = make_array(BY_STACK, 0);
    char when[64];
    for (int round = 0; round < 8; round++) {
        if (round % 4 == 3)
            lull_collect(LULL_GEN_MAJOR);
        else
            lull_collect(LULL_GEN_NURSERY);
        garbage(20000);
        snprintf(when, sizeof when, "after collection %d", round + 1);
        for (uint32_t k = 0; k < NKINDS; k++)
            check_array(array_of(k, on_stack), k, when);
    }
    lull_root_remove(roots);
}

/* ---- a dropped young array while a concurrent mark runs ---- */

/* With the mark stretched (ctest young_large_marking: mark-delay), minors
 * run while it marks; a dropped array is freed, or kept until the final
 * pause if the mark holds it, and then must not hold references into the
 * evacuated nursery (verify-nursery checks every object after each minor,
 * dead ones too). */
static void *ring[8];          /* precise roots: old data replaced round by round */

static void dead_array_while_marking(void)
{
    lull_set_pause_hook(mark_running_hook, NULL);
    CHECK(lull_root_add_refs(ring, 8) == 0, "lull_root_add_refs");
    int rounds = 0;
    for (int i = 0; i < 2000 && rounds < 5; i++) {
        /* Large, kept for 8 rounds (old after two minors: one a round
         * here), then dropped: the major heap grows by 1 MiB a round,
         * which starts majors. */
        ring[i % 8] = bytes_new(MB, (uint64_t)i);
        garbage(2000);
        lull_collect(LULL_GEN_NURSERY);
        if (mark_running) {
            run_in_fresh_thread(fill_dead);
            lull_collect(LULL_GEN_NURSERY);
            rounds++;
        }
    }
    lull_set_pause_hook(NULL, NULL);
    lull_root_remove(ring);
    printf("dropped arrays while a mark ran: %d\n", rounds);
    const char *dbg = getenv("LULL_GC_DEBUG");
    if (dbg && strstr(dbg, "mark-delay"))   /* else the marks may be too short to meet */
        CHECK(rounds > 0, "no concurrent mark ran during 2000 rounds of allocation");
}

int main(void)
{
    /* The 5 MiB fill of dead_array must fit one nursery: 16 MiB from the
     * start, which a 10 s target allows (at the default 5 ms the first
     * nursery is sized from an assumed cost per byte: 3.4 MiB). */
    CHECK(lull_init("nursery-size=16m,pause-target=10s") == 0, "lull_init");
    dead_array();
    kept_arrays();
    dead_array_while_marking();
    lull_shutdown();
    printf("young_large: ok\n");
    return 0;
}
