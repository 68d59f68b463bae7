/*
 * unit_los_reserve — a thread's large-object reserve (space/los.c):
 *
 *  - a refill takes RESERVE_FIRST (4) blocks, then asks for twice as many
 *    (a shorter dirty run is taken whole: resident memory first), marks
 *    them RESERVED, counts them in use and widens the young range over
 *    them; a carve formats a young large object at the reserve's start
 *    (young, on the young list) and moves past it; a refill gives back
 *    what is left (FREE again);
 *  - a minor keeps every thread's reserve inside the young range it
 *    rebuilds, and the next refill starts small; a major gives them all
 *    back, here one held by another attached thread that is waiting;
 *  - a reserve of clean memory counts as handed out cold only as carves
 *    touch it;
 *  - where the resident free runs are shorter than a refill asks for
 *    (objects freed between survivors), one refill gathers several;
 *  - while fork's prepare handler waits (lull_los_wait_published), a carve
 *    returns NULL and hands nothing out; after lull_los_allow_carving it
 *    carves again.
 */
#include <lull.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/gclock.h"
#include "base/registry.h"
#include "space/heap.h"
#include "unit.h"

static const lull_type blob = { .name = "blob", .size = 12288 };

static unsigned state_of(uint32_t idx)
{
    return lull_block_state_acquire(&lull_heap_g.blocks[idx]);
}

/* Carve one 12 KiB object from t's reserve and give it its header, as
 * allocation does (alloc.c); NULL if the carve refused. */
static void *carve(lull_thread *t)
{
    bool dirty = false;
    lull_enter_critical(t);
    uintptr_t *p = lull_los_carve(&t->los, blob.size, &dirty);
    if (p) {
        if (dirty)
            memset(p, 0, blob.size);
        __atomic_store_n(&p[0], (uintptr_t)&blob, __ATOMIC_RELEASE);
        lull_los_published();
    }
    lull_exit_critical(t);
    return p;
}

static void refill(lull_thread *t)
{
    lull_gc_lock();
    UCHECK(lull_los_refill(&t->los, blob.size), "refill");
    lull_gc_unlock();
}

static lull_thread *_Atomic other;
static atomic_int other_go;

static void *holder(void *arg)
{
    (void)arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    refill(lull_thread_self);
    UCHECK(carve(lull_thread_self) != NULL, "the other thread carves");
    atomic_store(&other, lull_thread_self);
    while (!atomic_load(&other_go))
        ;
    lull_thread_detach();
    return NULL;
}

static uint32_t reserved(const lull_los_reserve *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nruns; i++)
        n += r->end[i] - r->next[i];
    return n;
}

