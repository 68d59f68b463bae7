/*
 * pause_target — the nursery is sized from what minors cost (policy.c):
 *
 *  - before any minor has measured what a byte costs, the nursery starts
 *    at the target over an assumed 1.4 ns a byte (2 ms: 1.36 MiB), below
 *    nursery-size (8 MiB here);
 *  - lull_set_pause_target rejects 0 and values outside
 *    [LULL_PAUSE_TARGET_MIN_NS, LULL_PAUSE_TARGET_MAX_NS] with -EINVAL, and
 *    lull_stats reports the target it accepted;
 *  - calibrated at 10 s with nothing surviving, the nursery grows to
 *    nursery-size and stays there when the target becomes 2 ms (release
 *    builds only: under a sanitizer such minors may cost more);
 *  - under a survival-heavy load (every object kept) the minors exceed a
 *    2 ms target at the full 8 MiB nursery, are counted in
 *    minors_over_target, and the nursery shrinks by a quarter or more from
 *    where it started, or to its 256 KiB floor;
 *  - when survival drops (nothing kept) the nursery grows back to its
 *    ceiling, nursery-size;
 *  - a new target resizes the nursery at once, before the next minor (to
 *    1 MiB or less for 100 us; under a sanitizer it may be at its 256 KiB
 *    floor already);
 *  - with half the objects surviving the minors' median pause is within
 *    twice the target once the size has settled (release builds only: a
 *    sanitizer multiplies the cost of every copy, and the same load may
 *    then not fit the target in the smallest nursery, as the log says);
 *    the measured pauses and the collector's prediction are printed.
 */
#include "check.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MB ((size_t)1 << 20)
#define CEILING (8 * MB)
#define FLOOR   ((size_t)256 << 10)   /* the adaptive nursery's smallest size (policy.c) */
/* At the ceiling, nursery_bytes is the room beside what the last minor
 * left pinned there (a stale stack word: 1 KiB under ASan), so within
 * 1/64 of it. */
#define AT_CEILING(b) ((b) + CEILING / 64 >= CEILING)

typedef struct node {
    lull_header h;
    struct node *next;
    uint64_t payload[3];
} node;

static const lull_type node_type = { .name = "node", .size = sizeof(node), .refs = 1u << 1 };

typedef struct ring {
    lull_array_header a;
    void *slot[];
} ring;

static const lull_type ring_type = { .name = "ring", .size = sizeof(ring), .elem_size = sizeof(void *),
                                     .elem_refs = 1 };

static lull_stats stats(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s;
}

/* Minor pauses seen by the hook (phase C). */
static uint64_t minor_ns[4096];
static size_t nminor;
static bool recording;

