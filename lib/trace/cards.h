/* cards.h — the one card scanner: the walk over dirty cards of the card
 * table (the minors') or the union table (a concurrent mark's), with one
 * prefetch pipe, for every kind of scan (SGen: scan_card_table with its
 * CardTableScanType). The table primitives (LULL_CARDS_PER_BLOCK,
 * lull_cards_clean, lull_prefetch_card) are space/heap.h's.
 *
 * Kinds:
 *   MINOR     the card table, world stopped, on every tracer of a minor: a
 *             dirty card is cleared when it is scanned (the visitor dirties
 *             it again for a slot that keeps a young reference), and every
 *             live object on it is scanned;
 *   FINAL     the union table in a concurrent major's final pause, world
 *             stopped: a card is cleared when taken; marked objects only;
 *   PRECLEAN  the union table while the world runs (one thread): a card is
 *             taken with an atomic exchange; marked objects only, read
 *             after their mark bit with acquire (heap.h).
 *
 * What a kind does with an object is its scanner's (lull_card_scanner):
 * the minor forwards, the mark greys. The walk is inline, so that each
 * user's scanner functions are called directly. */
#ifndef LULL_CARDS_H
#define LULL_CARDS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "space/heap.h"
#include "trace/trace.h"

typedef enum lull_card_kind {
    LULL_CARDS_MINOR,
    LULL_CARDS_FINAL,
    LULL_CARDS_PRECLEAN,
} lull_card_kind;

/* A kind's scanner: small(obj, ctx) for a live object of a SMALL block on
 * the card (scanned whole), large(obj, lo, hi, ctx) for the slots of large
 * object obj that lie on the card [lo, hi). */
typedef struct lull_card_scanner {
    lull_card_kind kind;
    void (*small)(uintptr_t obj, void *ctx);
    void (*large)(uintptr_t obj, uintptr_t lo, uintptr_t hi, void *ctx);
} lull_card_scanner;

/* A MINOR scan's count: cards scanned, and of those, the ones on which the
 * visitor set saw_young (a slot held a young reference). */
typedef struct lull_card_count {
    uint64_t cards;
    uint64_t young;
    bool saw_young;
} lull_card_count;

/* The objects on card c of block bi, as kind s->kind sees them. */
static inline __attribute__((always_inline)) void lull_card_objects(const lull_card_scanner *s, void *ctx,
                                                                    uint32_t bi, size_t c)
{
    const lull_block *b = &lull_heap_g.blocks[bi];
    uintptr_t base = lull_block_addr(bi), lo = base + (c << LULL_CARD_SHIFT);
    uintptr_t hi = lo + ((uintptr_t)1 << LULL_CARD_SHIFT);
    unsigned state = lull_block_state_acquire(b);
    if (state == LULL_BLOCK_SMALL) {
        uint32_t s0, s1, sz = lull_class_size[b->size_class];
        if (!b->has_refs || !lull_block_slots_in(bi, b->size_class, lo, hi, &s0, &s1))
            return;
        /* A block the last major marked but did not sweep yet holds dead
         * objects too: only the marked ones are live (their dead
         * neighbours' references may lead to memory reused since). A slot
         * whose word 0 is zero is free, or a copy not finished (minor.h). */
        bool pending = s->kind == LULL_CARDS_MINOR && b->sweep_pending;
        for (uint32_t k = s0; k <= s1; k++) {
            uintptr_t obj = base + (uintptr_t)k * sz;
            if (s->kind == LULL_CARDS_MINOR ? __atomic_load_n((uintptr_t *)obj, __ATOMIC_ACQUIRE) &&
                                                  (!pending || lull_is_marked(obj))
                                            : lull_is_marked_acquire(obj) &&
                                                  __atomic_load_n((uintptr_t *)obj, __ATOMIC_ACQUIRE))
                s->small(obj, ctx);
        }
    } else if (state == LULL_BLOCK_LARGE_HEAD || state == LULL_BLOCK_LARGE_TAIL) {
        uintptr_t obj = lull_block_addr(lull_large_head(bi, state));
        if (s->kind == LULL_CARDS_MINOR || lull_is_marked_acquire(obj))
            s->large(obj, lo, hi, ctx);
    }
}

/* One card out of the pipe. MINOR: if still dirty, cleared, counted, and
 * its objects scanned; the other kinds took (cleared) it already. */
