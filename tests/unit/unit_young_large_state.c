/*
 * unit_young_large_state — lull_young_large_at reads a block's state
 * published by another thread without a lock (heap.h).
 *
 * The case, from a ThreadSanitizer report in CI (stress_graph_stw): in a
 * parallel minor, tracer A promotes an object into a block it has just
 * formatted (lull_block_set_state, release) and stores the copy's address
 * into an old slot with a relaxed store; tracer B visits the same slot (a
 * copy is scanned both from its grey entry and from a dirty card of its
 * block), reads the new address, and, because it lies between the young
 * large objects, asks lull_young_large_at about it, which read the block's
 * state with a plain load: a data race with A's formatting, nothing
 * ordering the two. The state is now read with acquire, so what it says,
 * and the run fields it gives meaning to, are those A published.
 *
 * Here thread A formats a free block (as a small block, then as a young
 * large object's head) and publishes its address with a relaxed store;
 * the main thread reads it relaxed and calls lull_young_large_at. Under
 * ThreadSanitizer the old plain load is reported (exit 66); in every build
 * the answers are checked.
 */
#include <lull.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "base/gclock.h"
#include "space/heap.h"
#include "unit.h"

static uint32_t block;
static uintptr_t published;
static int as_large;

static void *format(void *arg)
{
    (void)arg;
    lull_block *b = &lull_heap_g.blocks[block];
    if (as_large) {
        b->run_len = 1;
        b->large_size = LULL_BLOCK_SIZE;
        __atomic_store_n(&b->young, 2u, __ATOMIC_RELAXED);
        lull_block_set_state(b, LULL_BLOCK_LARGE_HEAD);
    } else {
        b->size_class = 0;
        b->has_refs = 1;
        lull_block_set_state(b, LULL_BLOCK_SMALL);
    }
    __atomic_store_n(&published, lull_block_addr(block) + 64, __ATOMIC_RELAXED);
    return NULL;
}

static uintptr_t ask(void)
{
    __atomic_store_n(&published, 0, __ATOMIC_RELAXED);
    pthread_t t;
    UCHECK(pthread_create(&t, NULL, format, NULL) == 0, "pthread_create");
    uintptr_t v;
    while (!(v = __atomic_load_n(&published, __ATOMIC_RELAXED)))
        ;
    uintptr_t found = lull_young_large_at(v);
    pthread_join(t, NULL);
    return found;
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    lull_gc_lock();                 /* the block space's rule (the background job prepares blocks too) */
    block = lull_space_alloc(1);
    lull_gc_unlock();
    UCHECK(block != LULL_NO_BLOCK, "a free block");
    uintptr_t addr = lull_block_addr(block), lo = lull_los_young_lo, hi = lull_los_young_hi;
    /* The block lies among young large objects. */
    lull_los_young_lo = addr;
    lull_los_young_hi = addr + LULL_BLOCK_SIZE;

    as_large = 0;
    UCHECK(ask() == 0, "a small block's address taken for a young large object");
    lull_block_set_state(&lull_heap_g.blocks[block], LULL_BLOCK_FREE);
    as_large = 1;
    uintptr_t found = ask();
    UCHECK(found == addr, "young large object at %p not found (%p)", (void *)addr, (void *)found);

    __atomic_store_n(&lull_heap_g.blocks[block].young, 0u, __ATOMIC_RELAXED);
    lull_block_set_state(&lull_heap_g.blocks[block], LULL_BLOCK_FREE);
    lull_los_young_lo = lo;
    lull_los_young_hi = hi;
    lull_gc_lock();
    lull_space_free(block, 1);
    lull_gc_unlock();
    lull_shutdown();
    puts("unit_young_large_state: ok");
    return 0;
}
