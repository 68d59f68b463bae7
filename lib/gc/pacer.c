/* pacer.c — the heap goal and the concurrent major's trigger (pacer.h).
 * State: one instance; growth and limit are atomics (set by the API under
 * the gc lock, read by statistics without it), the rest is written with the
 * gc lock held. */
#include "gc/pacer.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include "base/config.h"
#include "base/gclock.h"
#include "base/util.h"
#include "lull.h"

/* Never less than this between majors: a tiny live heap would otherwise
 * run majors back to back. */
#define MIN_ALLOWANCE ((uint64_t)4 << 20)
/* The room a trigger leaves: MARGIN times the predicted allocation during
 * the mark (the model: allocation rate x live / mark rate), times the
 * correction, which follows the ratio of what marks really saw allocated
 * to the model (an average that takes in GAIN of each new ratio). */
#define MARGIN          1.5
#define CORRECTION_MIN  0.5
#define CORRECTION_MAX  4.0
#define CORRECTION_GAIN 0.5

static struct {
    atomic_uint growth;            /* percent */
    _Atomic size_t limit;          /* bytes; 0: none */
    uint64_t live, allowance;      /* at the last major (gc lock; read without it: atomics) */
    double model;                  /* the last trigger's predicted allocation during a mark; 0: none */
    double correction;             /* the model's measured bias */
    double last_error;             /* the last mark's allocation over the model */
    uint64_t marks;                /* marks measured against a model */
} pacer_g;

void lull_pacer_init(unsigned growth_percent, size_t memory_limit)
{
    atomic_store_explicit(&pacer_g.growth, growth_percent, memory_order_relaxed);
    atomic_store_explicit(&pacer_g.limit, memory_limit, memory_order_relaxed);
    __atomic_store_n(&pacer_g.live, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pacer_g.allowance, MIN_ALLOWANCE, __ATOMIC_RELAXED);
    pacer_g.model = 0;
    pacer_g.correction = 1.0;
    pacer_g.last_error = 0;
    pacer_g.marks = 0;
}

unsigned lull_pacer_growth(void)
{
    return atomic_load_explicit(&pacer_g.growth, memory_order_relaxed);
}

size_t lull_pacer_memory_limit(void)
{
    return atomic_load_explicit(&pacer_g.limit, memory_order_relaxed);
}

uint64_t lull_pacer_allowance(uint64_t live, uint64_t nursery)
{
    double goal = (double)live * (1.0 + lull_pacer_growth() / 100.0);
    uint64_t a = goal > (double)live ? (uint64_t)(goal - (double)live) : 0;
    size_t limit = lull_pacer_memory_limit();
    if (limit) {
        uint64_t room = limit > live + nursery ? limit - live - nursery : 0;
        if (a > room)
            a = room;
    }
    if (a < MIN_ALLOWANCE)
        a = MIN_ALLOWANCE;
    __atomic_store_n(&pacer_g.live, live, __ATOMIC_RELAXED);
    __atomic_store_n(&pacer_g.allowance, a, __ATOMIC_RELAXED);
    return a;
}

uint64_t lull_pacer_goal(void)
{
    return __atomic_load_n(&pacer_g.live, __ATOMIC_RELAXED) + __atomic_load_n(&pacer_g.allowance, __ATOMIC_RELAXED);
}

uint64_t lull_pacer_trigger(uint64_t a, uint64_t live, double alloc_rate, double mark_rate)
{
    uint64_t room = a / 2;
    pacer_g.model = 0;
    if (mark_rate > 0) {
        double floor_live = (double)(live > MIN_ALLOWANCE ? live : MIN_ALLOWANCE);
        pacer_g.model = alloc_rate * floor_live / mark_rate;
        double r = MARGIN * pacer_g.correction * pacer_g.model;
        room = r < (double)a ? (uint64_t)r : a;
    }
    uint64_t t = room < a ? a - room : 0;
    if (t < a / 8)
        t = a / 8;
    if (t > a - a / 8)
        t = a - a / 8;
    return t;
}

void lull_pacer_note_mark_end(uint64_t start, uint64_t end, double done)
{
    if (pacer_g.model <= 0 || end < start || done < 0.25)
        return;
    double e = (double)(end - start) / (done > 1 ? 1 : done) / pacer_g.model;
    pacer_g.last_error = e;
    pacer_g.marks++;
    double c = pacer_g.correction + CORRECTION_GAIN * (e - pacer_g.correction);
    pacer_g.correction = c < CORRECTION_MIN ? CORRECTION_MIN : c > CORRECTION_MAX ? CORRECTION_MAX : c;
}

double lull_pacer_correction(void)
{
    return pacer_g.correction;
}

bool lull_pacer_near_limit(uint64_t heap_bytes)
{
    size_t limit = lull_pacer_memory_limit();
    return limit && heap_bytes >= limit - limit / 8;
}

int lull_pacer_describe(char *buf, size_t n)
{
    size_t limit = lull_pacer_memory_limit();
    char lim[48] = "none", err[48] = "";
    if (limit)
        snprintf(lim, sizeof lim, "%.1f MiB", (double)limit / 1048576.0);
    if (pacer_g.marks)
        snprintf(err, sizeof err, " (the last mark saw %.2f of the model)", pacer_g.last_error);
    return snprintf(buf, n, "goal %.1f MiB (growth %u%%, limit %s), allowance %.1f MiB, correction %.2f%s",
                    (double)lull_pacer_goal() / 1048576.0, lull_pacer_growth(), lim,
                    (double)pacer_g.allowance / 1048576.0, pacer_g.correction, err);
}

int lull_set_heap_growth(unsigned percent)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (percent < LULL_HEAP_GROWTH_MIN || percent > LULL_HEAP_GROWTH_MAX)
        return -EINVAL;
    lull_gc_lock();
    atomic_store_explicit(&pacer_g.growth, percent, memory_order_relaxed);
    lull_pacer_goal_changed();
    lull_gc_unlock();
    return 0;
}

int lull_set_memory_limit(size_t bytes)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (bytes && bytes < LULL_MEMORY_LIMIT_MIN)
        return -EINVAL;
    lull_gc_lock();
    atomic_store_explicit(&pacer_g.limit, bytes, memory_order_relaxed);
    lull_pacer_goal_changed();
    lull_gc_unlock();
    return 0;
}
