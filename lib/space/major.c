/* major.c — the major heap's small objects: size classes, 16 KiB blocks of
 * one class each, free lists, and their sweep.
 *
 * Blocks hold either objects that may contain references or pointer-free
 * objects (never both), so the marker never scans a pointer-free block and
 * later the card scanner can skip them.
 *
 * A free slot has word 0 == 0 and links to the next free slot through word
 * 1. An allocated slot's word 0 is its header (type pointer), never 0. So
 * whether a slot is allocated is a property of the slot itself: a thread's
 * free list can be dropped at any collection and nothing is lost, the sweep
 * finds those slots free.
 *
 * Lists (gc lock held):
 *   partial[refs][class]  SMALL blocks with free slots, not in any cache
 *   empty                 EMPTY blocks: committed, no live object
 * A block whose free list was handed to a thread cache is on no list until
 * the next sweep re-lists it, or its thread detaches and returns the slots
 * (lull_major_return_caches).
 *
 * Evacuation (a synchronous major, world stopped): in a size class of one
 * kind whose blocks are sparsely occupied, the sparse blocks are emptied
 * by the mark, which copies each movable object it reaches there into
 * another block of the class (a fresh one, or one with free slots that is
 * not being emptied; mark.c: evacuate) and leaves the original, forwarded
 * and unmarked, to the sweep, which then finds the block empty. The rule
 * (SGen's, refined per block) is in lull_major_plan_evacuation; the
 * occupancy it reads is each block's `live`: the objects the last major
 * marked there, or all its slots once its free list has gone to a cache
 * since (an upper bound). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "space/meter.h"
#include "base/gclock.h"
#include "space/heap.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/timeline.h"
#include "base/util.h"

unsigned lull_nclasses;
uint32_t lull_class_size[LULL_MAX_CLASSES];
uint32_t lull_class_slots[LULL_MAX_CLASSES];
uint8_t  lull_class_of_granules[(LULL_MAX_SMALL >> LULL_GRANULE_SHIFT) + 1];

/* The lists above: one instance, under the gc lock (a parallel minor's
 * promotion refills also hold the nursery's promotion lock). */
static struct {
    uint32_t partial[2][LULL_MAX_CLASSES];
    uint32_t pending[2][LULL_MAX_CLASSES];   /* SMALL blocks waiting for their sweep */
    uint32_t npending;
    unsigned cursor;                         /* the background job's next list */
    uint32_t empty_list;
    uint32_t empty_count;   /* written under the gc lock; read by lull_get_stats without it: atomics */
    uint64_t swept_background, swept_on_demand;
    uint64_t fragmented;                     /* what evacuation would give back, as of the last major */
    uint64_t prepared;                       /* blocks prepare_batch made ready, since lull_init */
    uint32_t unlinked;                       /* prepared blocks not yet on empty_list (prepare_batch) */
    uint64_t block_reserve;                  /* EMPTY bytes to keep ready (lull_major_set_block_reserve) */
} major_g = { .empty_list = LULL_NO_BLOCK, .unlinked = LULL_NO_BLOCK };

/* An evacuating major's copy targets: one set of caches per marker (by
 * tracer id), each holding free slots of blocks that are not being
 * evacuated (the plan takes those off the partial lists; a refill finds
 * the others there, or formats a fresh block). A marker touches only its
 * own caches; refills take `lock`, as the markers run in parallel while
 * the stopping thread holds the gc lock for all of them. */
static struct {
    pthread_mutex_t lock;
    lull_alloc_caches cache[LULL_MAX_WORKERS + 1];
    /* A refill of this kind and class failed in this mark (the heap is at
     * its limit): the markers stop asking, and keep the rest in place. */
    atomic_bool exhausted[2][LULL_MAX_CLASSES];
} evac_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define POISON_BYTE 0xa5

static inline uint64_t empty_bytes(void)
{
    return (uint64_t)__atomic_load_n(&major_g.empty_count, __ATOMIC_RELAXED) << LULL_BLOCK_SHIFT;
}

