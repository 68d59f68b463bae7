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

/* Minor pauses seen by the hook (phase C); the last minor's pause; the
 * minors whose pause exceeded the target in effect (target_now), counted
 * as policy.c counts minors_over_target. */
static uint64_t minor_ns[4096];
static size_t nminor;
static bool recording;
static uint64_t last_minor_ns, target_now, hook_over;

static void hook(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (ev->generation != LULL_GEN_NURSERY)
        return;
    last_minor_ns = ev->duration_ns;
    if (ev->duration_ns > target_now)
        hook_over++;
    if (recording && nminor < sizeof minor_ns / sizeof minor_ns[0])
        minor_ns[nminor++] = ev->duration_ns;
}

static void set_target(uint64_t ns)
{
    target_now = ns;
    CHECK(lull_set_pause_target(ns) == 0, "%" PRIu64 " ns refused", ns);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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

/*
 * What the collector's model (policy.c) can predict, bounded by what the
 * hook measured. The model predicts a minor of N nursery bytes to take
 * fixed + per_byte * N, each a moving average (weight 1/4) of the minors'
 * samples fixed_i + per_byte_i * handed_i = pause_i. For N >= handed_i a
 * sample's prediction fixed_i + per_byte_i * N is at least pause_i, and for
 * N = CEILING at most pause_i * CEILING / handed_i. `bound` averages these
 * the same way: as an upper bound (handed_i taken as 15/16 of the nursery
 * the minor filled) or a lower one (pause_i).
 */
struct model_bound {
    double upper, lower;
    unsigned n;
};

static void bound_add(struct model_bound *m, uint64_t pause, uint64_t nursery)
{
    double up = (double)pause * (double)CEILING / ((double)nursery - (double)nursery / 16), lo = (double)pause;
    m->upper = m->n ? m->upper + (up - m->upper) / 4 : up;
    m->lower = m->n ? m->lower + (lo - m->lower) / 4 : lo;
    m->n++;
}

/* One minor's worth of allocation, its pause added to *m. */
static void measured_minor(node **head, unsigned keep, struct model_bound *m)
{
    uint64_t nursery = stats().nursery_bytes;
    allocate(head, keep, 1);
    bound_add(m, last_minor_ns, nursery);
}

/* A check whose condition this machine did not give: said, and the test
 * exits 77 (skipped) once every other check has passed. */
static const char *not_shown;
static void cannot_show(const char *what, double predicted_ns)
{
    printf("pause_target: NOT CHECKED: %s: on this machine (its speed and load now) the minors measured put a minor "
           "of the 8 MiB nursery at up to %.3f ms, so the 2 ms target need not keep it\n", what, predicted_ns / 1e6);
    not_shown = what;
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

    /* Before any minor is measured, a byte is taken to cost 1.4 ns and the
     * widest margin (1.5) is left: the first nursery at 2 ms is
     * 2 ms / 1.5 / 1.4 ns (930 KiB), not nursery-size. */
    lull_stats s0 = stats();
    printf("first nursery at 2 ms: %" PRIu64 " KiB\n", s0.nursery_bytes >> 10);
    CHECK(s0.collections_minor == 0 && s0.nursery_bytes < MB && s0.nursery_bytes > MB / 2,
          "the first nursery is %" PRIu64 " KiB after %" PRIu64 " minors: not sized from the 2 ms target "
          "(2 ms / 1.5 / 1.4 ns = 930 KiB)", s0.nursery_bytes >> 10, s0.collections_minor);

    /* The setter's bounds. */
    CHECK(lull_set_pause_target(0) == -EINVAL, "0 accepted");
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MIN_NS - 1) == -EINVAL, "99.999 us accepted");
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MAX_NS + 1) == -EINVAL, "10 s + 1 ns accepted");
    CHECK(lull_set_pause_target(UINT64_MAX) == -EINVAL, "UINT64_MAX accepted");
    CHECK(stats().pause_target_ns == 2000000, "pause-target=2ms reads back as %" PRIu64, stats().pause_target_ns);
    set_target(LULL_PAUSE_TARGET_MAX_NS);

    /* Calibrate at 10 s (set just above), with nothing surviving: the
     * nursery grows to its ceiling, nursery-size, and a byte is measured to
     * cost little, so that the nursery stays at the ceiling when the target
     * is 2 ms. */
    node *head = NULL;
    struct model_bound cal = { 0 };
    uint64_t start = stats().collections_minor;
    while (!AT_CEILING(stats().nursery_bytes) && stats().collections_minor < start + 20)
        measured_minor(&head, 0, &cal);
    CHECK(AT_CEILING(stats().nursery_bytes), "at 10 s the nursery did not grow to 8 MiB: %" PRIu64 " KiB after %"
          PRIu64 " minors without survivors", stats().nursery_bytes >> 10, stats().collections_minor - start);
    /* Eight more at the ceiling: the model's averages then follow minors
     * of the full nursery, the size asked about below. */
    for (int i = 0; i < 8; i++)
        measured_minor(&head, 0, &cal);
    set_target(2000000);
    /* Whether 8 MiB meets 2 ms depends on the machine (a minor without
     * survivors of 8 MiB took over 2 ms in 1 of 8 runs on a quiet 2-core
     * VM, and under ASan; phase A then starts smaller, and still has to
     * shrink the nursery). When the minors measured put the model's
     * prediction below 2 ms, the nursery must stay at 8 MiB: it follows
     * the measured cost (at the unmeasured 1.4 ns a byte it would be
     * 1.36 MiB). */
    uint64_t start_a = stats().nursery_bytes;
    printf("no survivors at 10 s, then 2 ms: nursery %" PRIu64 " KiB (the minors measured predict at most %.3f ms for "
           "8 MiB)\n", start_a >> 10, cal.upper / 1e6);
    if (cal.upper < 2e6)
        CHECK(AT_CEILING(start_a), "the nursery left 8 MiB (%" PRIu64 " KiB) when the target became 2 ms after minors "
              "without survivors that put 8 MiB at %.3f ms at most", start_a >> 10, cal.upper / 1e6);
    else if (!AT_CEILING(start_a))
        cannot_show("the nursery stays at 8 MiB when the target drops to 2 ms", cal.upper);

    /* A: everything survives. */
    double per_byte_a[12];
    for (int i = 0; i < 12; i++) {
        uint64_t nursery = stats().nursery_bytes;
        allocate(&head, 1, 1);
        per_byte_a[i] = (double)last_minor_ns / (double)nursery;
    }
    lull_stats a = stats();
    printf("survival-heavy: nursery %" PRIu64 " KiB, %" PRIu64 " of %" PRIu64 " minors over the target (the hook "
           "saw %" PRIu64 ")\n", a.nursery_bytes >> 10, a.minors_over_target, a.collections_minor, hook_over);
    /* Counted, not timed: every minor whose pause (as the hook saw it)
     * exceeded the target in effect, and only those. */
    CHECK(a.minors_over_target == hook_over, "minors_over_target is %" PRIu64 ", but %" PRIu64 " minors' pauses "
          "exceeded the target", a.minors_over_target, hook_over);
    /* How far depends on the cost per byte, which the pauses measure (since
     * promotion goes into blocks prepared beforehand, 1.4-1.6 MiB meet
     * 2 ms here, a seventh of 8 MiB). When the median survival-heavy minor,
     * scaled to the nursery phase A began with, takes 1.5 times the target
     * or more, the nursery must end up a quarter smaller: the model sizes
     * it to (target - fixed) / per_byte. */
    qsort(per_byte_a, 12, sizeof per_byte_a[0], cmp_double);
    double scaled_a = per_byte_a[6] * (double)start_a;
    if (scaled_a >= 3e6)
        CHECK(a.nursery_bytes <= start_a / 4 * 3 || a.nursery_bytes == FLOOR, "the nursery did not shrink under full "
              "survival: %" PRIu64 " KiB from %" PRIu64 " KiB, where the minors measured would take %.3f ms",
              a.nursery_bytes >> 10, start_a >> 10, scaled_a / 1e6);
    else if (a.nursery_bytes > start_a / 4 * 3 && a.nursery_bytes != FLOOR) {
        printf("pause_target: NOT CHECKED: the nursery shrinks under full survival: its minors take %.3f ms at "
               "%" PRIu64 " KiB on this machine, not 1.5 times the 2 ms target\n", scaled_a / 1e6, start_a >> 10);
        not_shown = "the nursery shrinks under full survival";
    }

    /* B: nothing survives; the nursery grows back within 200 minors. */
    head = NULL;
    lull_collect(LULL_GEN_MAJOR);
    start = stats().collections_minor;
    struct model_bound grow = { 0 };
    while (!AT_CEILING(stats().nursery_bytes) && stats().collections_minor < start + 200)
        measured_minor(&head, 0, &grow);
    lull_stats b = stats();
    printf("no survivors: nursery %" PRIu64 " KiB after %" PRIu64 " minors\n", b.nursery_bytes >> 10,
           b.collections_minor - start);
    /* After 200 minors the model's averages are these minors' alone: when
     * they put 8 MiB under 2 ms, the nursery must be back there. */
    if (!AT_CEILING(b.nursery_bytes) && grow.upper >= 2e6)
        cannot_show("the nursery grows back to 8 MiB without survivors", grow.upper);
    else
        CHECK(AT_CEILING(b.nursery_bytes), "the nursery did not grow back to 8 MiB: %" PRIu64 " KiB after %" PRIu64
              " minors without survivors that put 8 MiB at %.3f ms at most", b.nursery_bytes >> 10,
              b.collections_minor - start, grow.upper / 1e6);

    /* C: half survives, in a ring; settle, then measure 40 minors. */
    set_target(1000000);
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
    /* Near the target, unless the smallest nursery cannot get there (under
     * load or a sanitizer). */
    if (!SANITIZED)
        CHECK(median <= 2 * 1000000 || c.nursery_bytes <= FLOOR, "median minor %.3f ms, more than twice the 1 ms "
              "target, in a %" PRIu64 " KiB nursery", median / 1e6, c.nursery_bytes >> 10);
    /* Shrunk, unless the minors of the full nursery met the target: on a
     * fast, quiet machine they did (median 0.969 ms at 8 MiB in one CI
     * run), and then there was nothing to shrink for. At the ceiling the
     * model predicts 8 MiB within the target, and its prediction is at
     * least the moving average of the pauses (model_bound.lower): that
     * average must be within the target too (5% for the nursery's room
     * beside pinned objects). */
    struct model_bound cm = { 0 };
    for (size_t i = 0; i < nminor; i++)
        bound_add(&cm, minor_ns[i], CEILING);
    CHECK(!AT_CEILING(c.nursery_bytes) || cm.lower <= 1050000,
          "the nursery stayed at 8 MiB although its minors took %.3f ms (moving average; median %.3f ms) against a "
          "1 ms target", cm.lower / 1e6, median / 1e6);

    /* D: a new target applies at once: at the smallest one the nursery
     * shrinks before the next minor. */
    uint64_t minors = stats().collections_minor;
    set_target(LULL_PAUSE_TARGET_MIN_NS);
    lull_stats d = stats();
    CHECK(d.pause_target_ns == LULL_PAUSE_TARGET_MIN_NS, "the target reads back as %" PRIu64, d.pause_target_ns);
    /* How small: (100 us - fixed) / per_byte, a tenth of what 1 ms gave
     * (a quarter allowed: the last size may have been held back by the
     * doubling limit); at the ceiling, per_byte is at least the average
     * pause over 8 MiB, so 100 us of it is at most 8 MiB * 100 us / that
     * (and a quarter more). */
    uint64_t most = AT_CEILING(c.nursery_bytes) ? (uint64_t)((double)CEILING * 1e5 / cm.lower * 1.25)
                                                : c.nursery_bytes / 4;
    if (most < FLOOR)
        most = FLOOR;
    CHECK(d.collections_minor == minors && d.nursery_bytes <= c.nursery_bytes && d.nursery_bytes <= most,
          "the nursery is %" PRIu64 " KiB (was %" PRIu64 " KiB; at most %" PRIu64 " KiB expected) when the target "
          "fell to 100 us", d.nursery_bytes >> 10, c.nursery_bytes >> 10, most >> 10);

    lull_shutdown();
    if (not_shown) {
        printf("pause_target: skipped: every other check passed; not shown on this machine: %s\n", not_shown);
        return 77;
    }
    printf("pause_target: ok\n");
    return 0;
}