static void hook(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (recording && ev->generation == LULL_GEN_NURSERY && nminor < sizeof minor_ns / sizeof minor_ns[0])
        minor_ns[nminor++] = ev->duration_ns;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Allocate until `minors` more minors ran; keep every `keep`-th node
 * (0: none) on the list at *head. */
static NOINLINE void allocate(node **head, unsigned keep, uint64_t minors)
{
    uint64_t until = stats().collections_minor + minors;
    for (uint64_t i = 0; stats().collections_minor < until; i++) {
        for (int k = 0; k < 1024; k++) {
            node *n = lull_alloc(&node_type);
            CHECK(n, "lull_alloc failed");
            n->payload[0] = i;
            if (keep && (i * 1024 + (uint64_t)k) % keep == 0) {
                LULL_SET(n, next, *head);
                *head = n;
            }
        }
    }
}

/* Phase C: keep every 2nd node in a ring of 64 Ki slots (old, so its
 * cards are dirtied), overwriting round robin. */
static NOINLINE void churn_ring(ring *r, uint64_t minors)
{
    uint64_t until = stats().collections_minor + minors, i = 0;
    while (stats().collections_minor < until) {
        for (int k = 0; k < 1024; k++, i++) {
            node *n = lull_alloc(&node_type);
            CHECK(n, "lull_alloc failed");
            n->payload[0] = i;
            if (i % 2 == 0)
                lull_store(r, &r->slot[(i / 2) % r->a.length], n);
        }
    }
}

int main(void)
{
    CHECK(lull_init("nursery-size=8m,pause-target=2ms") == 0, "lull_init");
    lull_set_pause_hook(hook, NULL);

    /* Before any minor is measured, a byte is taken to cost 1.4 ns: the
     * first nursery at 2 ms is 2 ms / 1.4 ns (1.36 MiB), not nursery-size. */
    lull_stats s0 = stats();
    printf("first nursery at 2 ms: %" PRIu64 " KiB\n", s0.nursery_bytes >> 10);
    CHECK(s0.collections_minor == 0 && s0.nursery_bytes < 3 * MB / 2 && s0.nursery_bytes > MB,
          "the first nursery is %" PRIu64 " KiB after %" PRIu64 " minors: not sized from the 2 ms target "
          "(2 ms / 1.4 ns = 1395 KiB)", s0.nursery_bytes >> 10, s0.collections_minor);

    /* The setter's bounds. */
    CHECK(lull_set_pause_target(0) == -EINVAL, "0 accepted");
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MIN_NS - 1) == -EINVAL, "99.999 us accepted");
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MAX_NS + 1) == -EINVAL, "10 s + 1 ns accepted");
    CHECK(lull_set_pause_target(UINT64_MAX) == -EINVAL, "UINT64_MAX accepted");
    CHECK(stats().pause_target_ns == 2000000, "pause-target=2ms reads back as %" PRIu64, stats().pause_target_ns);
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MAX_NS) == 0, "10 s refused");

    /* Calibrate at 10 s (set just above), with nothing surviving: the
     * nursery grows to its ceiling, nursery-size, and a byte is measured to
     * cost little, so that the nursery stays at the ceiling when the target
     * is 2 ms. */
    node *head = NULL;
    uint64_t start = stats().collections_minor;
    while (!AT_CEILING(stats().nursery_bytes) && stats().collections_minor < start + 20)
        allocate(&head, 0, 1);
    CHECK(AT_CEILING(stats().nursery_bytes), "at 10 s the nursery did not grow to 8 MiB: %" PRIu64 " KiB after %"
          PRIu64 " minors without survivors", stats().nursery_bytes >> 10, stats().collections_minor - start);
    CHECK(lull_set_pause_target(2000000) == 0, "2 ms refused");
    /* Under a sanitizer a minor without survivors may cost more than 2 ms
     * for 8 MiB (one ASan CI run: 2224 KiB here); phase A then starts
     * smaller, and still has to shrink the nursery. */
    uint64_t start_a = stats().nursery_bytes;
    printf("no survivors at 10 s, then 2 ms: nursery %" PRIu64 " KiB\n", start_a >> 10);
    if (!SANITIZED)
        CHECK(AT_CEILING(start_a), "the nursery left 8 MiB (%" PRIu64 " KiB) when the target became 2 ms after minors "
              "without survivors", start_a >> 10);

    /* A: everything survives. */
    allocate(&head, 1, 12);
    lull_stats a = stats();
    printf("survival-heavy: nursery %" PRIu64 " KiB, %" PRIu64 " of %" PRIu64 " minors over the target\n",
           a.nursery_bytes >> 10, a.minors_over_target, a.collections_minor);
    CHECK(a.minors_over_target > 0, "no minor exceeded 2 ms while copying a full 8 MiB nursery");
    /* How far depends on the cost per byte: since promotion goes into
     * blocks prepared beforehand (no page faults), 4-5 MiB meet 2 ms here. */
    CHECK(a.nursery_bytes <= start_a / 4 * 3 || a.nursery_bytes == FLOOR, "the nursery did not shrink under full "
          "survival: %" PRIu64 " KiB from %" PRIu64 " KiB", a.nursery_bytes >> 10, start_a >> 10);

    /* B: nothing survives; the nursery grows back within 200 minors. */
    head = NULL;
    lull_collect(LULL_GEN_MAJOR);
    start = stats().collections_minor;
    while (!AT_CEILING(stats().nursery_bytes) && stats().collections_minor < start + 200)
        allocate(&head, 0, 1);
    lull_stats b = stats();
    printf("no survivors: nursery %" PRIu64 " KiB after %" PRIu64 " minors\n", b.nursery_bytes >> 10,
           b.collections_minor - start);
    CHECK(AT_CEILING(b.nursery_bytes), "the nursery did not grow back to 8 MiB: %" PRIu64 " KiB after %" PRIu64
          " minors without survivors", b.nursery_bytes >> 10, b.collections_minor - start);

    /* C: half survives, in a ring; settle, then measure 40 minors. */
    CHECK(lull_set_pause_target(1000000) == 0, "1 ms refused");
    ring *r = lull_alloc_array(&ring_type, 1u << 16);
    CHECK(r, "ring");
    churn_ring(r, 30);
    recording = true;
    churn_ring(r, 40);
    recording = false;
    lull_stats c = stats();
    qsort(minor_ns, nminor, sizeof minor_ns[0], cmp_u64);
    uint64_t median = minor_ns[nminor / 2];
    printf("half survives, target 1 ms: nursery %" PRIu64 " KiB, %zu minors: median %.3f ms, p90 %.3f ms, "
           "max %.3f ms\n", c.nursery_bytes >> 10, nminor, median / 1e6, minor_ns[nminor * 9 / 10] / 1e6,
           minor_ns[nminor - 1] / 1e6);
    CHECK(nminor >= 40, "only %zu minors recorded", nminor);
    if (!SANITIZED)
        CHECK(median <= 2 * 1000000, "median minor %.3f ms, more than twice the 1 ms target", median / 1e6);
    /* Shrunk, unless the minors of the full nursery met the target: on a
     * fast, quiet machine they did (median 0.969 ms at 8 MiB in one CI
     * run), and then there was nothing to shrink for. */
    CHECK(!AT_CEILING(c.nursery_bytes) || median <= 1000000,
          "the nursery stayed at 8 MiB although its minors took %.3f ms (median) against a 1 ms target",
          median / 1e6);

    /* D: a new target applies at once: at the smallest one the nursery
     * shrinks before the next minor. */
    uint64_t minors = stats().collections_minor;
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MIN_NS) == 0, "100 us refused");
    lull_stats d = stats();
    CHECK(d.pause_target_ns == LULL_PAUSE_TARGET_MIN_NS, "the target reads back as %" PRIu64, d.pause_target_ns);
    CHECK(d.collections_minor == minors && d.nursery_bytes <= c.nursery_bytes && d.nursery_bytes <= MB,
          "the nursery is %" PRIu64 " KiB (was %" PRIu64 " KiB) when the target fell to 100 us",
          d.nursery_bytes >> 10, c.nursery_bytes >> 10);

    lull_shutdown();
    printf("pause_target: ok\n");
    return 0;
}
