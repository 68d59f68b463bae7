/*
 * idle_major — lull_idle takes a major's pauses out of the program's units
 * of work (policy.c: lull_policy_idle_major, final_pause_waits_for_idle,
 * start_major):
 *
 *  - frames that allocate temporaries and replace part of a ring of
 *    retained objects (so that promotion keeps concurrent majors coming),
 *    with lull_idle(1 s) at each frame's end: every concurrent major's
 *    final pause, but those the allowance cut short, runs in a lull_idle
 *    call (lull_stats.majors_idle), none at an allocation in a frame;
 *  - a heap fragmented as in tests/fragmented (a population of small
 *    objects, nine in ten dropped), synchronous majors allowed, frames
 *    calling lull_idle(1 us): the majors that allocation starts are
 *    concurrent and evacuate nothing, although the policy prefers
 *    evacuation; then lull_idle(10 s) runs the evacuating major (counted
 *    in collections_major_sync, objects_evacuated and majors_idle), and
 *    what was kept is intact.
 *
 *   test_idle_major [params]   (LULL_GC_PARAMS; default below)
 */
#include "check.h"

#define TEMPS      1024         /* a frame's temporaries ... */
#define TEMP_BYTES 752          /* ... of about 768 bytes each */
#define RING       4096         /* retained objects ... */
#define RING_BYTES 240          /* ... of 256 bytes each: 1 MiB */
#define REPLACE    512          /* replaced per frame: 128 KiB promoted */
#define N          1200000u     /* the fragmenting population: 37 MiB */
#define KEEP       10u          /* one in KEEP kept */

static struct bytes *scratch[TEMPS];   /* precise roots */
static struct bytes *ring[RING];
static uint64_t ring_seed[RING];
static uint64_t next_seed = 1;
static struct refs *volatile keep;
static struct bytes *volatile ballast;  /* live, pointer-free: the allowance is its size */
#define BALLAST ((size_t)16 << 20)

static NOINLINE void frame(uint64_t f)
{
    for (size_t i = 0; i < TEMPS; i++)
        scratch[i] = bytes_new(TEMP_BYTES, f * TEMPS + i);
    for (size_t k = 0; k < REPLACE; k++) {
        size_t i = (size_t)(mix64(f * REPLACE + k) % RING);
        ring_seed[i] = next_seed++;
        ring[i] = bytes_new(RING_BYTES, ring_seed[i]);
    }
    for (size_t i = 0; i < TEMPS; i += 61)
        bytes_verify(scratch[i], f * TEMPS + i, TEMP_BYTES, "a temporary of this frame");
    memset(scratch, 0, sizeof scratch);
}

static void verify_ring(void)
{
    for (size_t i = 0; i < RING; i++)
        if (ring[i])
            bytes_verify(ring[i], ring_seed[i], RING_BYTES, "a ring object");
}

static void start(const char *params)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    CHECK(lull_root_add_refs((void **)scratch, TEMPS) == 0, "lull_root_add_refs(scratch) failed");
    CHECK(lull_root_add_refs((void **)ring, RING) == 0, "lull_root_add_refs(ring) failed");
    memset(ring, 0, sizeof ring);
    /* Without it the allowance is the 4 MiB minimum, which two minors in
     * the middle of a frame use up: marks were cut short. */
    CHECK(lull_root_add_refs((void **)&ballast, 1) == 0, "lull_root_add_refs(ballast) failed");
    ballast = bytes_new(BALLAST, 77);
}

static void stop(void)
{
    bytes_verify(ballast, 77, BALLAST, "the ballast");
    ballast = NULL;
    lull_root_remove((void *)&ballast);
    verify_ring();
    memset(ring, 0, sizeof ring);
    lull_root_remove((void *)ring);
    lull_root_remove((void *)scratch);
    lull_shutdown();
}

