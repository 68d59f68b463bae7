/* meter.h — what the spaces measured of the program's allocation in the
 * major heap, for the policy (gc/policy.c) and the mark's throttle.
 *
 * allocated: bytes of small-object caches and old large objects handed out
 * since the last major (a young large object when a minor makes it old,
 * space/heap.h), less what came back unused (a dropped cache, a
 * nursery's unused promotion room). mark_start: `allocated` when the
 * running concurrent mark began. allowance: what may be allocated before
 * the next major (the policy sets it). mark_room: the runway the running
 * mark has at least, from mark_start, whatever the allowance says: a mark
 * that began late (one large allocation took the program past trigger and
 * allowance at once) still gets the room a mark started on time has.
 * Written with the gc lock held, read without it: every access is a
 * relaxed atomic. */
#ifndef LULL_METER_H
#define LULL_METER_H

#include <stdint.h>

typedef struct lull_meter {
    uint64_t allocated;
    uint64_t mark_start;
    uint64_t allowance;
    uint64_t mark_room;
} lull_meter;

extern lull_meter lull_meter_g;

static inline uint64_t lull_meter_get(const uint64_t *field)
{
    return __atomic_load_n(field, __ATOMIC_RELAXED);
}

static inline void lull_meter_put(uint64_t *field, uint64_t v)
{
    __atomic_store_n(field, v, __ATOMIC_RELAXED);
}

/* Bytes handed out (gc lock held). */
static inline void lull_meter_allocated(uint64_t bytes)
{
    lull_meter_put(&lull_meter_g.allocated, lull_meter_g.allocated + bytes);
}

/* Bytes handed out earlier and come back unused (gc lock held). */
static inline void lull_meter_unused(uint64_t bytes)
{
    uint64_t a = lull_meter_g.allocated;
    lull_meter_put(&lull_meter_g.allocated, bytes > a ? 0 : a - bytes);
}

/* Where the running mark's runway ends: the allowance, or mark_room past
 * the mark's start if that is further. Without the gc lock. */
static inline uint64_t lull_meter_runway_end(void)
{
    uint64_t start = lull_meter_get(&lull_meter_g.mark_start);
    uint64_t a = lull_meter_get(&lull_meter_g.allowance);
    uint64_t floor = start + lull_meter_get(&lull_meter_g.mark_room);
    return a > floor ? a : floor;
}

/* The share of the running mark's runway (mark_start to its end) the
 * program has used; 1 when there is none left. Without the gc lock. */
static inline double lull_meter_runway_used(void)
{
    uint64_t since = lull_meter_get(&lull_meter_g.allocated);
    uint64_t start = lull_meter_get(&lull_meter_g.mark_start);
    uint64_t end = lull_meter_runway_end();
    if (end <= start)
        return 1.0;
    return since <= start ? 0.0 : (double)(since - start) / (double)(end - start);
}

#endif