/* A class with this many blocks or fewer is never evacuated: emptying it
 * would give back a block or two (SGen's rule: more than five). */
#define EVAC_MIN_BLOCKS 6u

/* Geometric classes, ~12.5% apart, each widened to the largest multiple of
 * 16 that still fits the same number of slots in a block (no waste at the
 * block's end that a bigger class could have used). */
static void build_size_classes(void)
{
    unsigned n = 0;
    uint32_t s = LULL_GRANULE;
    for (;;) {
        uint32_t slots = (uint32_t)(LULL_BLOCK_SIZE / s);
        uint32_t real = (uint32_t)(LULL_BLOCK_SIZE / slots) & ~(uint32_t)(LULL_GRANULE - 1);
        if (real > LULL_MAX_SMALL)
            real = LULL_MAX_SMALL;
        if (!n || real > lull_class_size[n - 1]) {
            if (n == LULL_MAX_CLASSES)
                lull_fatal("lull_init", "too many size classes");
            lull_class_size[n] = real;
            lull_class_slots[n] = (uint32_t)(LULL_BLOCK_SIZE / real);
            n++;
        }
        if (real >= LULL_MAX_SMALL)
            break;
        uint32_t step = (real / 8) & ~(uint32_t)(LULL_GRANULE - 1);
        s = real + (step > LULL_GRANULE ? step : LULL_GRANULE);
    }
    lull_nclasses = n;
    unsigned c = 0;
    for (uint32_t g = 0; g <= (LULL_MAX_SMALL >> LULL_GRANULE_SHIFT); g++) {
        while (lull_class_size[c] < g * LULL_GRANULE)
            c++;
        lull_class_of_granules[g] = (uint8_t)c;
    }
}

void lull_major_init(void)
{
    build_size_classes();
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < LULL_MAX_CLASSES; c++)
            major_g.partial[r][c] = major_g.pending[r][c] = LULL_NO_BLOCK;
    major_g.npending = 0;
    major_g.cursor = 0;
    major_g.swept_background = major_g.swept_on_demand = 0;
    major_g.empty_list = major_g.unlinked = LULL_NO_BLOCK;
    __atomic_store_n(&major_g.empty_count, 0, __ATOMIC_RELAXED);
}

void lull_major_fini(void)
{
    major_g.empty_list = major_g.unlinked = LULL_NO_BLOCK;
    __atomic_store_n(&major_g.empty_count, 0, __ATOMIC_RELAXED);
}

static lull_block *block_at(uint32_t i) { return &lull_heap_g.blocks[i]; }

/* Format block idx for class cls: every slot free, linked in address order. */
static void format_block(uint32_t idx, bool has_refs, unsigned cls)
{
    lull_block *b = block_at(idx);
    uint32_t sz = lull_class_size[cls], n = lull_class_slots[cls];
    uintptr_t base = lull_block_addr(idx);
    void *next = NULL;
    for (uint32_t s = n; s-- > 0;) {
        uintptr_t *slot = (uintptr_t *)(base + (uintptr_t)s * sz);
        slot[0] = 0;
        slot[1] = (uintptr_t)next;
        next = slot;
    }
    b->size_class = (uint8_t)cls;
    b->has_refs = has_refs;
    b->evacuating = 0;       /* a fresh block is where copies go, never what they leave */
    b->free_list = next;
    b->nfree = (uint16_t)n;
    b->next = LULL_NO_BLOCK;
    lull_block_set_state(b, LULL_BLOCK_SMALL);   /* last: heap.h */
}

static uint32_t take_block(void)
{
    if (major_g.empty_list != LULL_NO_BLOCK) {
        uint32_t idx = major_g.empty_list;
        major_g.empty_list = block_at(idx)->next;
        __atomic_fetch_sub(&major_g.empty_count, 1, __ATOMIC_RELAXED);
        return idx;
    }
    return lull_space_alloc_any(1, NULL);   /* format_block writes what it needs */
}

static uint64_t sweep_block(uint32_t idx, bool poison);