static inline __attribute__((always_inline)) void lull_card_visit(const lull_card_scanner *s, void *ctx,
                                                                  lull_card_count *n, uint32_t bi, size_t c)
{
    if (s->kind != LULL_CARDS_MINOR) {
        lull_card_objects(s, ctx, bi, c);
        return;
    }
    uint8_t *card = lull_heap_g.cards + (size_t)bi * LULL_CARDS_PER_BLOCK + c;
    if (!__atomic_load_n(card, __ATOMIC_RELAXED))
        return;
    n->cards++;
    n->saw_young = false;
    __atomic_store_n(card, LULL_CARD_CLEAN, __ATOMIC_RELAXED);
    lull_card_objects(s, ctx, bi, c);
    n->young += n->saw_young;
}

/* The prefetch pipe: the cards lie on objects scattered over the heap, so
 * the first read of each is a cache miss; a card is scanned LULL_CARD_PIPE
 * cards after its memory was prefetched, so that the misses overlap. */
#define LULL_CARD_PIPE 16u
typedef struct lull_card_pipe {
    uint32_t bi[LULL_CARD_PIPE];
    uint16_t c[LULL_CARD_PIPE];
    unsigned head, n;
} lull_card_pipe;

static inline __attribute__((always_inline)) void lull_card_pipe_push(lull_card_pipe *p, const lull_card_scanner *s,
                                                                      void *ctx, lull_card_count *n, uint32_t bi,
                                                                      size_t c)
{
    const lull_block *b = &lull_heap_g.blocks[bi];
    lull_prefetch_card(lull_block_addr(bi), c,
                       lull_block_state_acquire(b) == LULL_BLOCK_SMALL ? lull_class_size[b->size_class] : 0);
    if (p->n == LULL_CARD_PIPE) {
        lull_card_visit(s, ctx, n, p->bi[p->head], p->c[p->head]);
        p->head = (p->head + 1) % LULL_CARD_PIPE;
        p->n--;
    }
    unsigned t = (p->head + p->n) % LULL_CARD_PIPE;
    p->bi[t] = bi;
    p->c[t] = (uint16_t)c;
    p->n++;
}

/* Scan every card still in the pipe. */
static inline __attribute__((always_inline)) void lull_card_pipe_flush(lull_card_pipe *p, const lull_card_scanner *s,
                                                                       void *ctx, lull_card_count *n)
{
    for (; p->n; p->n--, p->head = (p->head + 1) % LULL_CARD_PIPE)
        lull_card_visit(s, ctx, n, p->bi[p->head], p->c[p->head]);
}

/* Take card c of a block's cards `bc` the kind's way: whether it was dirty
 * (and is now the scan's). */
static inline __attribute__((always_inline)) bool lull_card_take(lull_card_kind kind, uint8_t *bc, size_t c)
{
    switch (kind) {
    case LULL_CARDS_MINOR:
        return __atomic_load_n(&bc[c], __ATOMIC_RELAXED) != 0;
    case LULL_CARDS_FINAL:
        if (!bc[c])
            return false;
        bc[c] = LULL_CARD_CLEAN;
        return true;
    case LULL_CARDS_PRECLEAN:
    default:
        return __atomic_load_n(&bc[c], __ATOMIC_RELAXED) &&
               __atomic_exchange_n(&bc[c], LULL_CARD_CLEAN, __ATOMIC_SEQ_CST);
    }
}

/* Cards [c0, c1] of block bi, whose first card in the kind's table is bc:
 * each dirty one is taken and goes into the pipe. Returns how many. */
static inline __attribute__((always_inline)) size_t lull_cards_take_range(lull_card_pipe *p, const lull_card_scanner *s,
                                                                         void *ctx, lull_card_count *n, uint8_t *bc,
                                                                         uint32_t bi, size_t c0, size_t c1)
{
    size_t taken = 0;
    for (size_t c = c0; c <= c1; c++)
        if (lull_card_take(s->kind, bc, c)) {
            lull_card_pipe_push(p, s, ctx, n, bi, c);
            taken++;
        }
    return taken;
}

/* Every card of block bi: the same. */
static inline __attribute__((always_inline)) size_t lull_cards_take_block(lull_card_pipe *p, const lull_card_scanner *s,
                                                                         void *ctx, lull_card_count *n, uint8_t *bc,
                                                                         uint32_t bi)
{
    return lull_cards_take_range(p, s, ctx, n, bc, bi, 0, LULL_CARDS_PER_BLOCK - 1);
}

