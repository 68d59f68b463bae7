/* The minor's card work list (cards.h: lull_cards_list_minor) is claimed
 * in chunks small enough that each tracer can take several: the dirty
 * blocks of one old array a few blocks long are shared among a minor's
 * tracers, not taken whole by the first one to claim; a long list is
 * claimed LULL_CARD_CHUNK blocks at a time. Each case dirties one card in
 * every block of an old array and reads the list a minor would share. */
#include <stdint.h>

#include "space/heap.h"
#include "trace/cards.h"
#include "unit_nodes.h"

#define SLOTS_PER_BLOCK (LULL_BLOCK_SIZE / sizeof(void *))

static void *roots[2];

/* The list for an old array of `blocks` blocks with a young reference in
 * each, as a minor of `ntracers` tracers would claim it. */
static void list_for(size_t blocks, unsigned ntracers, lull_card_work_list *w)
{
    size_t slots = (blocks * LULL_BLOCK_SIZE - 256) / sizeof(void *);
    roots[0] = lull_alloc_array(&refs_type, slots);
    UCHECK(roots[0] != NULL, "alloc %zu slots", slots);
    /* A young large object stays young for at most two minors. */
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_NURSERY);
    struct refs *arr = roots[0];
    roots[1] = lull_alloc(&node_type);
    UCHECK(roots[1] != NULL, "alloc node");
    for (size_t b = 0; b < blocks; b++)
        lull_store(arr, &arr->item[b * SLOTS_PER_BLOCK], roots[1]);
    lull_gc_lock();
    lull_cards_list_minor(w, ntracers);
    lull_gc_unlock();
    roots[0] = roots[1] = NULL;
}

int main(void)
{
    UCHECK(lull_init("major=stw,mark-workers=1") == 0, "init");
    UCHECK(lull_root_add_refs(roots, 2) == 0, "roots");
    lull_card_work_list w;
    UCHECK(lull_card_work_init(&w) == 0, "work list");

    static const struct { size_t blocks; unsigned ntracers; } cases[] = {
        { 9, 2 }, { 40, 2 }, { 40, 4 }, { 200, 2 }, { 3, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        list_for(cases[i].blocks, cases[i].ntracers, &w);
        UCHECK(w.n >= cases[i].blocks, "%zu blocks with dirty cards, %zu listed", cases[i].blocks, w.n);
        size_t n = w.n, want = 4u * cases[i].ntracers, claims = (n + w.chunk - 1) / w.chunk;
        UCHECK(w.chunk >= 1 && w.chunk <= LULL_CARD_CHUNK, "chunk %zu", w.chunk);
        /* Several claims for each tracer, as far as the list allows... */
        UCHECK(claims >= (n < want ? n : want), "%zu blocks listed for %u tracers, claimed %zu at a time: %zu claims",
               n, cases[i].ntracers, w.chunk, claims);
        /* ...and no more claims than that needs on a long list. */
        if (n >= want * LULL_CARD_CHUNK)
            UCHECK(w.chunk == LULL_CARD_CHUNK, "%zu blocks listed: claimed %zu at a time", n, w.chunk);
        lull_collect(LULL_GEN_NURSERY);
        printf("unit_card_chunks: %zu dirty blocks, %u tracers: claimed %zu at a time\n", w.n, cases[i].ntracers,
               w.chunk);
    }
    lull_card_work_fini(&w);
    lull_root_remove(roots);
    lull_shutdown();
    printf("unit_card_chunks: ok\n");
    return 0;
}