/* Sweep pending blocks of this kind until one has free slots (it is then
 * on the partial list) or none is left. */
static void sweep_for(bool has_refs, unsigned cls)
{
    while (major_g.partial[has_refs][cls] == LULL_NO_BLOCK && major_g.pending[has_refs][cls] != LULL_NO_BLOCK) {
        uint32_t idx = major_g.pending[has_refs][cls];
        major_g.pending[has_refs][cls] = block_at(idx)->next;
        major_g.npending--;
        major_g.swept_on_demand++;
        sweep_block(idx, lull_cfg.poison);
    }
}

bool lull_major_refill(lull_alloc_cache *cache, bool has_refs, unsigned cls, bool may_sweep)
{
    if (may_sweep)
        sweep_for(has_refs, cls);
    uint32_t idx = major_g.partial[has_refs][cls];
    if (idx != LULL_NO_BLOCK) {
        major_g.partial[has_refs][cls] = block_at(idx)->next;
    } else {
        idx = take_block();
        if (idx == LULL_NO_BLOCK)
            return false;
        format_block(idx, has_refs, cls);
    }
    lull_block *b = block_at(idx);
    cache->head = b->free_list;
    cache->count = b->nfree;
    b->free_list = NULL;
    b->nfree = 0;
    b->live = lull_class_slots[cls];    /* as far as evacuation knows, it fills up */
    lull_meter_allocated((uint64_t)cache->count * lull_class_size[cls]);
    return true;
}

/* Every slot in a cache belongs to a block taken by lull_major_refill since
 * the last major's pause (which drops all caches before its sweep lists
 * are built): a SMALL block, swept, on no list, with no free slot of its
 * own (refill took them all). So each returned slot goes back onto its
 * block's free list, and a block that gets its first one goes back onto
 * its partial list. */
uint64_t lull_major_return_caches(lull_alloc_caches *caches)
{
    uint64_t unused = 0;
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++) {
            lull_alloc_cache *k = &caches->c[r][c];
            uintptr_t *next;
            for (uintptr_t *slot = k->head; slot; slot = next) {
                next = (uintptr_t *)slot[1];
                uint32_t idx = lull_block_index((uintptr_t)slot);
                lull_block *b = block_at(idx);
                LULL_ASSERT(b->state == LULL_BLOCK_SMALL && b->size_class == c && b->has_refs == r &&
                            !b->sweep_pending && slot[0] == 0);
                if (b->nfree == 0) {
                    b->next = major_g.partial[r][c];
                    major_g.partial[r][c] = idx;
                }
                slot[1] = (uintptr_t)b->free_list;
                b->free_list = slot;
                b->nfree++;
                if (b->live)
                    b->live--;
            }
            unused += (uint64_t)k->count * lull_class_size[c];
            k->head = NULL;
            k->count = 0;
        }
    return unused;
}

uint64_t lull_major_drop_caches(lull_alloc_caches *caches)
{
    uint64_t unused = 0;
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++) {
            lull_alloc_cache *k = &caches->c[r][c];
            unused += (uint64_t)k->count * lull_class_size[c];
            k->head = NULL;
            k->count = 0;
        }
    return unused;
}