/* Every concurrent major's final pause in a lull_idle call. */
static void final_pauses(const char *params)
{
    start(params);
    uint64_t f = 0;
    for (; f < 8; f++) {          /* the calls begin */
        frame(f);
        CHECK(lull_idle(1000000000ull) >= 0, "lull_idle failed");
    }
    lull_stats a = get_stats();
    lull_stats b = a;
    /* Until six majors ended and three of them in lull_idle: a mark the
     * allowance cuts short (the markers slowed by the machine's load or a
     * sanitizer) ends with the world stopped, and how many are depends on
     * the machine; the frames go on until three marks got their time. */
    for (uint64_t end = f + 4000;
         f < end && (b.collections_major - a.collections_major < 6 || b.majors_idle - a.majors_idle < 3); f++) {
        frame(f);
        sleep_ms(1);              /* the rest of the frame's work: the marks get their time */
        CHECK(lull_idle(1000000000ull) >= 0, "lull_idle failed");
        b = get_stats();
    }
    uint64_t majors = b.collections_major - a.collections_major, sync = b.collections_major_sync - a.collections_major_sync,
             idle = b.majors_idle - a.majors_idle;
    printf("idle_major: %" PRIu64 " frames: %" PRIu64 " majors (%" PRIu64 " cut short by the allowance), %" PRIu64
           " final pauses in lull_idle\n", f, majors, sync, idle);
    CHECK(majors >= 6, "only %" PRIu64 " majors in %" PRIu64 " frames", majors, f);
    CHECK(idle + sync == majors, "of %" PRIu64 " majors (%" PRIu64 " cut short), %" PRIu64 " ended in lull_idle: "
          "the others' final pauses ran at an allocation, in a frame", majors, sync, idle);
    CHECK(idle >= 3, "%" PRIu64 " of %" PRIu64 " majors cut short by the allowance, %" PRIu64 " ended in lull_idle in "
          "%" PRIu64 " frames", sync, majors, idle, f);
    stop();
}

static void fragment(void)
{
    fragment_heap(N, KEEP, &keep);
}

static void verify_kept(const char *when)
{
    fragment_verify(N, KEEP, keep, when);
}

/* The evacuating major waits for an idle call long enough for it. */
static void evacuation(const char *params)
{
    start(params);
    CHECK(lull_root_add_refs((void **)&keep, 1) == 0, "lull_root_add_refs(keep) failed");
    run_in_fresh_thread(fragment);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);         /* concurrent: frees nine tenths, measures the rest */
    verify_kept("after the first major");

    /* Frames with idle calls too short for any collection. */
    uint64_t f = 0;
    for (; f < 8; f++) {
        frame(f);
        CHECK(lull_idle(1000) == 0, "lull_idle(1 us) collected");
    }
    lull_stats a = get_stats();
    lull_stats b = a;
    for (uint64_t end = f + 4000; f < end && b.collections_major - a.collections_major < 2; f++) {
        frame(f);
        sleep_ms(1);              /* the rest of the frame's work: the marks get their time */
        CHECK(lull_idle(1000) == 0, "lull_idle(1 us) collected");
        b = get_stats();
    }
    printf("idle_major: fragmented heap, %" PRIu64 " frames: %" PRIu64 " majors, %" PRIu64 " synchronous, %" PRIu64
           " objects evacuated\n", f, b.collections_major - a.collections_major,
           b.collections_major_sync - a.collections_major_sync, b.objects_evacuated - a.objects_evacuated);
    CHECK(b.collections_major - a.collections_major >= 2, "no major in %" PRIu64 " frames", f);
    CHECK(b.objects_evacuated == a.objects_evacuated,
          "a major started by an allocation in a frame evacuated %" PRIu64 " objects, although the program "
          "calls lull_idle", b.objects_evacuated - a.objects_evacuated);
    /* (A mark the allowance cut short, as under the sanitizers, ends with
     * the world stopped too, and evacuates nothing.) */
    verify_kept("after the concurrent majors");

    /* Long idle calls: the evacuating major. A mark may run still: it
     * must end first (in a call, once its background work is done). */
    lull_stats c = b;
    uint64_t deadline = now_ns() + 60000000000ull;
    while (c.collections_major_sync == b.collections_major_sync && now_ns() < deadline) {
        int r = lull_idle(10000000000ull);
        CHECK(r == 0 || r == 1, "lull_idle(10 s) returned %d", r);
        if (!r) {
            CHECK(__atomic_load_n(&lull__barrier.marking, __ATOMIC_RELAXED), "lull_idle(10 s) on a fragmented heap, no mark running, did nothing");
            sleep_ms(1);
        }
        c = get_stats();
    }
    CHECK(c.collections_major_sync == b.collections_major_sync + 1,
          "lull_idle(10 s) on a fragmented heap ran no synchronous major");
    CHECK(c.objects_evacuated > b.objects_evacuated, "lull_idle's synchronous major evacuated nothing");
    CHECK(c.majors_idle > b.majors_idle, "majors_idle did not count lull_idle's major");
    verify_kept("after the evacuation");
    printf("idle_major: lull_idle(10 s) evacuated %" PRIu64 " objects\n", c.objects_evacuated - b.objects_evacuated);
    keep = NULL;
    lull_root_remove((void *)&keep);
    stop();
}

int main(int argc, char **argv)
{
    const char *params = argc > 1 ? argv[1] : "nursery-size=2m,pause-target=1s";
    final_pauses(params);
    clobber_stack();
    evacuation(params);
    printf("idle_major: ok\n");
    return 0;
}
