/*
 * memory_pressure — lull_add_memory_pressure / lull_remove_memory_pressure:
 *
 *  - the pressure shows in lull_stats.memory_pressure_bytes, never below 0
 *    (removing more than was added leaves 0); what was added before
 *    lull_init counts (the statistics read 0 before it, as every field);
 *  - a program allocates 160 MiB of 3 KiB objects straight into the major
 *    heap (major_blob), each standing for a
 *    buffer outside the heap of k times its size (pressure added with it;
 *    freed, as its finalizer would, when a major has run): from a major's
 *    end to the next major's start it allocates half as much with k = 1
 *    as with no pressure, a quarter with k = 3 (within a quarter), for
 *    major=stw and major=concurrent (measured to the start: a concurrent
 *    mark's own run is not what the pressure shortens).
 */
#include "check.h"

#define BLOB 3072u

/* Allocate 160 MiB of blobs, each adding k x its size of pressure, freed
 * when a major ends. Returns the average allocation from a major's end
 * to the next major's start (its initial pause; with major=stw, the
 * major itself): the pressure should divide it by 1 + k. */
static double run(const char *params, unsigned k)
{
    CHECK(lull_init(params) == 0, "init %s", params);
    lull_stats s0 = get_stats();
    uint64_t ends = s0.collections_major, starts = s0.pauses_major - s0.collections_major, held = 0;
    uint64_t last_end = 0, gaps = 0, ngaps = 0;
    bool stw = strstr(params, "stw") != NULL, waiting = false;
    for (uint64_t done = 0, i = 0; done < ((uint64_t)160 << 20); done += BLOB, i++) {
        CHECK(major_blob(BLOB) != NULL, "blob");
        if (k) {
            lull_add_memory_pressure((size_t)k * BLOB);
            held += (uint64_t)k * BLOB;
        }
        if (i % 32)
            continue;
        lull_stats s = get_stats();
        uint64_t st = s.pauses_major - s.collections_major;     /* initial pauses */
        if (!stw && st != starts && waiting) {
            gaps += done - last_end;
            ngaps++;
            waiting = false;
        }
        starts = st;
        if (s.collections_major != ends) {
            if (stw && waiting) {
                gaps += done - last_end;
                ngaps++;
            }
            ends = s.collections_major;
            last_end = done;
            waiting = true;
            lull_remove_memory_pressure(held);    /* the buffers' finalizers ran */
            held = 0;
        }
    }
    lull_remove_memory_pressure(held);
    lull_shutdown();
    CHECK(ngaps >= 4, "%s: too few majors to measure (%" PRIu64 ")", params, ngaps);
    return (double)gaps / (double)ngaps;
}

/* The gap with no pressure over the gap with k x pressure, within
 * [lo, hi] x (1 + k). */
static void ratios(const char *params, double lo, double hi)
{
    double g0 = run(params, 0), g1 = run(params, 1), g3 = run(params, 3);
    printf("%s: allocation from a major's end to the next start: no pressure %.2f MiB, 1x %.2f MiB (%.2f x sooner), "
           "3x %.2f MiB (%.2f x sooner)\n", params, g0 / 1048576, g1 / 1048576, g0 / g1, g3 / 1048576, g0 / g3);
    double r1 = g0 / g1 / 2, r3 = g0 / g3 / 4;
    CHECK(r1 >= lo && r1 <= hi, "1x pressure: %.2f x sooner", g0 / g1);
    CHECK(r3 >= lo && r3 <= hi, "3x pressure: %.2f x sooner", g0 / g3);
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
    ratios("major=concurrent", 0.75, 1.25);
    printf("ok\n");
    return 0;
}
