/*
 * heap_goal — heap-growth and memory-limit, as options and at run time
 * (lull_set_heap_growth, lull_set_memory_limit): their effect on how
 * often majors run and how large the heap gets, and their bad values.
 *
 * 24 MiB stay live (six 4 MiB byte arrays); the program then drops 256 MiB
 * of 4 KiB objects allocated straight into the major heap (major_blob:
 * each counts against the allowance). With growth 25 the allowance is 6 MiB, so about forty majors
 * run; with growth 400 it is 96 MiB, two or three. A memory limit of
 * 48 MiB at growth 400 brings the allowance down to what fits under it
 * (about 20 MiB), and the heap stays near the limit. With major=stw each
 * major starts when the allowance is used up, so the counts are those of
 * the rule, not of a pacer's timing.
 */
#include "check.h"

#define LIVE_ARRAYS 6
#define LIVE_BYTES  ((size_t)4 << 20)
#define CHURN_BYTES ((size_t)256 << 20)
#define GARBAGE     4096u
#define MIB         ((uint64_t)1 << 20)

static struct refs *volatile keep;

/* Drop CHURN_BYTES of garbage; returns the majors it ran, and the largest
 * heap_bytes seen in its second half in *peak (the first lets a new goal
 * settle: the memory the last phase left goes back over a few majors). */
static uint64_t churn(uint64_t *peak)
{
    lull_stats s0 = get_stats();
    *peak = 0;
    for (size_t done = 0; done < CHURN_BYTES; done += GARBAGE) {
        unsigned char *b = major_blob(GARBAGE);
        CHECK(b, "major_blob");
        b[8] = 1;
        if (done % MIB == 0 && done >= CHURN_BYTES / 2) {
            lull_stats s = get_stats();
            if (s.heap_bytes > *peak)
                *peak = s.heap_bytes;
        }
    }
    return get_stats().collections_major - s0.collections_major;
}

int main(void)
{
    CHECK(lull_init("heap-growth=0") == -EINVAL, "heap-growth=0 accepted");
    CHECK(lull_init("heap-growth=10001") == -EINVAL, "heap-growth=10001 accepted");
    CHECK(lull_init("memory-limit=1k") == -EINVAL, "memory-limit=1k accepted");
    CHECK(lull_init("major=stw,heap-growth=25,memory-limit=0,pause-target=10s") == 0, "lull_init");

    CHECK(lull_set_heap_growth(0) == -EINVAL, "lull_set_heap_growth(0) accepted");
    CHECK(lull_set_heap_growth(LULL_HEAP_GROWTH_MAX + 1) == -EINVAL, "lull_set_heap_growth(10001) accepted");
    CHECK(lull_set_memory_limit(1) == -EINVAL, "lull_set_memory_limit(1) accepted");
    CHECK(lull_set_memory_limit(LULL_MEMORY_LIMIT_MIN - 1) == -EINVAL, "a limit under the minimum accepted");
    CHECK(lull_set_memory_limit(0) == 0, "lull_set_memory_limit(0)");

    CHECK(lull_root_add_refs((void **)&keep, 1) == 0, "lull_root_add_refs");
    keep = lull_alloc_array(&refs_type, LIVE_ARRAYS);
    for (int i = 0; i < LIVE_ARRAYS; i++) {
        struct bytes *b = lull_alloc_array(&bytes_type, LIVE_BYTES - sizeof(struct bytes));
        CHECK(b, "live array");
        bytes_fill(b, (uint64_t)i);
        lull_store(keep, &keep->item[i], b);
    }

    uint64_t peak25, peak400, peak_lim;
    lull_collect(LULL_GEN_MAJOR);
    uint64_t m25 = churn(&peak25);

    CHECK(lull_set_heap_growth(400) == 0, "lull_set_heap_growth(400)");
    lull_collect(LULL_GEN_MAJOR);
    lull_stats g = get_stats();
    CHECK(g.heap_goal_bytes >= 5 * g.live_bytes_after_major - MIB && g.heap_goal_bytes <= 5 * g.live_bytes_after_major + MIB,
          "growth 400: goal %" PRIu64 " MiB for %" PRIu64 " MiB live", g.heap_goal_bytes / MIB,
          g.live_bytes_after_major / MIB);
    CHECK(g.memory_limit_bytes == 0, "no limit, yet lull_stats says %" PRIu64, g.memory_limit_bytes);
    uint64_t m400 = churn(&peak400);

    CHECK(lull_set_memory_limit(48 * MIB) == 0, "lull_set_memory_limit(48 MiB)");
    g = get_stats();
    CHECK(g.memory_limit_bytes == 48 * MIB, "lull_stats.memory_limit_bytes %" PRIu64, g.memory_limit_bytes);
    CHECK(g.heap_goal_bytes <= 48 * MIB, "the goal %" PRIu64 " MiB is over the 48 MiB limit at once",
          g.heap_goal_bytes / MIB);
    lull_collect(LULL_GEN_MAJOR);
    uint64_t m_lim = churn(&peak_lim);
    CHECK(lull_set_memory_limit(0) == 0, "lull_set_memory_limit(0)");

    printf("heap_goal: 256 MiB dropped over 24 MiB live: growth 25: %" PRIu64 " majors, heap up to %" PRIu64
           " MiB; growth 400: %" PRIu64 " majors, up to %" PRIu64 " MiB; growth 400 under a 48 MiB limit: %" PRIu64
           " majors, up to %" PRIu64 " MiB\n", m25, peak25 / MIB, m400, peak400 / MIB, m_lim, peak_lim / MIB);
    CHECK(m25 >= 20, "growth 25 ran %" PRIu64 " majors over 256 MiB at 6 MiB each: about 40 expected", m25);
    CHECK(m400 <= 5, "growth 400 ran %" PRIu64 " majors over 256 MiB at 96 MiB each: 2 or 3 expected", m400);
    CHECK(m_lim >= 3 * m400 && m_lim >= 8, "a 48 MiB limit ran %" PRIu64 " majors (growth 400 alone: %" PRIu64
          "): the limit did not bring the goal down", m_lim, m400);
    CHECK(peak_lim < peak400, "the heap under a 48 MiB limit reached %" PRIu64 " MiB, without it %" PRIu64,
          peak_lim / MIB, peak400 / MIB);
    CHECK(peak_lim <= 56 * MIB, "the heap under a 48 MiB limit reached %" PRIu64 " MiB", peak_lim / MIB);

    for (int i = 0; i < LIVE_ARRAYS; i++)
        CHECK(bytes_bad(keep->item[i], (uint64_t)i, LIVE_BYTES - sizeof(struct bytes)) == SIZE_MAX, "live array %d is wrong", i);
    lull_root_remove((void *)&keep);
    lull_shutdown();
    return 0;
}
