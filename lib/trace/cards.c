/* cards.c — the out-of-line part of the card scanner (cards.h): the
 * minor's work list. The walk itself is inline in cards.h.
 *
 * Callers: trace/minor.c (lull_minor_init/_fini; the listing with the
 * world stopped, on the stopping thread, before any copy). */
#include "trace/cards.h"

#include <string.h>

#include "base/os.h"

int lull_card_work_init(lull_card_work_list *w)
{
    w->cap = lull_heap_g.nblocks;
    w->n = 0;
    w->block = lull_os_table(w->cap * sizeof *w->block);
    return w->block ? 0 : -1;
}

void lull_card_work_fini(lull_card_work_list *w)
{
    lull_os_free_table(w->block, w->cap * sizeof *w->block);
    w->block = NULL;
}

/* Whether a minor scans the dirty cards of block b (index bi): a SMALL
 * block with references, or a block of an old large object with
 * references. *keep: the cards of a young large object's block stay as
 * they are. */
static bool minor_scans(const lull_block *b, uint32_t bi, bool *keep)
{
    *keep = false;
    if (b->state == LULL_BLOCK_SMALL)
        return b->has_refs;
    if (b->state != LULL_BLOCK_LARGE_HEAD && b->state != LULL_BLOCK_LARGE_TAIL)
        return false;
    uintptr_t obj = lull_block_addr(lull_large_head(bi, b->state));
    if (lull_young_large_at(obj)) {
        *keep = true;
        return false;
    }
    return lull_type_has_refs(lull_header_type(*(uintptr_t *)obj));
}

void lull_cards_list_minor(lull_card_work_list *w, unsigned ntracers)
{
    uint8_t *cards = lull_heap_g.cards;
    uint32_t frontier = lull_frontier();
    size_t n = 0;
    for (uint32_t bi = 0; bi < frontier; bi++) {
        uint8_t *bc = cards + (size_t)bi * LULL_CARDS_PER_BLOCK;
        if (lull_cards_clean(bc, false))
            continue;
        bool keep;
        if (minor_scans(&lull_heap_g.blocks[bi], bi, &keep))
            w->block[n++] = bi;
        else if (!keep)
            memset(bc, 0, LULL_CARDS_PER_BLOCK);
    }
    w->n = n;
    size_t chunk = n / (4u * (ntracers ? ntracers : 1u));
    w->chunk = chunk < 1 ? 1 : chunk > LULL_CARD_CHUNK ? LULL_CARD_CHUNK : chunk;
    atomic_store_explicit(&w->next, 0, memory_order_relaxed);
}