/* ---- the minor's scans ---- */

/* The blocks whose dirty cards a minor scans, listed before any copy is
 * made (a tracer never reads the state of a block another one may be
 * formatting for its copies), claimed in chunks through `next`. */
typedef struct lull_card_work_list {
    uint32_t *block;
    size_t n, cap;
    size_t chunk;               /* blocks a tracer claims at once */
    atomic_size_t next;
} lull_card_work_list;

int  lull_card_work_init(lull_card_work_list *w);
void lull_card_work_fini(lull_card_work_list *w);
/* One thread, world stopped: list the blocks with dirty cards on which a
 * minor may find old-to-young references (SMALL blocks with references,
 * old large objects with references); clear the cards of every other
 * block, but those of young large objects (scanned if a minor reaches the
 * object, and kept dirty until then: lull_cards_scan_object). The list is
 * claimed in chunks small enough that each of `ntracers` tracers can take
 * several: a short list (a few blocks of one old array) is shared too. */
void lull_cards_list_minor(lull_card_work_list *w, unsigned ntracers);

#define LULL_CARD_CHUNK 16u     /* the most work-list blocks a tracer claims at once */

/* Every tracer of a minor: claim the work list's blocks and scan their
 * dirty cards (s->kind MINOR). */
static inline __attribute__((always_inline)) void lull_cards_scan_work(lull_card_work_list *w,
                                                                       const lull_card_scanner *s, void *ctx,
                                                                       lull_card_count *n)
{
    lull_card_pipe p = { .n = 0 };
    size_t i0, i1;
    while (lull_claim(&w->next, w->n, w->chunk, &i0, &i1))
        for (size_t i = i0; i < i1; i++)
            lull_cards_take_block(&p, s, ctx, n, lull_heap_g.cards + (size_t)w->block[i] * LULL_CARDS_PER_BLOCK,
                                  w->block[i]);
    lull_card_pipe_flush(&p, s, ctx, n);
}

/* The dirty cards of one large object `obj` (a young one a minor reached:
 * the card table's, s->kind MINOR), a block's clean cards skipped at once.
 * One tracer scans the object, so its cards are this tracer's alone. */
static inline __attribute__((always_inline)) void lull_cards_scan_object(const lull_card_scanner *s, void *ctx,
                                                                         lull_card_count *n, uintptr_t obj)
{
    uint8_t *cards = lull_heap_g.cards;
    size_t size = lull_block_of(obj)->large_size;
    size_t c0 = (obj - lull_heap_g.start) >> LULL_CARD_SHIFT;
    size_t c1 = (obj + size - 1 - lull_heap_g.start) >> LULL_CARD_SHIFT;
    lull_card_pipe p = { .n = 0 };
    for (size_t c = c0; c <= c1; c = (c / LULL_CARDS_PER_BLOCK + 1) * LULL_CARDS_PER_BLOCK) {
        size_t first = c / LULL_CARDS_PER_BLOCK * LULL_CARDS_PER_BLOCK;
        size_t last = first + LULL_CARDS_PER_BLOCK - 1 < c1 ? first + LULL_CARDS_PER_BLOCK - 1 : c1;
        if (lull_cards_clean(cards + first, false))
            continue;
        lull_cards_take_range(&p, s, ctx, n, cards + first, (uint32_t)(first / LULL_CARDS_PER_BLOCK), c - first,
                              last - first);
    }
    lull_card_pipe_flush(&p, s, ctx, n);
}

/* The slots of large object obj in [lo, hi), for a minor: a type with a
 * trace function can only be visited whole, once per minor, which its
 * block descriptor records (minor_seen, this minor's `epoch`: a
 * compare-and-swap, so that of two tracers scanning two of its cards one
 * visits it). Not its mark bit: a concurrent mark owns those while minors
 * run. */
static inline void lull_card_large_slots_once(uintptr_t obj, uintptr_t lo, uintptr_t hi, lull_visit_fn fn, void *ctx,
                                              uint32_t epoch)
{
    if (lull_trace_slots_in(obj, lo, hi, fn, ctx))
        return;
    uint32_t *seen = &lull_block_of(obj)->minor_seen;
    uint32_t s = __atomic_load_n(seen, __ATOMIC_RELAXED);
    if (s != epoch && __atomic_compare_exchange_n(seen, &s, epoch, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        lull_trace_slots(obj, fn, ctx);
}

#endif
