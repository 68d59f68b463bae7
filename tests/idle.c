/*
 * idle — lull_idle runs a minor where a unit of work ends, so that the
 * unit's temporaries die in the nursery:
 *
 *  - lull_idle(0) is -EINVAL; the first call only starts measuring the
 *    allocation between calls; with nothing handed out since the last
 *    minor it runs none; in an idle time shorter than any minor (1 ns) it
 *    runs none;
 *  - frames that allocate 1.5 MiB of temporaries held until the frame's
 *    end, with a 2 MiB nursery: with lull_idle at every frame's end, nearly
 *    every minor after the first frames runs there (lull_stats.minors_idle)
 *    and a small share of the frames' allocation is promoted; the same
 *    frames without the calls promote several times that share (each minor
 *    comes in the middle of a frame and promotes its temporaries so far);
 *  - what the frames keep (a list grown by every frame) is intact.
 *
 *   test_idle [params]   (LULL_GC_PARAMS for both runs; default below)
 */
#include "check.h"

#define FRAMES      60
#define TEMPS       2048        /* per frame ... */
#define TEMP_BYTES  752         /* ... of about 768 bytes each: 1.5 MiB */
#define KEEP        16          /* list nodes kept per frame */

/* Precise roots (a conservative root range would pin what it holds in the
 * nursery instead of letting a minor promote it). */
static struct bytes *scratch[TEMPS];    /* the frame's temporaries */
static struct tnode *kept;              /* what the frames keep */

static NOINLINE void frame(uint64_t f)
{
    for (size_t i = 0; i < TEMPS; i++)
        scratch[i] = bytes_new(TEMP_BYTES, f * TEMPS + i);
    for (size_t i = 0; i < KEEP; i++) {
        struct tnode *n = tnode_new(f * KEEP + i);
        lull_store(n, &n->next, kept);
        kept = n;
    }
    for (size_t i = 0; i < TEMPS; i += 97)
        bytes_verify(scratch[i], f * TEMPS + i, TEMP_BYTES, "a temporary of this frame");
    memset(scratch, 0, sizeof scratch);     /* the frame's end: its temporaries are dead */
}

static NOINLINE void verify_kept(void)
{
    const struct tnode *n = kept;
    for (uint64_t id = (uint64_t)FRAMES * KEEP; id-- > 0; n = n->next)
        CHECK(tnode_ok(n, id), "kept node %" PRIu64 " is wrong or missing", id);
    CHECK(n == NULL, "the kept list is longer than what the frames kept");
}

/* FRAMES frames, with or without lull_idle at each one's end. Returns the
 * share of the frames' allocation promoted; *idle gets minors_idle and
 * *minors all minors (both over the frames). */
static double run(const char *params, bool call_idle, uint64_t *idle, uint64_t *minors)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    CHECK(lull_root_add_refs((void **)scratch, TEMPS) == 0, "lull_root_add_refs(scratch) failed");
    CHECK(lull_root_add_refs((void **)&kept, 1) == 0, "lull_root_add_refs(kept) failed");
    kept = NULL;
    lull_stats a = get_stats();
    for (uint64_t f = 0; f < FRAMES; f++) {
        frame(f);
        if (call_idle) {
            int r = lull_idle(1000000000ull);   /* a second: any minor here fits */
            CHECK(r == 0 || r == 1, "lull_idle returned %d", r);
            CHECK(f > 0 || r == 0, "the first lull_idle collected: it has no allocation between calls to go by");
        }
    }
    lull_stats b = get_stats();
    verify_kept();
    *idle = b.minors_idle - a.minors_idle;
    *minors = b.collections_minor - a.collections_minor;
    double share = (double)(b.bytes_promoted - a.bytes_promoted) / (double)(b.bytes_allocated - a.bytes_allocated);
    printf("idle: %s lull_idle: %" PRIu64 " minors, %" PRIu64 " in idle time, %.1f%% of %.1f MiB promoted\n",
           call_idle ? "with" : "without", *minors, *idle, 100 * share,
           (double)(b.bytes_allocated - a.bytes_allocated) / 1048576.0);
    kept = NULL;
    lull_root_remove((void *)&kept);
    lull_root_remove((void *)scratch);
    lull_shutdown();
    return share;
}

/* The calls that must not collect. */
static void edges(const char *params)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    CHECK(lull_root_add_refs((void **)scratch, TEMPS) == 0, "lull_root_add_refs(scratch) failed");
    CHECK(lull_idle(0) == -EINVAL, "lull_idle(0) is not -EINVAL");
    frame(0);
    CHECK(lull_idle(1000000000ull) == 0, "the first call collected");
    frame(1);
    CHECK(lull_idle(1) == 0, "lull_idle(1 ns) collected: no minor fits in a nanosecond");
    frame(2);
    uint64_t before = get_stats().collections_minor;
    int r = lull_idle(1000000000ull);
    CHECK(r == 1, "a full frame's allocation on top of a nursery about to fill: lull_idle returned %d", r);
    CHECK(get_stats().collections_minor == before + 1, "lull_idle said it collected; collections_minor disagrees");
    CHECK(lull_idle(1000000000ull) == 0, "lull_idle collected right after its own minor, with nothing handed out");
    lull_root_remove((void *)scratch);
    lull_shutdown();
}

int main(int argc, char **argv)
{
    /* The nursery a little more than a frame; a pause target high enough
     * that the policy keeps it there. */
    const char *params = argc > 1 ? argv[1] : "nursery-size=2m,pause-target=1s";
    edges(params);
    uint64_t idle_w, minors_w, idle_wo, minors_wo;
    double with = run(params, true, &idle_w, &minors_w);
    clobber_stack();
    double without = run(params, false, &idle_wo, &minors_wo);
    CHECK(idle_wo == 0, "%" PRIu64 " minors counted as idle without a call to lull_idle", idle_wo);
    CHECK(idle_w * 10 >= minors_w * 8, "with lull_idle at every frame's end only %" PRIu64 " of %" PRIu64
          " minors ran there", idle_w, minors_w);
    CHECK(with * 3 < without, "lull_idle at every frame's end promoted %.1f%% of the allocation, without it %.1f%%: "
          "the frames' temporaries were promoted anyway", 100 * with, 100 * without);
    printf("idle: ok\n");
    return 0;
}
