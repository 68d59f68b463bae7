/* los.c — the large-object space: objects bigger than the largest size
 * class get a run of whole blocks of their own. They never move. A dead
 * large object's run goes back to the block space, which returns its pages
 * to the OS at once (the program's RSS falls); pages past the object's end
 * in its last block are never touched, so they cost no memory either.
 *
 * The head block's descriptor holds the object's size; tail blocks point to
 * the head, so an interior pointer anywhere in the run finds the object. */
#include "collect.h"
#include "policy.h"
#include "heap.h"

void *lull_los_alloc(size_t bytes)
{
    size_t nb = (bytes + LULL_BLOCK_SIZE - 1) >> LULL_BLOCK_SHIFT;
    if (nb > UINT32_MAX / 2)
        return NULL;
    uint32_t n = (uint32_t)nb;
    uint32_t idx = lull_space_alloc(n);
    if (idx == LULL_NO_BLOCK)
        return NULL;
    lull_block *head = &lull_heap_g.blocks[idx];
    head->state = LULL_BLOCK_LARGE_HEAD;
    head->run_len = n;
    head->large_size = bytes;
    for (uint32_t k = 1; k < n; k++) {
        lull_block *t = &lull_heap_g.blocks[idx + k];
        t->state = LULL_BLOCK_LARGE_TAIL;
        t->run_head = idx;
    }
    lull_policy_note_allocated(bytes);
    return (void *)lull_block_addr(idx);   /* space runs read as zero */
}

uint64_t lull_los_sweep(void)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < lull_frontier();) {
        lull_block *b = &lull_heap_g.blocks[i];
        if (b->state != LULL_BLOCK_LARGE_HEAD) {
            i++;
            continue;
        }
        uint32_t n = b->run_len;
        uintptr_t obj = lull_block_addr(i);
        if (lull_is_marked(obj)) {
            live += b->large_size;
            lull_mark_clear_blocks(i, 1);
        } else {
            lull_space_free_deferred(i, n);
        }
        i += n;
    }
    return live;
}
