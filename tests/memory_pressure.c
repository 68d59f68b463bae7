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
 *    mark's own run is not what the pressure shortens). k changes at each
 *    major within one run, so the pacer's trigger is the same for all.
 */
#include "check.h"

#define BLOB 3072u

static const unsigned ks[3] = {0, 1, 3};

/* Allocate 160 MiB of blobs. From each major's end to the next, each blob
 * adds k x its size of pressure, freed when that major ends; k takes the
 * values of ks in turn, one per major, so that every k is measured under
 * the same pacer state (a concurrent major's trigger follows the rates it
 * measured). Fills gap[i] with the average allocation from a major's end
 * to the next major's start (its initial pause; with major=stw, the
 * major itself) while k = ks[i]: the pressure should divide it by 1 + k. */
static void run(const char *params, double gap[3])
{
    CHECK(lull_init(params) == 0, "init %s", params);
    lull_stats s0 = get_stats();
    uint64_t ends = s0.collections_major, starts = s0.pauses_major - s0.collections_major, held = 0;
    uint64_t last_end = 0, gaps[3] = {0}, ngaps[3] = {0};
    unsigned cur = 0, k = 0;
    bool stw = strstr(params, "stw") != NULL, waiting = false;
    for (uint64_t done = 0, i = 0; done < ((uint64_t)160 << 20); done += BLOB, i++) {
        CHECK(major_blob(BLOB) != NULL, "blob");
        if (k) {
            lull_add_memory_pressure((size_t)k * BLOB);
            held += (uint64_t)k * BLOB;
        }
        if (i % 8)
            continue;
        lull_stats s = get_stats();
        uint64_t st = s.pauses_major - s.collections_major;     /* initial pauses */
        if (!stw && st != starts && waiting) {
            gaps[cur] += done - last_end;
            ngaps[cur]++;
            waiting = false;
        }
        starts = st;
        if (s.collections_major != ends) {
            if (stw && waiting) {
                gaps[cur] += done - last_end;
                ngaps[cur]++;
            }
            ends = s.collections_major;
            last_end = done;
            waiting = true;
            lull_remove_memory_pressure(held);    /* the buffers' finalizers ran */
            held = 0;
            cur = (cur + 1) % 3;
            k = ks[cur];
        }
    }
    lull_remove_memory_pressure(held);
    lull_shutdown();
    for (int j = 0; j < 3; j++) {
        CHECK(ngaps[j] >= 4, "%s: too few majors to measure with k = %u (%" PRIu64 ")", params, ks[j], ngaps[j]);
        gap[j] = (double)gaps[j] / (double)ngaps[j];
    }
}

/* The gap with no pressure over the gap with k x pressure, within
 * [lo, hi] x (1 + k). */
static void ratios(const char *params, double lo, double hi)
{
    double g[3];
    run(params, g);
    printf("%s: allocation from a major's end to the next start: no pressure %.2f MiB, 1x %.2f MiB (%.2f x sooner), "
           "3x %.2f MiB (%.2f x sooner)\n", params, g[0] / 1048576, g[1] / 1048576, g[0] / g[1], g[2] / 1048576,
           g[0] / g[2]);
    double r1 = g[0] / g[1] / 2, r3 = g[0] / g[2] / 4;
    CHECK(r1 >= lo && r1 <= hi, "1x pressure: %.2f x sooner", g[0] / g[1]);
    CHECK(r3 >= lo && r3 <= hi, "3x pressure: %.2f x sooner", g[0] / g[2]);
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