static uint64_t sweep_block(uint32_t idx, bool poison)
{
    lull_block *b = block_at(idx);
    uint32_t sz = lull_class_size[b->size_class], n = lull_class_slots[b->size_class];
    uintptr_t base = lull_block_addr(idx);
    b->sweep_pending = 0;
    void *free_list = NULL;
    uint32_t nfree = 0, live = 0;
    for (uint32_t s = n; s-- > 0;) {
        uintptr_t *slot = (uintptr_t *)(base + (uintptr_t)s * sz);
        if (slot[0] != 0) {
            if (lull_is_marked((uintptr_t)slot)) {
                live++;
                continue;
            }
            if (poison)
                memset(slot + 2, POISON_BYTE, sz - 2 * sizeof(uintptr_t));
            slot[0] = 0;
        }
        slot[1] = (uintptr_t)free_list;
        free_list = slot;
        nfree++;
    }
    lull_mark_clear_blocks(idx, 1);
    if (live == 0) {
        lull_block_set_state(b, LULL_BLOCK_EMPTY);
        b->free_list = NULL;
        b->nfree = 0;
        b->age = 0;
        b->next = major_g.empty_list;
        major_g.empty_list = idx;
        __atomic_fetch_add(&major_g.empty_count, 1, __ATOMIC_RELAXED);
        return 0;
    }
    b->free_list = free_list;
    b->nfree = (uint16_t)nfree;
    if (nfree) {
        b->next = major_g.partial[b->has_refs][b->size_class];
        major_g.partial[b->has_refs][b->size_class] = idx;
    }
    return (uint64_t)live * sz;
}

/* The live objects of SMALL block idx: its marked ones (one mark bit per
 * object, at its first granule). */
static uint64_t marked_slots(uint32_t idx)
{
    const uint64_t *w = &lull_heap_g.mark_bits[lull_granule_of(lull_block_addr(idx)) >> 6];
    uint64_t n = 0;
    for (size_t k = 0; k < (LULL_BLOCK_SIZE >> LULL_GRANULE_SHIFT) / 64; k++)
        n += (uint64_t)__builtin_popcountll(__atomic_load_n(&w[k], __ATOMIC_RELAXED));
    return n;
}

uint64_t lull_major_sweep_begin(void)
{
    LULL_ASSERT(major_g.npending == 0);
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++)
            major_g.partial[r][c] = major_g.pending[r][c] = LULL_NO_BLOCK;
    uint64_t live = 0;
    uint32_t frontier = lull_frontier();
    static uint32_t count[2][LULL_MAX_CLASSES];      /* world stopped: one caller */
    static uint64_t used[2][LULL_MAX_CLASSES], freeable[2][LULL_MAX_CLASSES];
    memset(count, 0, sizeof count);
    memset(used, 0, sizeof used);
    memset(freeable, 0, sizeof freeable);
    unsigned pct = lull_cfg.evacuation_threshold;
    for (uint32_t i = 0; i < frontier; i++) {
        lull_block *b = block_at(i);
        if (b->state == LULL_BLOCK_SMALL) {
            uint64_t n = marked_slots(i);
            b->live = (uint32_t)n;
            live += n * lull_class_size[b->size_class];
            /* A block with nothing marked becomes EMPTY when swept: it is
             * no part of what the next major would find to evacuate. */
            uint32_t slots = lull_class_slots[b->size_class];
            if (n) {
                count[b->has_refs][b->size_class]++;
                used[b->has_refs][b->size_class] += n;
                if (n * 100 < (uint64_t)slots * pct)
                    freeable[b->has_refs][b->size_class] += (uint64_t)(slots - n) * lull_class_size[b->size_class];
            }
            b->evacuating = 0;    /* its originals are now unmarked garbage, like any dead object */
            b->sweep_pending = 1;
            b->next = major_g.pending[b->has_refs][b->size_class];
            major_g.pending[b->has_refs][b->size_class] = i;
            major_g.npending++;
        } else if (b->state == LULL_BLOCK_EMPTY && b->age < UINT32_MAX) {
            b->age++;
        }
    }
    /* What an evacuating major would give back now: the free slots of the
     * sparse blocks of the classes lull_major_plan_evacuation's rule
     * would choose (the policy weighs it, policy.c). */
    major_g.fragmented = 0;
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++)
            if (count[r][c] >= EVAC_MIN_BLOCKS &&
                used[r][c] * 100 < (uint64_t)count[r][c] * lull_class_slots[c] * pct)
                major_g.fragmented += freeable[r][c];
    return live;
}

uint64_t lull_major_fragmented_bytes(void)
{
    return major_g.fragmented;
}

static bool sweep_one_counting(uint64_t *freed);