static bool in_reserve(const lull_los_reserve *r, uint32_t idx)
{
    for (uint32_t i = 0; i < r->nruns; i++)
        if (idx >= r->next[i] && idx < r->end[i])
            return true;
    return false;
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    lull_thread *self = lull_thread_self;
    lull_collect(LULL_GEN_NURSERY);   /* starts with no reserve */
    UCHECK(self->los.nruns == 0 && self->los.last == 0, "no reserve after a minor");

    size_t used0 = lull_space_in_use_bytes();
    refill(self);
    UCHECK(self->los.nruns == 1, "one run from fresh memory (%u)", self->los.nruns);
    uint32_t first = self->los.next[0], len = reserved(&self->los);
    UCHECK(len == 4, "the first refill takes 4 blocks (%u)", len);
    UCHECK(lull_space_in_use_bytes() == used0 + 4 * LULL_BLOCK_SIZE, "the reserve is in use");
    for (uint32_t k = 0; k < len; k++)
        UCHECK(state_of(first + k) == LULL_BLOCK_RESERVED, "block %u of the reserve is RESERVED", k);
    UCHECK(lull_los_young_lo <= lull_block_addr(first) && lull_los_young_hi >= lull_block_addr(first + len),
           "the young range covers the reserve");

    uintptr_t p = (uintptr_t)carve(self);
    UCHECK(p == lull_block_addr(first), "the carve takes the reserve's start");
    UCHECK(self->los.next[0] == first + 1, "a 12 KiB object takes one block");
    UCHECK(state_of(first) == LULL_BLOCK_LARGE_HEAD && lull_young_large_at(p) == p, "carved young");
    uintptr_t young[LULL_LOS_MAX_YOUNG];
    size_t n = lull_los_young_list(young, LULL_LOS_MAX_YOUNG);
    UCHECK(n >= 1 && young[0] == p, "on the young list");

    refill(self);
    UCHECK(self->los.last == 8 && reserved(&self->los) >= 1 && reserved(&self->los) <= 8,
           "the next refill asks for twice the last (%u), and takes at most that (%u)", self->los.last,
           reserved(&self->los));
    for (uint32_t k = 1; k < len; k++)
        UCHECK(state_of(first + k) == LULL_BLOCK_FREE || in_reserve(&self->los, first + k),
               "the rest of the last reserve was given back (block %u: state %u)", k, state_of(first + k));

    /* The fork handler's wait: no carve while it is under way. */
    lull_gc_lock();
    lull_los_wait_published();
    uint32_t before = reserved(&self->los);
    UCHECK(carve(self) == NULL && reserved(&self->los) == before,
           "a carve while fork's handler waits hands nothing out");
    lull_los_allow_carving();
    lull_gc_unlock();
    UCHECK(carve(self) != NULL, "a carve after the fork");

    /* A minor gives back every thread's reserve. */
    pthread_t th;
    UCHECK(pthread_create(&th, NULL, holder, NULL) == 0, "pthread_create");
    lull_thread *o;
    while (!(o = atomic_load(&other)))
        ;
    lull_los_reserve theirs = o->los, mine = self->los;
    UCHECK(reserved(&theirs) > 0, "the other thread holds a reserve");
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(reserved(&o->los) == reserved(&theirs) && reserved(&self->los) == reserved(&mine),
           "a minor keeps the reserves");
    UCHECK(o->los.last == 0 && self->los.last == 0, "the next refills start small");
    for (uint32_t r = 0; r < o->los.nruns; r++)
        UCHECK(lull_los_young_lo <= lull_block_addr(o->los.next[r]) &&
               lull_los_young_hi >= lull_block_addr(o->los.end[r]), "the young range covers them after a minor");
    UCHECK(carve(self) != NULL, "a carve after the minor");
    mine = self->los;
    lull_collect(LULL_GEN_MAJOR);
    UCHECK(o->los.nruns == 0 && self->los.nruns == 0, "a major took the reserves back");
    for (uint32_t r = 0; r < theirs.nruns; r++)
        for (uint32_t i = theirs.next[r]; i < theirs.end[r]; i++)
            UCHECK(state_of(i) != LULL_BLOCK_RESERVED, "block %u of the other thread's reserve given back", i);
    for (uint32_t r = 0; r < mine.nruns; r++)
        for (uint32_t i = mine.next[r]; i < mine.end[r]; i++)
            UCHECK(state_of(i) != LULL_BLOCK_RESERVED, "block %u of this thread's reserve given back", i);
    atomic_store(&other_go, 1);
    pthread_join(th, NULL);

    /* Resident free runs shorter than a refill asks for: one refill
     * gathers several. With the gc lock held throughout (the memory
     * thread that touches runs ahead takes it too), every resident run is
     * taken out of the way, then four of one block are planted, each
     * between blocks in use. */
    static uint32_t drained[4096][2];
    uint32_t ndrained = 0, got;
    bool dirty;
    lull_gc_lock();
    lull_los_reserve_return(&self->los, true);
    for (uint32_t idx; ndrained < 4096 && (idx = lull_space_alloc_upto(1, UINT32_MAX / 4, true, &got, &dirty)) !=
                       LULL_NO_BLOCK;
         ndrained++)
        drained[ndrained][0] = idx, drained[ndrained][1] = got;
    /* With no resident run left, a refill takes clean memory: not counted
     * as handed out cold (what the memory thread warms ahead for) until
     * a carve touches it, and then only what the carve took. */
    uint64_t cold0 = lull_space_cold_blocks();
    UCHECK(lull_los_refill(&self->los, blob.size) && self->los.dirty == 0, "a clean reserve");
    UCHECK(lull_space_cold_blocks() == cold0, "a reserve is not counted cold (%" PRIu64 " blocks)",
           lull_space_cold_blocks() - cold0);
    UCHECK(carve(self) != NULL && lull_space_cold_blocks() == cold0 + 1, "a carve counts its block cold (%" PRIu64 ")",
           lull_space_cold_blocks() - cold0);
    lull_los_reserve_return(&self->los, true);
    uint32_t base = lull_space_alloc_any(9, &dirty);
    UCHECK(base != LULL_NO_BLOCK && !dirty, "a clean run of 9 blocks");
    for (uint32_t k = 1; k < 9; k += 2)
        lull_space_give_back(base + k, 1, true);
    UCHECK(lull_los_refill(&self->los, blob.size), "refill");
    UCHECK(self->los.nruns == 4 && self->los.dirty == 0xf, "a refill gathered %u resident runs (dirty %#x)",
           self->los.nruns, self->los.dirty);
    for (uint32_t r = 0; r < self->los.nruns; r++)
        UCHECK(self->los.end[r] == self->los.next[r] + 1 && (self->los.next[r] - base) % 2 == 1 &&
               self->los.next[r] - base < 9, "run %u is one of the planted ones", r);
    lull_los_reserve_return(&self->los, true);
    for (uint32_t k = 0; k < 9; k += 2)
        lull_space_give_back(base + k, 1, false);
    for (uint32_t i = 0; i < ndrained; i++)
        lull_space_give_back(drained[i][0], drained[i][1], true);
    lull_gc_unlock();
    lull_shutdown();
    printf("ok\n");
    return 0;
}
