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
 * the next sweep re-lists it. */
#include <string.h>

#include "collect.h"
#include "policy.h"
#include "heap.h"
#include "util.h"

unsigned lull_nclasses;
uint32_t lull_class_size[LULL_MAX_CLASSES];
uint32_t lull_class_slots[LULL_MAX_CLASSES];
uint8_t  lull_class_of_granules[(LULL_MAX_SMALL >> LULL_GRANULE_SHIFT) + 1];

/* The lists above: one instance, under the gc lock (a parallel minor's
 * promotion refills also hold the nursery's promotion lock). */
static struct {
    uint32_t partial[2][LULL_MAX_CLASSES];
    uint32_t empty_list;
    uint32_t empty_count;
} major_g = { .empty_list = LULL_NO_BLOCK };

#define POISON_BYTE 0xa5

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
            major_g.partial[r][c] = LULL_NO_BLOCK;
    major_g.empty_list = LULL_NO_BLOCK;
    major_g.empty_count = 0;
}

void lull_major_fini(void)
{
    major_g.empty_list = LULL_NO_BLOCK;
    major_g.empty_count = 0;
}

static lull_block *B(uint32_t i) { return &lull_heap_g.blocks[i]; }

/* Format block idx for class cls: every slot free, linked in address order. */
static void format_block(uint32_t idx, bool has_refs, unsigned cls)
{
    lull_block *b = B(idx);
    uint32_t sz = lull_class_size[cls], n = lull_class_slots[cls];
    uintptr_t base = lull_block_addr(idx);
    void *next = NULL;
    for (uint32_t s = n; s-- > 0;) {
        uintptr_t *slot = (uintptr_t *)(base + (uintptr_t)s * sz);
        slot[0] = 0;
        slot[1] = (uintptr_t)next;
        next = slot;
    }
    b->state = LULL_BLOCK_SMALL;
    b->size_class = (uint8_t)cls;
    b->has_refs = has_refs;
    b->free_list = next;
    b->nfree = n;
    b->next = LULL_NO_BLOCK;
}

static uint32_t take_block(void)
{
    if (major_g.empty_list != LULL_NO_BLOCK) {
        uint32_t idx = major_g.empty_list;
        major_g.empty_list = B(idx)->next;
        major_g.empty_count--;
        return idx;
    }
    return lull_space_alloc(1);
}

bool lull_major_refill(lull_alloc_cache *cache, bool has_refs, unsigned cls)
{
    uint32_t idx = major_g.partial[has_refs][cls];
    if (idx != LULL_NO_BLOCK) {
        major_g.partial[has_refs][cls] = B(idx)->next;
    } else {
        idx = take_block();
        if (idx == LULL_NO_BLOCK)
            return false;
        format_block(idx, has_refs, cls);
    }
    lull_block *b = B(idx);
    cache->head = b->free_list;
    cache->count = b->nfree;
    b->free_list = NULL;
    b->nfree = 0;
    lull_policy_note_allocated((uint64_t)cache->count * lull_class_size[cls]);
    return true;
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
    lull_block *b = B(idx);
    uint32_t sz = lull_class_size[b->size_class], n = lull_class_slots[b->size_class];
    uintptr_t base = lull_block_addr(idx);
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
        b->state = LULL_BLOCK_EMPTY;
        b->free_list = NULL;
        b->nfree = 0;
        b->age = 0;
        b->next = major_g.empty_list;
        major_g.empty_list = idx;
        major_g.empty_count++;
        return 0;
    }
    b->free_list = free_list;
    b->nfree = nfree;
    if (nfree) {
        b->next = major_g.partial[b->has_refs][b->size_class];
        major_g.partial[b->has_refs][b->size_class] = idx;
    }
    return (uint64_t)live * sz;
}

uint64_t lull_major_sweep(bool poison)
{
    for (int r = 0; r < 2; r++)
        for (unsigned c = 0; c < lull_nclasses; c++)
            major_g.partial[r][c] = LULL_NO_BLOCK;
    uint64_t live = 0;
    uint32_t frontier = lull_frontier();
    for (uint32_t i = 0; i < frontier; i++) {
        lull_block *b = B(i);
        if (b->state == LULL_BLOCK_SMALL)
            live += sweep_block(i, poison);
        else if (b->state == LULL_BLOCK_EMPTY && b->age < UINT32_MAX)
            b->age++;
    }
    return live;
}

void lull_major_release_empty(uint32_t min_age)
{
    uint32_t keep = LULL_NO_BLOCK, i = major_g.empty_list;
    major_g.empty_list = LULL_NO_BLOCK;
    while (i != LULL_NO_BLOCK) {
        uint32_t next = B(i)->next;
        if (B(i)->age >= min_age) {
            major_g.empty_count--;
            lull_space_free_deferred(i, 1);
        } else {
            B(i)->next = keep;
            keep = i;
        }
        i = next;
    }
    major_g.empty_list = keep;
}

size_t lull_major_empty_bytes(void)
{
    return (size_t)major_g.empty_count << LULL_BLOCK_SHIFT;
}