void lull_major_sweep_for_promotion(uint64_t bytes)
{
    if (!major_g.npending)
        return;
    uint64_t room = empty_bytes() + lull_space_headroom_bytes(), freed = 0;
    while (room + freed < bytes && sweep_one_counting(&freed))
        major_g.swept_on_demand++;
}

/* One pending block, from the lists in turn; false: none left. */
static bool sweep_one(void)
{
    return sweep_one_counting(NULL);
}

/* The same, adding to *freed (when given) the bytes the block's sweep
 * made free. */
static bool sweep_one_counting(uint64_t *freed)
{
    if (!major_g.npending)
        return false;
    unsigned nlists = 2 * lull_nclasses;
    for (unsigned k = 0; k < nlists; k++) {
        unsigned l = (major_g.cursor + k) % nlists;
        int r = (int)(l / lull_nclasses);
        unsigned c = l % lull_nclasses;
        uint32_t idx = major_g.pending[r][c];
        if (idx == LULL_NO_BLOCK)
            continue;
        major_g.pending[r][c] = block_at(idx)->next;
        major_g.npending--;
        major_g.cursor = l;
        uint64_t live = sweep_block(idx, lull_cfg.poison);
        if (freed)
            *freed += LULL_BLOCK_SIZE - live;
        return true;
    }
    LULL_ASSERT(!"npending counts blocks on no list");
    return false;
}

void lull_major_sweep_all(void)
{
    while (sweep_one())
        major_g.swept_on_demand++;
}

bool lull_major_sweep_pending(void)
{
    return major_g.npending != 0;
}

void lull_major_assert_all_swept(void)
{
#ifdef LULL_CHECKED
    uint32_t frontier = lull_frontier();
    for (uint32_t i = 0; i < frontier; i++)
        if (block_at(i)->state == LULL_BLOCK_SMALL && block_at(i)->sweep_pending)
            lull_fatal("lull_collect", "assertion: a mark begins with block %u (class %u) not swept: its dead "
                       "objects would read as live", i, (unsigned)block_at(i)->size_class);
#endif
}

void lull_major_sweep_counts(uint64_t *background, uint64_t *on_demand)
{
    *background = major_g.swept_background;
    *on_demand = major_g.swept_on_demand;
}

/* Blocks ready for promotion. A minor's promotion formats blocks, and a
 * block fresh from the OS takes a page fault per 4 KiB the first time it
 * is written: in the pause. So the background job keeps EMPTY blocks
 * enough for the next minor's promotion (block_reserve, which the policy
 * sets), their pages touched, and the release of long-empty blocks leaves
 * that many. */

/* A prepared block onto empty_list (gc lock held). */
static void link_prepared(uint32_t idx)
{
    lull_block *b = block_at(idx);
    b->age = 0;
    b->next = major_g.empty_list;
    major_g.empty_list = idx;
    __atomic_fetch_add(&major_g.empty_count, 1, __ATOMIC_RELAXED);
    major_g.prepared++;
}

void lull_major_set_block_reserve(uint64_t bytes)
{
    major_g.block_reserve = bytes;
}

uint64_t lull_major_prepared_blocks(void)
{
    return major_g.prepared;
}

/* A batch of blocks made ready, by the background job (one at a time:
 * the mark's leader or the sweep job). The blocks are taken from the
 * block space under the gc lock, EMPTY from then on (no object, on no
 * list: the space's coalescing only merges FREE neighbours); their pages
 * are faulted in without the lock (so no TLAB refill waits behind them);
 * then they go onto empty_list under it again. If the lock cannot be had
 * again (the job is asked to stop: the thread that holds it may be
 * stopping this job), the batch waits on `unlinked`, touched only by the
 * background job, or by a pause once the job is stopped
 * (lull_major_link_unlinked), for the next of them to link. The lock is
 * taken by trying and yielding between tries, not sleeping: a mutator
 * takes it often, and a sleeping job fills the reserve too late.
 * false when the reserve is met, the heap cannot grow, or the job is
 * asked to stop. */
