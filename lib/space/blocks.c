/* blocks.c — the block space: hands out runs of 16 KiB blocks from the
 * reserved range and takes them back.
 *
 * Free runs are kept on one list with boundary tags: the first block of a
 * run has state FREE and run_len, the last one has state FREE and run_head,
 * so a freed run merges with free neighbours in constant time. Every block
 * on the list reads as zero (its memory was never touched, or was released
 * to the OS when the run was freed): large objects need no memset.
 *
 * Invariants (gc lock held for every call):
 *   in_use = blocks below the frontier that are not FREE;
 *   in_use * BLOCK_SIZE <= limit (when max-heap-size is set). */
#include <stdatomic.h>
#include <string.h>

#include "space/heap.h"
#include "base/config.h"
#include "space/nursery.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/util.h"

lull_heap lull_heap_g;

#define COMMIT_CHUNK 64u   /* blocks committed at once when the frontier grows */

/* The block space's bookkeeping: one instance, written with the gc lock
 * held (allocation, the sweep; a parallel minor's promotion refills also
 * hold the nursery's promotion lock); in_use is also read without it. */
static struct {
    uint32_t free_runs;            /* list of FREE run heads */
    _Atomic uint32_t in_use;       /* read by lull_get_stats without the lock */
    uint32_t committed;            /* blocks mprotect'ed RW */
    size_t   limit_blocks;         /* 0: no limit */
    uint32_t pending;              /* RELEASING runs, newest first */
} space_g = { .free_runs = LULL_NO_BLOCK, .pending = LULL_NO_BLOCK };

void lull_space_set_limit(size_t bytes)
{
    space_g.limit_blocks = bytes >> LULL_BLOCK_SHIFT;
}

int lull_space_init(size_t reserve)
{
    return lull_space_init_aligned(reserve, LULL_BLOCK_SIZE);
}

int lull_space_init_aligned(size_t reserve, size_t align)
{
    lull_heap *h = &lull_heap_g;
    memset(h, 0, sizeof *h);
    void *base = NULL;
    /* Ask for `reserve`, settle for less on systems that refuse it. */
    while (reserve >= ((size_t)256 << 20)) {
        base = lull_os_reserve(reserve, align < LULL_BLOCK_SIZE ? LULL_BLOCK_SIZE : align);
        if (base)
            break;
        reserve /= 2;
    }
    if (!base)
        return -1;
    h->start = (uintptr_t)base;
    h->reserve = reserve;
    h->nblocks = (uint32_t)(reserve >> LULL_BLOCK_SHIFT);
    h->blocks_bytes = lull_align_up((size_t)h->nblocks * sizeof(lull_block), LULL_PAGE_SIZE);
    h->mark_bytes = lull_align_up(reserve >> (LULL_GRANULE_SHIFT + 3), LULL_PAGE_SIZE);
    h->cards_bytes = lull_align_up(reserve >> LULL_CARD_SHIFT, LULL_PAGE_SIZE);
    h->blocks = lull_os_reserve_rw(h->blocks_bytes);
    h->mark_bits = lull_os_reserve_rw(h->mark_bytes);
    h->cards = lull_os_reserve_rw(h->cards_bytes);
    h->union_cards = lull_os_reserve_rw(h->cards_bytes);
    if (!h->blocks || !h->mark_bits || !h->cards || !h->union_cards) {
        lull_space_fini();
        return -1;
    }
    space_g.free_runs = LULL_NO_BLOCK;
    space_g.pending = LULL_NO_BLOCK;
    space_g.in_use = 0;
    space_g.committed = 0;
    return 0;
}

void lull_space_fini(void)
{
    lull_heap *h = &lull_heap_g;
    lull_os_unreserve(h->blocks, h->blocks_bytes);
    lull_os_unreserve(h->mark_bits, h->mark_bytes);
    lull_os_unreserve(h->cards, h->cards_bytes);
    lull_os_unreserve(h->union_cards, h->cards_bytes);
    lull_os_unreserve((void *)h->start, h->reserve);
    memset(h, 0, sizeof *h);
    space_g.free_runs = LULL_NO_BLOCK;
    space_g.pending = LULL_NO_BLOCK;
    space_g.in_use = 0;
    space_g.committed = 0;
    space_g.limit_blocks = 0;
}

