/*
 * unit_los_reserve — a thread's large-object reserve (space/los.c):
 *
 *  - a refill takes RESERVE_FIRST (4) blocks, then asks for twice as many
 *    (a shorter dirty run is taken whole: resident memory first), marks
 *    them RESERVED, counts them in use and widens the young range over
 *    them; a carve formats a young large object at the reserve's start
 *    (young, on the young list) and moves past it; a refill gives back
 *    what is left (FREE again);
 *  - a minor gives back every thread's reserve, here one held by another
 *    attached thread that is waiting, and the next refill starts small;
 *  - while fork's prepare handler waits (lull_los_wait_published), a carve
 *    returns NULL and hands nothing out; after lull_los_allow_carving it
 *    carves again.
 */
#include <lull.h>
#include <pthread.h>
#include <stdatomic.h>
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

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    lull_thread *self = lull_thread_self;
    lull_collect(LULL_GEN_NURSERY);   /* starts with no reserve */
    UCHECK(self->los.next == self->los.end && self->los.last == 0, "no reserve after a minor");

    size_t used0 = lull_space_in_use_bytes();
    refill(self);
    uint32_t first = self->los.next, len = self->los.end - self->los.next;
    UCHECK(len == 4, "the first refill takes 4 blocks (%u)", len);
    UCHECK(lull_space_in_use_bytes() == used0 + 4 * LULL_BLOCK_SIZE, "the reserve is in use");
    for (uint32_t k = 0; k < len; k++)
        UCHECK(state_of(first + k) == LULL_BLOCK_RESERVED, "block %u of the reserve is RESERVED", k);
    UCHECK(lull_los_young_lo <= lull_block_addr(first) && lull_los_young_hi >= lull_block_addr(first + len),
           "the young range covers the reserve");

    uintptr_t p = (uintptr_t)carve(self);
    UCHECK(p == lull_block_addr(first), "the carve takes the reserve's start");
    UCHECK(self->los.next == first + 1, "a 12 KiB object takes one block");
    UCHECK(state_of(first) == LULL_BLOCK_LARGE_HEAD && lull_young_large_at(p) == p, "carved young");
    uintptr_t young[LULL_LOS_MAX_YOUNG];
    size_t n = lull_los_young_list(young, LULL_LOS_MAX_YOUNG);
    UCHECK(n >= 1 && young[0] == p, "on the young list");

    refill(self);
    UCHECK(self->los.last == 8 && self->los.end - self->los.next >= 1 && self->los.end - self->los.next <= 8,
           "the next refill asks for twice the last (%u), and takes at most that (%u)", self->los.last,
           self->los.end - self->los.next);
    for (uint32_t k = 1; k < len; k++)
        UCHECK(state_of(first + k) == LULL_BLOCK_FREE ||
               (first + k >= self->los.next && first + k < self->los.end),
               "the rest of the last reserve was given back (block %u: state %u)", k, state_of(first + k));

    /* The fork handler's wait: no carve while it is under way. */
    lull_gc_lock();
    lull_los_wait_published();
    uint32_t before = self->los.next;
    UCHECK(carve(self) == NULL && self->los.next == before, "a carve while fork's handler waits hands nothing out");
    lull_los_allow_carving();
    lull_gc_unlock();
    UCHECK(carve(self) != NULL, "a carve after the fork");

    /* A minor gives back every thread's reserve. */
    pthread_t th;
    UCHECK(pthread_create(&th, NULL, holder, NULL) == 0, "pthread_create");
    lull_thread *o;
    while (!(o = atomic_load(&other)))
        ;
    uint32_t onext = o->los.next, oend = o->los.end;
    UCHECK(onext < oend, "the other thread holds a reserve");
    uint32_t mine = self->los.next, mine_end = self->los.end;
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(o->los.next == o->los.end && self->los.next == self->los.end, "a minor took the reserves back");
    UCHECK(o->los.last == 0 && self->los.last == 0, "the next refills start small");
    for (uint32_t i = onext; i < oend; i++)
        UCHECK(state_of(i) != LULL_BLOCK_RESERVED, "block %u of the other thread's reserve given back", i);
    for (uint32_t i = mine; i < mine_end; i++)
        UCHECK(state_of(i) != LULL_BLOCK_RESERVED, "block %u of this thread's reserve given back", i);
    atomic_store(&other_go, 1);
    pthread_join(th, NULL);
    lull_shutdown();
    printf("ok\n");
    return 0;
}
