/* policy.c — when to collect, and how big the heap is (policy.h). */
#include "policy.h"

#include "collect.h"
#include "heap.h"
#include "util.h"

#define MIN_ALLOWANCE   ((uint64_t)4 << 20)
#define DEFAULT_RESERVE ((size_t)64 << 30)
#define MIN_RESERVE     ((size_t)256 << 20)
#define MIN_NURSERY     ((size_t)64 << 10)

/* Written with the gc lock held only. */
static struct {
    uint64_t allocated_since;   /* major-heap bytes handed out since the last major */
    uint64_t allowance;         /* ... that may be, before the next major */
} policy_g;

void lull_policy_init(void)
{
    policy_g.allocated_since = 0;
    policy_g.allowance = MIN_ALLOWANCE;
}

void lull_policy_note_allocated(uint64_t bytes)
{
    policy_g.allocated_since += bytes;
}

void lull_policy_note_unused(uint64_t bytes)
{
    policy_g.allocated_since = bytes > policy_g.allocated_since ? 0 : policy_g.allocated_since - bytes;
}

void lull_policy_after_major(uint64_t live_bytes)
{
    policy_g.allocated_since = 0;
    policy_g.allowance = live_bytes > MIN_ALLOWANCE ? live_bytes : MIN_ALLOWANCE;
}

static bool major_due(void)
{
    return policy_g.allocated_since >= policy_g.allowance;
}

int lull_policy_decide(lull_policy_event ev, unsigned long arg, const char **reason)
{
    switch (ev) {
    case LULL_POLICY_SLOW_ALLOC:
        *reason = "allowance used up";
        return major_due() ? LULL_GEN_MAJOR : -1;
    case LULL_POLICY_NURSERY_FULL:
        /* The minor would promote into a heap already due for a major. */
        *reason = "nursery full";
        return major_due() ? LULL_GEN_MAJOR : LULL_GEN_NURSERY;
    case LULL_POLICY_OUT_OF_MEMORY:
        *reason = "allocation failed";
        return LULL_GEN_MAJOR;
    case LULL_POLICY_DEBUG_TICK:
        /* Every collect-every-th allocation, every fourth time a major. */
        *reason = "collect-every";
        if (!lull_cfg.collect_every || arg % lull_cfg.collect_every)
            return -1;
        return (arg / lull_cfg.collect_every) % 4 ? LULL_GEN_NURSERY : LULL_GEN_MAJOR;
    }
    LULL_ASSERT(!"unknown policy event");
    return -1;
}

size_t lull_policy_size_heap(lull_config *cfg)
{
    /* The range: max-heap-size caps what is in use, so a little more than
     * it is reserved (large objects need contiguous runs). */
    size_t reserve = DEFAULT_RESERVE;
    if (cfg->max_heap_size) {
        size_t want = lull_align_up(cfg->max_heap_size, LULL_BLOCK_SIZE) * 2;
        if (want < MIN_RESERVE)
            want = MIN_RESERVE;
        if (want < reserve)
            reserve = want;
    }
    /* The nursery: a power of two at most an eighth of max-heap-size. */
    while (cfg->max_heap_size && cfg->nursery_size > cfg->max_heap_size / 8 && cfg->nursery_size > MIN_NURSERY)
        cfg->nursery_size /= 2;
    return reserve;
}