static lull_block *B(uint32_t i) { return &lull_heap_g.blocks[i]; }

static void list_remove(uint32_t i)
{
    lull_block *b = B(i);
    if (b->prev != LULL_NO_BLOCK) B(b->prev)->next = b->next;
    else space_g.free_runs = b->next;
    if (b->next != LULL_NO_BLOCK) B(b->next)->prev = b->prev;
}

static void list_push(uint32_t i)
{
    lull_block *b = B(i);
    b->prev = LULL_NO_BLOCK;
    b->next = space_g.free_runs;
    if (space_g.free_runs != LULL_NO_BLOCK)
        B(space_g.free_runs)->prev = i;
    space_g.free_runs = i;
}

/* Make [i, i+n) one free run on the list (boundary tags set). */
static void make_run(uint32_t i, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        lull_block_set_state(B(i + k), LULL_BLOCK_FREE);
    B(i)->run_len = n;
    B(i + n - 1)->run_head = i;
    list_push(i);
}

uint32_t lull_space_alloc(uint32_t n)
{
    if (space_g.limit_blocks && (size_t)space_g.in_use + n > space_g.limit_blocks)
        return LULL_NO_BLOCK;
    /* First fit over the free runs; take from the run's start. */
    for (uint32_t r = space_g.free_runs; r != LULL_NO_BLOCK; r = B(r)->next) {
        uint32_t len = B(r)->run_len;
        if (len < n)
            continue;
        list_remove(r);
        if (len > n)
            make_run(r + n, len - n);
        space_g.in_use += n;
        return r;
    }
    /* Grow the frontier. */
    lull_heap *h = &lull_heap_g;
    if ((uint64_t)lull_frontier() + n > h->nblocks)
        return LULL_NO_BLOCK;
    uint32_t idx = lull_frontier(), end = idx + n;
    if (end > space_g.committed) {
        uint32_t want = (end + COMMIT_CHUNK - 1) / COMMIT_CHUNK * COMMIT_CHUNK;
        if (want > h->nblocks)
            want = h->nblocks;
        if (!lull_os_commit((void *)lull_block_addr(space_g.committed), (size_t)(want - space_g.committed) << LULL_BLOCK_SHIFT)) {
            /* Retry the bare minimum before giving up. */
            want = end;
            if (!lull_os_commit((void *)lull_block_addr(space_g.committed), (size_t)(want - space_g.committed) << LULL_BLOCK_SHIFT))
                return LULL_NO_BLOCK;
        }
        LULL_PROBE2(heap_grown, (uint64_t)(want - space_g.committed) << LULL_BLOCK_SHIFT,
                    (uint64_t)want << LULL_BLOCK_SHIFT);
        space_g.committed = want;
    }
    __atomic_store_n(&h->frontier, end, __ATOMIC_RELAXED);
    space_g.in_use += n;
    return idx;
}

void lull_space_free(uint32_t idx, uint32_t n)
{
    lull_os_release((void *)lull_block_addr(idx), (size_t)n << LULL_BLOCK_SHIFT);
    space_g.in_use -= n;
    LULL_PROBE2(heap_shrunk, (uint64_t)n << LULL_BLOCK_SHIFT, (uint64_t)space_g.in_use << LULL_BLOCK_SHIFT);
    /* Merge with the run to the left and the run to the right. */
    if (idx > 0 && B(idx - 1)->state == LULL_BLOCK_FREE) {
        uint32_t head = B(idx - 1)->run_head;
        uint32_t len = B(head)->run_len;
        list_remove(head);
        n += len;
        idx = head;
    }
    uint32_t right = idx + n;
    if (right < lull_frontier() && B(right)->state == LULL_BLOCK_FREE) {
        uint32_t len = B(right)->run_len;
        list_remove(right);
        n += len;
    }
    make_run(idx, n);
}