#define SWEEP_BATCH 8
static bool prepare_batch(void)
{
    uint32_t idx[SWEEP_BATCH];
    bool warm[SWEEP_BATCH];
    unsigned n = 0;
    if (!lull_gc_lock_background(0))
        return false;
    lull_major_link_unlinked();
    uint64_t reserve = major_g.block_reserve;
    while (n < SWEEP_BATCH && empty_bytes() + ((uint64_t)n << LULL_BLOCK_SHIFT) < reserve) {
        uint32_t i = lull_space_alloc_any(1, &warm[n]);
        if (i == LULL_NO_BLOCK)
            break;
        lull_block_set_state(block_at(i), LULL_BLOCK_EMPTY);
        idx[n++] = i;
    }
    lull_gc_unlock();
    /* A dirty block's pages are resident already. A stop request leaves
     * the rest unpopulated (they are EMPTY all the same): a block's pages
     * take some 10 us, the batch's would keep a pause waiting. */
    for (unsigned k = 0; k < n && !lull_background_stop_requested(); k++)
        if (!warm[k])
            lull_os_populate((void *)lull_block_addr(idx[k]), LULL_BLOCK_SIZE);
    if (!n)
        return false;
    if (LULL_UNLIKELY(lull_major_test_prepared != NULL))
        lull_major_test_prepared();
    if (!lull_gc_lock_background(0)) {
        for (unsigned k = 0; k < n; k++) {
            block_at(idx[k])->next = major_g.unlinked;
            major_g.unlinked = idx[k];
        }
        return false;
    }
    for (unsigned k = 0; k < n; k++)
        link_prepared(idx[k]);
    lull_gc_unlock();
    return n == SWEEP_BATCH;
}

void (*lull_major_test_prepared)(void);

void lull_major_link_unlinked(void)
{
    while (major_g.unlinked != LULL_NO_BLOCK) {
        uint32_t i = major_g.unlinked;
        major_g.unlinked = block_at(i)->next;
        link_prepared(i);
    }
}

unsigned lull_major_unlinked_blocks(void)
{
    unsigned n = 0;
    for (uint32_t i = major_g.unlinked; i != LULL_NO_BLOCK; i = block_at(i)->next)
        n++;
    return n;
}

void lull_major_prepare_for_promotion(void)
{
    while (empty_bytes() < major_g.block_reserve && !lull_background_stop_requested() && prepare_batch())
        ;
}

/* Sweep up to n pending blocks (gc lock held; the background sweep,
 * gc/background.c). false when none is left. */
bool lull_major_sweep_some(unsigned n, uint64_t *swept)
{
    bool more = true;
    for (unsigned k = 0; k < n && more; k++)
        if ((more = sweep_one()))
            major_g.swept_background++, ++*swept;
    return more;
}

bool lull_major_short_of_blocks(void)
{
    return empty_bytes() < major_g.block_reserve;
}

void lull_major_release_empty(uint32_t min_age)
{
    uint32_t keep = LULL_NO_BLOCK, i = major_g.empty_list;
    uint64_t reserve = min_age ? major_g.block_reserve : 0;   /* 0: an allocation needs them all */
    major_g.empty_list = LULL_NO_BLOCK;
    while (i != LULL_NO_BLOCK) {
        uint32_t next = block_at(i)->next;
        if (block_at(i)->age >= min_age && empty_bytes() > reserve) {
            __atomic_fetch_sub(&major_g.empty_count, 1, __ATOMIC_RELAXED);
            lull_space_free_deferred(i, 1);
        } else {
            block_at(i)->next = keep;
            keep = i;
        }
        i = next;
    }
    major_g.empty_list = keep;
}

size_t lull_major_empty_bytes(void)
{
    return (size_t)empty_bytes();
}

/* ------------------------------------------------------------------------ */
/* Evacuation                                                               */
/* ------------------------------------------------------------------------ */


/* Take the blocks being evacuated off a partial list: no copy may land
 * in one. */
