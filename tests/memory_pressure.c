/*
 * memory_pressure — lull_add_memory_pressure / lull_remove_memory_pressure:
 *
 *  - the pressure shows in lull_stats.memory_pressure_bytes, never below 0
 *    (removing more than was added leaves 0); what was added before
 *    lull_init counts (the statistics read 0 before it, as every field);
 *  - a program allocates 160 MiB of medium objects, each standing for a
 *    buffer outside the heap of k times its size (pressure added with it;
 *    freed, as its finalizer would, when a major has run): with k = 1 the
 *    majors come twice as often as with no pressure, with k = 3 four
 *    times (within a quarter with major=stw; with major=concurrent at
 *    least 0.6 of that: the mark's own run is not shortened).
 */
#include "check.h"

static const lull_type blob_type = { .name = "blob", .size = 16, .elem_size = 1 };
#define BLOB 3088u

static uint64_t run(const char *params, unsigned k)
{
    CHECK(lull_init(params) == 0, "init %s", params);
    lull_stats s0 = get_stats();
    uint64_t majors = s0.collections_major, held = 0;
    for (uint64_t done = 0, i = 0; done < ((uint64_t)160 << 20); done += BLOB, i++) {
        CHECK(lull_alloc_array(&blob_type, BLOB - 16) != NULL, "blob");
        if (k) {
            lull_add_memory_pressure((size_t)k * BLOB);
            held += (uint64_t)k * BLOB;
        }
        if (i % 32 == 0) {
            lull_stats s = get_stats();
            if (s.collections_major != majors) {
                majors = s.collections_major;
                lull_remove_memory_pressure(held);    /* the buffers' finalizers ran */
                held = 0;
            }
        }
    }
    lull_remove_memory_pressure(held);
    uint64_t n = get_stats().collections_major - s0.collections_major;
    lull_shutdown();
    return n;
}

/* Majors with k x pressure over majors without, within [lo, hi] x (1 + k). */
static void ratios(const char *params, double lo, double hi)
{
    uint64_t m0 = run(params, 0), m1 = run(params, 1), m3 = run(params, 3);
    printf("%s: majors with no pressure %" PRIu64 ", with 1x %" PRIu64 " (%.2f), with 3x %" PRIu64 " (%.2f)\n", params,
           m0, m1, (double)m1 / (double)m0, m3, (double)m3 / (double)m0);
    CHECK(m0 >= 8, "too few majors to compare");
    double r1 = (double)m1 / (double)m0 / 2, r3 = (double)m3 / (double)m0 / 4;
    CHECK(r1 >= lo && r1 <= hi, "1x pressure: %" PRIu64 " majors for %" PRIu64, m1, m0);
    CHECK(r3 >= lo && r3 <= hi, "3x pressure: %" PRIu64 " majors for %" PRIu64, m3, m0);
}

int main(void)
{
    lull_add_memory_pressure(1000);
    lull_remove_memory_pressure(400);
    lull_stats s;
    lull_get_stats(&s);
    CHECK(s.memory_pressure_bytes == 0, "stats before lull_init are 0");
    CHECK(lull_init(NULL) == 0, "init");
    lull_get_stats(&s);
    CHECK(s.memory_pressure_bytes == 600, "pressure added before lull_init: %" PRIu64, s.memory_pressure_bytes);
    lull_remove_memory_pressure(10000);
    lull_get_stats(&s);
    CHECK(s.memory_pressure_bytes == 0, "pressure below 0: %" PRIu64, s.memory_pressure_bytes);
    lull_shutdown();
    ratios("major=stw", 0.75, 1.25);
    /* A concurrent major's mark runs on while the program allocates, for
     * as long with pressure as without: its share of a cycle does not
     * shrink with the pressure. */
    ratios("major=concurrent", 0.6, 1.25);
    printf("ok\n");
    return 0;
}