void lull_space_free_deferred(uint32_t idx, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        lull_block_set_state(B(idx + k), LULL_BLOCK_RELEASING);
    /* Sweeps walk the heap in address order: a run often continues the one
     * queued just before it, and one madvise then covers both. */
    if (space_g.pending != LULL_NO_BLOCK && space_g.pending + B(space_g.pending)->run_len == idx) {
        B(space_g.pending)->run_len += n;
        return;
    }
    B(idx)->run_len = n;
    B(idx)->next = space_g.pending;
    space_g.pending = idx;
}

void lull_space_release_pending(void)
{
    while (space_g.pending != LULL_NO_BLOCK) {
        uint32_t idx = space_g.pending, n = B(idx)->run_len;
        space_g.pending = B(idx)->next;
        lull_space_free(idx, n);
    }
}

size_t lull_space_headroom_bytes(void)
{
    size_t cap = lull_heap_g.nblocks;
    if (space_g.limit_blocks && space_g.limit_blocks < cap)
        cap = space_g.limit_blocks;
    size_t used = atomic_load_explicit(&space_g.in_use, memory_order_relaxed);
    return used < cap ? (cap - used) << LULL_BLOCK_SHIFT : 0;
}

size_t lull_space_in_use_bytes(void)
{
    return (size_t)atomic_load_explicit(&space_g.in_use, memory_order_relaxed) << LULL_BLOCK_SHIFT;
}

void lull_mark_clear_blocks(uint32_t idx, uint32_t n)
{
    /* A block covers 1024 granules: 16 words of the bitmap. */
    size_t words_per_block = LULL_BLOCK_SIZE >> (LULL_GRANULE_SHIFT + 6);
    memset(&lull_heap_g.mark_bits[(size_t)idx * words_per_block], 0,
           (size_t)n * words_per_block * sizeof(uint64_t));
}

size_t lull_object_footprint(uintptr_t obj)
{
    lull_block *b = lull_block_of(obj);
    if (b->state == LULL_BLOCK_SMALL)
        return lull_class_size[b->size_class];
    if (b->state == LULL_BLOCK_NURSERY)
        return lull_object_size(obj, lull_header_type(*(uintptr_t *)obj));
    return b->large_size;
}

size_t lull_heap_bytes_held(void)
{
    return lull_space_in_use_bytes();
}

/* Could `a`, whose first word is `hdr`, be the start of an object? Without
 * the gc lock (the caller holds a live object, so its block's state is
 * stable): in the major heap, `a` must be a slot boundary or a large
 * object's first byte. A type never lives in the heap, and is an aligned
 * address above the first page: that is what rejects an interior pointer
 * into the nursery (whose object starts are known only to a collection). */
bool lull_object_start_plausible(uintptr_t a, uintptr_t hdr)
{
    uintptr_t tp = hdr & ~(uintptr_t)LULL_HDR_TAG_MASK;
    if (tp < 4096 || tp % sizeof(void *) || lull_in_committed(tp))
        return false;
    const lull_block *b = lull_block_of(a);
    switch (b->state) {
    case LULL_BLOCK_SMALL:
        return (a & (LULL_BLOCK_SIZE - 1)) % lull_class_size[b->size_class] == 0;
    case LULL_BLOCK_LARGE_HEAD:
        return (a & (LULL_BLOCK_SIZE - 1)) == 0;
    case LULL_BLOCK_NURSERY:
        return true;
    default:
        return false;
    }
}

bool lull_object_plausible(const void *obj)
{
    uintptr_t a = (uintptr_t)obj;
    if (!lull_is_initialised() || !lull_in_committed(a) || a % LULL_GRANULE)
        return false;
    uintptr_t hdr = __atomic_load_n((const uintptr_t *)obj, __ATOMIC_RELAXED);
    return hdr && lull_object_start_plausible(a, hdr);
}
