/*
 * alloc_fast — a program that allocates as fast as it can, with markers
 * slowed down (mark-delay) so that it outruns them, and synchronous majors
 * off: every concurrent mark must still end, and the heap stay bounded,
 * because the program waits for the markers in its slow paths (pacing,
 * counted in lull_stats.paced_waits).
 *
 * 20,000 old nodes stay live. For 6 s the program allocates nodes and
 * keeps every 8th in a ring of 65,536 slots (what it replaces dies old:
 * the major heap fills with promoted garbage), and 2 KiB byte arrays it
 * drops. The pause hook counts the marks begun and ended. Checks: at
 * least two marks ended, no mark ran more than 5 s, paced waits happened,
 * no synchronous major ran, and the heap never held more than 256 MiB
 * (without pacing it grows past 1 GiB here).
 *
 * Arguments: LULL_GC_PARAMS-style options appended to the defaults.
 */
#include "check.h"

#define OLD   20000u
#define RING  65536u
#define SECONDS 6

static struct refs *volatile old, *volatile ring;
static volatile uint64_t began, ended, longest_ns, last_begin_ns;

static void hook(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (ev->phase == LULL_PHASE_INITIAL) {
        began++;
        last_begin_ns = ev->start_ns;
    } else if (ev->phase == LULL_PHASE_FINAL) {
        ended++;
        uint64_t len = ev->start_ns - last_begin_ns;
        if (len > longest_ns)
            longest_ns = len;
    }
}

int main(int argc, char **argv)
{
    char params[256];
    snprintf(params, sizeof params, "allow-synchronous-major=no%s%s", argc > 1 ? "," : "", argc > 1 ? argv[1] : "");
    CHECK(setenv("LULL_GC_DEBUG", "mark-delay=300", 1) == 0, "setenv");
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    unsetenv("LULL_GC_DEBUG");
    CHECK(lull_root_add_refs((void **)&old, 1) == 0, "root");
    CHECK(lull_root_add_refs((void **)&ring, 1) == 0, "root");
    old = lull_alloc_array(&refs_type, OLD);
    ring = lull_alloc_array(&refs_type, RING);
    for (uint32_t i = 0; i < OLD; i++)
        lull_store(old, &old->item[i], tnode_new(i));
    lull_collect(LULL_GEN_MAJOR);
    lull_set_pause_hook(hook, NULL);

    uint64_t t0 = now_ns(), peak = 0, n = 0;
    while (now_ns() - t0 < SECONDS * 1000000000ull) {
        for (int i = 0; i < 4096; i++, n++) {
            struct tnode *x = tnode_new(n);
            if (n % 8 == 0)
                lull_store(ring, &ring->item[(n / 8) % RING], x);
            if (n % 16 == 0)
                CHECK(lull_alloc_array(&bytes_type, 2048), "bytes");
        }
        lull_stats s = get_stats();
        if (s.heap_bytes > peak)
            peak = s.heap_bytes;
    }
    lull_set_pause_hook(NULL, NULL);
    lull_stats s = get_stats();
    printf("alloc_fast: %" PRIu64 " nodes in %d s; marks begun %" PRIu64 ", ended %" PRIu64 ", longest %.0f ms; "
           "%" PRIu64 " paced waits (%.0f ms); heap up to %" PRIu64 " MiB; %" PRIu64 " synchronous majors\n", n,
           SECONDS, began, ended, longest_ns / 1e6, s.paced_waits, s.paced_wait_ns / 1e6, peak >> 20,
           s.collections_major_sync);
    CHECK(ended >= 2, "only %" PRIu64 " concurrent marks ended in %d s", ended, SECONDS);
    CHECK(longest_ns < 5000000000ull, "a mark ran %.1f s", longest_ns / 1e9);
    CHECK(s.paced_waits > 0, "the program outran slowed markers without ever waiting for them");
    CHECK(s.collections_major_sync == 0, "%" PRIu64 " synchronous majors with them forbidden",
          s.collections_major_sync);
    CHECK(peak <= ((uint64_t)256 << 20), "the heap reached %" PRIu64 " MiB", peak >> 20);
    for (uint32_t i = 0; i < OLD; i++)
        CHECK(tnode_ok(old->item[i], i), "old node %u is wrong", i);
    for (uint32_t i = 0; i < RING; i++)
        CHECK(!ring->item[i] || ((struct tnode *)ring->item[i])->id % 8 == 0, "ring slot %u is wrong", i);
    lull_root_remove((void *)&old);
    lull_root_remove((void *)&ring);
    lull_shutdown();
    return 0;
}
