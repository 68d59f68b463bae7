/* policy.c — when to collect, and how big the heap is (policy.h). */
#include "policy.h"

#include "collect.h"
#include "heap.h"
#include "mark.h"
#include "util.h"

#define MIN_ALLOWANCE   ((uint64_t)4 << 20)
#define DEFAULT_RESERVE ((size_t)64 << 30)
#define MIN_RESERVE     ((size_t)256 << 20)
#define MIN_NURSERY     ((size_t)64 << 10)

/* Written with the gc lock held only. */
static struct {
    uint64_t allocated_since;   /* major-heap bytes handed out since the last major */
    uint64_t allowance;         /* ... that may be, before the next major */
    uint64_t trigger;           /* ... at which a concurrent major starts */
    uint64_t at_mark_start;     /* allocated_since when the running mark began */
    uint64_t during_mark;       /* bytes allocated while the last mark ran */
    bool measured;              /* during_mark holds a measurement */
} policy_g;

/* Pacing of concurrent majors. A mark that starts when allocated_since
 * reaches `trigger` should end before the allowance is used up: the
 * trigger leaves room for 1.5 times what the program allocated in the
 * major heap while the last mark ran (the allocation rate times the mark's
 * duration, both measured over the previous cycle), between an eighth and
 * seven eighths of the allowance; half of it before anything is measured.
 * A mark still running when the allowance is used up is finished with the
 * world stopped if synchronous majors are allowed; if not, the heap grows
 * until the mark ends on its own. */
static void set_trigger(void)
{
    uint64_t a = policy_g.allowance, room = policy_g.measured ? policy_g.during_mark + policy_g.during_mark / 2 : a / 2;
    uint64_t t = room < a ? a - room : 0;
    if (t < a / 8)
        t = a / 8;
    if (t > a - a / 8)
        t = a - a / 8;
    policy_g.trigger = lull_cfg.major == LULL_MAJOR_CONCURRENT ? t : a;
}

void lull_policy_init(void)
{
    policy_g.allocated_since = 0;
    policy_g.allowance = MIN_ALLOWANCE;
    policy_g.measured = false;
    set_trigger();
}

void lull_policy_note_mark_start(void)
{
    policy_g.at_mark_start = policy_g.allocated_since;
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
    if (lull_cfg.major == LULL_MAJOR_CONCURRENT && policy_g.allocated_since >= policy_g.at_mark_start &&
        policy_g.at_mark_start) {
        policy_g.during_mark = policy_g.allocated_since - policy_g.at_mark_start;
        policy_g.measured = true;
    }
    policy_g.allocated_since = policy_g.at_mark_start = 0;
    policy_g.allowance = live_bytes > MIN_ALLOWANCE ? live_bytes : MIN_ALLOWANCE;
    set_trigger();
}

static bool major_due(void)
{
    return policy_g.allocated_since >= policy_g.trigger;
}

static bool over_allowance(void)
{
    return policy_g.allocated_since >= policy_g.allowance;
}

/* A major is due: a concurrent one, or a synchronous one with major=stw. */
static int start_major(void)
{
    return lull_cfg.major == LULL_MAJOR_CONCURRENT ? LULL_COLLECT_MAJOR_START : LULL_GEN_MAJOR;
}

/* While a concurrent mark runs: its final pause once the background work
 * is done; with the world stopped once the allowance is used up, when
 * synchronous majors are allowed; else `otherwise`. */
static int while_marking(int otherwise, const char **reason)
{
    if (lull_mark_ready()) {
        *reason = "concurrent mark done";
        return LULL_COLLECT_MAJOR_FINISH;
    }
    if (over_allowance() && lull_synchronous_major_allowed()) {
        *reason = "allowance used up before the concurrent mark ended";
        return LULL_COLLECT_MAJOR_FINISH;
    }
    return otherwise;
}

int lull_policy_decide(lull_policy_event ev, unsigned long arg, const char **reason)
{
    switch (ev) {
    case LULL_POLICY_SLOW_ALLOC:
        if (lull_marking()) {
            *reason = "";
            return while_marking(-1, reason);
        }
        *reason = "allowance used up";
        return major_due() ? start_major() : -1;
    case LULL_POLICY_NURSERY_FULL:
        *reason = "nursery full";
        if (lull_marking())
            return while_marking(LULL_GEN_NURSERY, reason);
        /* The minor would promote into a heap already due for a major. */
        return major_due() ? start_major() : LULL_GEN_NURSERY;
    case LULL_POLICY_OUT_OF_MEMORY:
        /* Synchronous whatever the switch says (API.md): the allocation
         * fails otherwise. A running concurrent mark is finished. */
        *reason = "allocation failed";
        return LULL_GEN_MAJOR;
    case LULL_POLICY_DEBUG_TICK:
        /* Every collect-every-th allocation, every fourth time a major;
         * with concurrent majors, every fourth time one starts or (the
         * next such time) ends, so marks run across three minors. */
        *reason = "collect-every";
        if (!lull_cfg.collect_every || arg % lull_cfg.collect_every)
            return -1;
        if ((arg / lull_cfg.collect_every) % 4)
            return LULL_GEN_NURSERY;
        if (lull_cfg.major != LULL_MAJOR_CONCURRENT)
            return LULL_GEN_MAJOR;
        return lull_marking() ? LULL_COLLECT_MAJOR_FINISH : LULL_COLLECT_MAJOR_START;
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