static void unlist_evacuating(uint32_t *list)
{
    while (*list != LULL_NO_BLOCK) {
        if (block_at(*list)->evacuating)
            *list = block_at(*list)->next;
        else
            list = &block_at(*list)->next;
    }
}

unsigned lull_major_plan_evacuation(unsigned threshold_pct, uint32_t *nblocks)
{
    static uint32_t count[2][LULL_MAX_CLASSES];   /* world stopped: one caller */
    static uint64_t used[2][LULL_MAX_CLASSES];
    static bool chosen[2][LULL_MAX_CLASSES];
    *nblocks = 0;
    if (!threshold_pct)
        return 0;
    memset(count, 0, sizeof count);
    memset(used, 0, sizeof used);
    memset(chosen, 0, sizeof chosen);
    uint32_t frontier = lull_frontier();
    for (uint32_t i = 0; i < frontier; i++) {
        const lull_block *b = block_at(i);
        if (b->state == LULL_BLOCK_SMALL) {
            count[b->has_refs][b->size_class]++;
            used[b->has_refs][b->size_class] += b->live;
        }
    }
    /* The rule: a kind and class with more than EVAC_MIN_BLOCKS - 1 blocks,
     * on average less than threshold_pct occupied (SGen's), is evacuated;
     * of its blocks, those themselves less than threshold_pct occupied
     * (the others would give back nothing, and a block its last
     * evacuation filled is not copied again). Occupancy is `live`: an
     * upper bound, so a class the program has been allocating in since
     * the last major is left alone. */
    unsigned nclasses = 0;
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++) {
            uint64_t cap = (uint64_t)count[r][c] * lull_class_slots[c];
            if (count[r][c] >= EVAC_MIN_BLOCKS && used[r][c] * 100 < cap * threshold_pct)
                chosen[r][c] = true, nclasses++;
        }
    if (!nclasses)
        return 0;
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++)
            atomic_store_explicit(&evac_g.exhausted[r][c], false, memory_order_relaxed);
    for (uint32_t i = 0; i < frontier; i++) {
        lull_block *b = block_at(i);
        if (b->state == LULL_BLOCK_SMALL && chosen[b->has_refs][b->size_class] &&
            (uint64_t)b->live * 100 < (uint64_t)lull_class_slots[b->size_class] * threshold_pct) {
            LULL_ASSERT(!b->sweep_pending);
            b->evacuating = 1;
            (*nblocks)++;
        }
    }
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++)
            if (chosen[r][c])
                unlist_evacuating(&major_g.partial[r][c]);
    return nclasses;
}

uintptr_t lull_major_evac_alloc(unsigned tracer, bool has_refs, unsigned cls)
{
    lull_alloc_cache *c = &evac_g.cache[tracer].c[has_refs][cls];
    if (!c->head) {
        atomic_bool *exhausted = &evac_g.exhausted[has_refs][cls];
        if (atomic_load_explicit(exhausted, memory_order_relaxed))
            return 0;
        pthread_mutex_lock(&evac_g.lock);
        bool ok = lull_major_refill(c, has_refs, cls, false);
        pthread_mutex_unlock(&evac_g.lock);
        if (!ok) {
            atomic_store_explicit(exhausted, true, memory_order_relaxed);
            return 0;
        }
    }
    uintptr_t *p = c->head;
    c->head = (void *)p[1];
    c->count--;
    return (uintptr_t)p;
}

void lull_major_evac_undo(unsigned tracer, bool has_refs, unsigned cls, uintptr_t slot)
{
    lull_alloc_cache *c = &evac_g.cache[tracer].c[has_refs][cls];
    uintptr_t *p = (uintptr_t *)slot;
    p[0] = 0;                       /* a free slot again */
    p[1] = (uintptr_t)c->head;
    c->head = p;
    c->count++;
}

void lull_major_evac_end(void)
{
    uint64_t unused = 0;
    for (unsigned i = 0; i <= LULL_MAX_WORKERS; i++)
        unused += lull_major_drop_caches(&evac_g.cache[i]);
    lull_meter_unused(unused);
}
