/* heap.h — the heap's address range and what every block in it is.
 *
 * The whole heap lives in one reserved range [start, start + reserve):
 * "is this word a heap pointer?" is a subtraction and a compare, a card
 * index is (addr - start) >> 9, a block index (addr - start) >> 14.
 * Blocks [0, frontier) have been committed; beyond is PROT_NONE.
 *
 * Every 16 KiB block has a descriptor in a side array (never inside the
 * block, so object memory and metadata cannot clobber each other):
 *
 *   UNUSED      beyond the frontier, or never handed out
 *   FREE        part of a free run in the block space (blocks.c): a
 *               dirty run's memory is committed and holds old bytes, a
 *               clean run's reads as zero (released, or never touched)
 *   EMPTY       a small-object block with no live object, kept committed
 *               for reuse by any size class (major.c)
 *   SMALL       slots of one size class; a slot whose word 0 is 0 is free,
 *               any other value is the header of an allocated object
 *   LARGE_HEAD  first block of a large object (los.c)
 *   LARGE_TAIL  another block of a large object; run_head finds the head
 *   RELEASING   freed during a pause, waiting to join the free runs once
 *               the world runs again; or on its way back to the OS
 *               (blocks.c)
 *   NURSERY     part of the nursery (nursery.h): objects are found through
 *               the nursery's log, not through the descriptor
 *
 * Transitions happen with the gc lock held (base/gclock.h), never elsewhere.
 *
 * Mark bits live in a side bitmap, one bit per 16-byte granule, so small
 * and large objects are marked the same way and a block's bits are cleared
 * with one memset. Outside a collection every mark bit is clear. */
#ifndef LULL_HEAP_H
#define LULL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lull.h"
#include "base/registry.h"   /* LULL_MAX_CLASSES, lull_alloc_caches, lull_los_reserve */

#define LULL_BLOCK_SHIFT   14
#define LULL_BLOCK_SIZE    ((size_t)1 << LULL_BLOCK_SHIFT)
#define LULL_GRANULE_SHIFT 4
#define LULL_GRANULE       ((size_t)1 << LULL_GRANULE_SHIFT)
#define LULL_CARD_SHIFT    LULL__CARD_SHIFT
#define LULL_MAX_SMALL     8192u   /* largest size class; bigger objects are large */
#define LULL_NO_BLOCK      UINT32_MAX

_Static_assert(LULL_BLOCK_SIZE % LULL_GRANULE == 0, "blocks hold whole granules");
_Static_assert((LULL_BLOCK_SIZE >> LULL_GRANULE_SHIFT) % 64 == 0,
               "a block's mark bits are whole bitmap words (lull_mark_clear_blocks)");
_Static_assert(LULL_BLOCK_SIZE % ((size_t)1 << LULL__CARD_SHIFT) == 0, "blocks hold whole cards");
_Static_assert(LULL_MAX_SMALL <= LULL_BLOCK_SIZE / 2, "a small-object block holds at least two slots");

/* Header word 0: the type pointer; low bits are reserved for the collector.
 * FORWARDED (1) and PINNED (2) (nursery.h) are set during a minor on nursery
 * objects, and during an evacuating major on objects of its evacuated
 * blocks (mark.c), and are gone when that pause ends, but on the forwarded
 * originals it leaves dead for the sweep. NOMOVE (4) is set for good on an
 * object of lull_alloc_pinned: no collection may move it (alloc.c). */
#define LULL_HDR_TAG_MASK  ((uintptr_t)7)
#define LULL_HDR_NOMOVE    ((uintptr_t)4)

enum lull_block_state {
    LULL_BLOCK_UNUSED = 0,
    LULL_BLOCK_FREE,
    LULL_BLOCK_EMPTY,
    LULL_BLOCK_SMALL,
    LULL_BLOCK_LARGE_HEAD,
    LULL_BLOCK_LARGE_TAIL,
    LULL_BLOCK_RELEASING,
    LULL_BLOCK_NURSERY,
    LULL_BLOCK_RESERVED,   /* a thread's large-object reserve, not yet carved (los.c) */
};

typedef struct lull_block {
    uint8_t  state;        /* enum lull_block_state */
    uint8_t  size_class;   /* SMALL */
    uint8_t  has_refs;     /* SMALL: objects may hold references */
    uint8_t  sweep_pending;   /* SMALL: marked by the last major, not yet swept
                                 (major.c); objects without a mark bit are dead */
    union {
        uint32_t run_len;  /* FREE head, LARGE_HEAD: blocks in the run */
        uint32_t live;     /* SMALL: its objects the last major marked, or all its
                              slots once its free list went to a cache since: an
                              upper bound of its occupancy (major.c, evacuation) */
    };
    uint32_t run_head;     /* FREE last block, LARGE_TAIL: index of the head */
    uint32_t next, prev;   /* FREE head: free-run list; SMALL/EMPTY: block lists */
    uint16_t nfree;        /* SMALL: slots on free_list (at most 1024) */
    union {
        uint8_t evacuating;   /* SMALL: the running synchronous major copies this
                                 block's movable objects out (major.c, mark.c);
                                 set in its pause, cleared by its sweep_begin */
        uint8_t mark_holds;   /* LARGE_HEAD, young: a concurrent mark's initial
                                 pause left it to the background markers, who
                                 scan it in slices (mark.c); set there, cleared
                                 by lull_los_alloc */
    };
    uint8_t  dirty;        /* FREE: the run's memory may be resident and non-zero */
    union {
        uint32_t age;      /* EMPTY: collections spent empty */
        uint32_t young;    /* LARGE_HEAD: nonzero while the object is young
                              (allocated since the last minor, los.c); atomic */
    };
    uint32_t minor_seen;   /* LARGE_HEAD: the last minor that visited the object
                              whole (its type has a trace function); atomic */
    union {
        void    *free_list;   /* SMALL: first free slot (word 1 links them) */
        uint64_t freed_ns;    /* FREE dirty head: when it was freed (blocks.c) */
    };
    union {
        size_t   large_size;  /* LARGE_HEAD: object bytes */
        struct {
            uint32_t age_next, age_prev;   /* FREE dirty head: the age list (blocks.c);
                                              RELEASING on its way to the OS: a releaser's own chain */
        };
    };
} lull_block;
_Static_assert(sizeof(lull_block) == 48, "a block descriptor stays 48 bytes");
_Static_assert(LULL_BLOCK_SIZE / LULL_GRANULE <= UINT16_MAX, "nfree counts a block's slots in 16 bits");

typedef struct lull_heap {
    uintptr_t   start;
    size_t      reserve;      /* bytes of address space */
    uint32_t    nblocks;      /* reserve >> BLOCK_SHIFT */
    uint32_t    frontier;     /* blocks [0, frontier) are committed */
    lull_block *blocks;       /* nblocks descriptors */
    uint64_t   *mark_bits;    /* one bit per granule */
    uint8_t    *cards;        /* one byte per card */
    uint8_t    *union_cards;  /* the union (mod-union) card table: stores made
                                 while a concurrent mark runs (mark.h) */
    size_t      mark_bytes, cards_bytes, blocks_bytes;
} lull_heap;

/* The heap: one instance (global). The range and the side tables are set
 * by lull_init and fixed until lull_shutdown; frontier grows with the gc
 * lock held (blocks.c). Block descriptors are written with the gc lock
 * held (a parallel minor's promotion refills also hold the nursery's
 * promotion lock), but for those of a thread's large-object reserve,
 * which its owner carves (los.c); mark bits and cards are read and written with atomics
 * wherever several tracers run (trace/mark.c, trace/minor.c). */
extern lull_heap lull_heap_g;

/* ---- size classes (major.c; global, computed by lull_init, read-only after) ---- */
extern unsigned lull_nclasses;
extern uint32_t lull_class_size[LULL_MAX_CLASSES];
extern uint32_t lull_class_slots[LULL_MAX_CLASSES];
extern uint8_t  lull_class_of_granules[(LULL_MAX_SMALL >> LULL_GRANULE_SHIFT) + 1];

static inline unsigned lull_size_class(size_t bytes)
{
    return lull_class_of_granules[(bytes + LULL_GRANULE - 1) >> LULL_GRANULE_SHIFT];
}

/* ---- addresses ---- */
/* The frontier only grows while lull is initialised, under the gc lock;
 * threads also read it without the lock (lull_type_of, lull_array_length),
 * so it is accessed atomically (a plain mov on x86-64). */
static inline uint32_t lull_frontier(void)
{
    return __atomic_load_n(&lull_heap_g.frontier, __ATOMIC_RELAXED);
}
static inline bool lull_in_committed(uintptr_t a)
{
    return a - lull_heap_g.start < ((size_t)lull_frontier() << LULL_BLOCK_SHIFT);
}
static inline uint32_t lull_block_index(uintptr_t a)
{
    return (uint32_t)((a - lull_heap_g.start) >> LULL_BLOCK_SHIFT);
}
static inline uintptr_t lull_block_addr(uint32_t idx)
{
    return lull_heap_g.start + ((uintptr_t)idx << LULL_BLOCK_SHIFT);
}
static inline lull_block *lull_block_of(uintptr_t a)
{
    return &lull_heap_g.blocks[lull_block_index(a)];
}

/* A block's state is written with release, after every field its new
 * state gives meaning to (size_class and has_refs of SMALL, run_len and
 * large_size of LARGE_HEAD, run_head of LARGE_TAIL), so that the one
 * reader that holds no lock, a concurrent mark's preclean (mark.c), reads
 * the state with acquire and then those fields as they were published.
 * While a mark runs, a block that holds objects is not swept, freed or
 * evacuated until the final pause; other blocks go between the states
 * that hold none (FREE, EMPTY, RELEASING, RESERVED) or are formatted
 * (SMALL, a large object's run), so a state read once stays true for the
 * rescan. The one writer without the gc lock is a thread carving its
 * large-object reserve (los.c): RESERVED blocks become a large object's
 * run; whoever may read those states while the world runs (a walk of
 * the whole heap, a free run's merge with its neighbours) reads them
 * with acquire. */
/* The head block of the large object whose run holds block bi, whose
 * state (read by the caller) is LARGE_HEAD or LARGE_TAIL. */
static inline uint32_t lull_large_head(uint32_t bi, unsigned state)
{
    return state == LULL_BLOCK_LARGE_HEAD ? bi : lull_heap_g.blocks[bi].run_head;
}

static inline void lull_block_set_state(lull_block *b, enum lull_block_state s)
{
    __atomic_store_n(&b->state, (uint8_t)s, __ATOMIC_RELEASE);
}
static inline unsigned lull_block_state_acquire(const lull_block *b)
{
    return __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);
}

/* ---- cards ----
 * Two tables of one byte per 128-byte card: the card table, the minors'
 * remembered set (the barrier marks a card there when it stores a young
 * reference; a minor clears what it scans and marks again the card of a
 * slot that still points into the nursery; a mark marks the card of every
 * old slot it finds pointing into the nursery), and the union table, the
 * concurrent mark's (mark.h). A card is clean (0) or dirty (1). */
#define LULL_CARD_CLEAN 0
#define LULL_CARD_DIRTY 1
/* Mark a card of the card table for the minors (looked at first: most are
 * dirty already, and a store would pull the line from other cores). */
static inline void lull_card_set_young(uint8_t *card)
{
    if (__atomic_load_n(card, __ATOMIC_RELAXED) == LULL_CARD_CLEAN)
        __atomic_store_n(card, LULL_CARD_DIRTY, __ATOMIC_RELAXED);
}

#define LULL_CARDS_PER_BLOCK (LULL_BLOCK_SIZE >> LULL_CARD_SHIFT)
/* Whether every card of a block is clean, in either table: `cards` is the
 * block's first card. No early exit: with the world stopped (racing
 * false) the compiler makes it a few vector ORs; a reader racing with the
 * barrier's stores (the preclean) reads with relaxed atomics. */
static inline bool lull_cards_clean(const uint8_t *cards, bool racing)
{
    const uint64_t *w = (const uint64_t *)cards;
    uint64_t any = 0;
    if (racing)
        for (size_t k = 0; k < LULL_CARDS_PER_BLOCK / 8; k++)
            any |= __atomic_load_n(&w[k], __ATOMIC_RELAXED);
    else
        for (size_t k = 0; k < LULL_CARDS_PER_BLOCK / 8; k++)
            any |= w[k];
    return any == 0;
}

/* ---- the concurrent mark (mark.c) ---- */
/* True from a concurrent major's initial pause to its final pause; changes
 * only with the world stopped, so a thread inside a critical region or a
 * pause reads one value throughout. While it is true the barrier marks
 * every store's card in the union table (mark.h). */
static inline bool lull_marking(void)
{
    return __atomic_load_n(&lull__barrier.marking, __ATOMIC_RELAXED) != 0;   /* the barrier's own flag (lull.h) */
}

/* ---- mark bits ---- */
static inline size_t lull_granule_of(uintptr_t a)
{
    return (a - lull_heap_g.start) >> LULL_GRANULE_SHIFT;
}
/* Mark bits are read and set with atomics: several markers may set bits
 * of one word at once (mark.c), and verifiers read them meanwhile. */
static inline bool lull_is_marked(uintptr_t obj)
{
    size_t g = lull_granule_of(obj);
    return (__atomic_load_n(&lull_heap_g.mark_bits[g >> 6], __ATOMIC_RELAXED) >> (g & 63)) & 1;
}
/* Set obj's mark bit; true if this call set it. Test first, then fetch-or:
 * most calls find the bit already set and cost no locked instruction.
 * Release: a background marker sets the bit after reading the reference
 * with acquire, and the preclean on another worker reads only objects
 * whose bit it reads with acquire (lull_is_marked_acquire), so the
 * object's initialised contents are visible to it (free on x86-64: a
 * locked instruction either way). */
static inline bool lull_mark_set(uintptr_t obj)
{
    size_t g = lull_granule_of(obj);
    uint64_t bit = (uint64_t)1 << (g & 63), *w = &lull_heap_g.mark_bits[g >> 6];
    if (__atomic_load_n(w, __ATOMIC_RELAXED) & bit)
        return false;
    return !(__atomic_fetch_or(w, bit, __ATOMIC_RELEASE) & bit);
}
/* A marker that reads only marked objects while the program allocates
 * (mark.c's card rescans) reads the bits with acquire. */
static inline bool lull_is_marked_acquire(uintptr_t obj)
{
    size_t g = lull_granule_of(obj);
    return (__atomic_load_n(&lull_heap_g.mark_bits[g >> 6], __ATOMIC_ACQUIRE) >> (g & 63)) & 1;
}
/* The same for a marker that knows no other thread marks now (one
 * marker, world stopped): no locked instruction. */
static inline bool lull_mark_set_single(uintptr_t obj)
{
    size_t g = lull_granule_of(obj);
    uint64_t bit = (uint64_t)1 << (g & 63), *w = &lull_heap_g.mark_bits[g >> 6];
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    if (v & bit)
        return false;
    __atomic_store_n(w, v | bit, __ATOMIC_RELAXED);
    return true;
}
/* Clear the mark bits of blocks [idx, idx + n). */
void lull_mark_clear_blocks(uint32_t idx, uint32_t n);

/* Allocate black (mark.h): an object that enters the major heap while a
 * concurrent mark runs is marked, after its header was published, with
 * release: a card rescan that finds the bit set (acquire) then reads a
 * header, never a free-list link. */
static inline void lull_mark_allocated(uintptr_t obj)
{
    if (!lull_marking())
        return;
    size_t g = lull_granule_of(obj);
    __atomic_fetch_or(&lull_heap_g.mark_bits[g >> 6], (uint64_t)1 << (g & 63), __ATOMIC_RELEASE);
}

/* ---- objects ---- */
static inline const lull_type *lull_header_type(uintptr_t hdr)
{
    return (const lull_type *)(hdr & ~LULL_HDR_TAG_MASK);
}

uintptr_t lull_nursery_find(uintptr_t a, bool interior);

/* Could obj be the start of an object the caller holds (alloc.c)? The
 * cheap checks of lull_type_of, without aborting: inside the heap,
 * aligned, a type in word 0, a slot boundary of its block. */
bool lull_object_plausible(const void *obj);
/* Could `a`, whose first word is `hdr`, be the start of an object? (blocks.c) */
bool lull_object_start_plausible(uintptr_t a, uintptr_t hdr);

/* The object containing address `a` (any interior address when `interior`,
 * else only its first byte), or 0 when `a` is not inside an allocated
 * object. Callers hold the gc lock or have stopped the world. */
static inline uintptr_t lull_find_object(uintptr_t a, bool interior)
{
    if (!lull_in_committed(a))
        return 0;
    uint32_t idx = lull_block_index(a);
    lull_block *b = &lull_heap_g.blocks[idx];
    uintptr_t base = lull_block_addr(idx), obj;
    switch (lull_block_state_acquire(b)) {
    case LULL_BLOCK_SMALL: {
        uint32_t sz = lull_class_size[b->size_class];
        uintptr_t slot = (a - base) / sz;
        if (slot >= lull_class_slots[b->size_class])
            return 0;
        obj = base + slot * sz;
        if (!interior && obj != a)
            return 0;
        return *(const uintptr_t *)obj != 0 ? obj : 0;
    }
    case LULL_BLOCK_LARGE_TAIL:
        if (!interior)
            return 0;
        idx = lull_large_head(idx, LULL_BLOCK_LARGE_TAIL);
        base = lull_block_addr(idx);
        b = &lull_heap_g.blocks[idx];
        /* fall through */
    case LULL_BLOCK_LARGE_HEAD:
        if (!interior && a != base)
            return 0;
        return a - base < b->large_size ? base : 0;
    case LULL_BLOCK_NURSERY:
        return lull_nursery_find(a, interior);
    default:
        return 0;
    }
}

/* Does an object of type t hold references the marker must trace? */
static inline bool lull_type_has_refs(const lull_type *t)
{
    return t->trace || t->refs || (t->elem_size && t->elem_refs);
}

/* Call fn(obj, ctx) on every marked object, old generation first (address
 * order), then the nursery's; `refs_only` skips objects without
 * references. World stopped. (trace.c) */
void lull_heap_each_marked(bool refs_only, void (*fn)(uintptr_t obj, void *ctx), void *ctx);

/* Bytes the object occupies (its slot, or its large size). */
size_t lull_object_footprint(uintptr_t obj);

/* ---- the block space (blocks.c) ---- */
int      lull_space_init(size_t reserve);
/* The same, the range's start aligned to `align` (a power of two). */
int      lull_space_init_aligned(size_t reserve, size_t align);
void     lull_space_fini(void);
/* A run of n blocks whose memory reads as zero, or LULL_NO_BLOCK when the
 * max-heap-size limit or the OS refuses. Dirty free runs are reused first
 * (zeroed here), then clean ones, then the frontier grows. */
uint32_t lull_space_alloc(uint32_t n);
/* The same without the zeroing: *dirty (when not NULL) says whether the
 * run may hold old bytes (its pages are then resident: no page fault on
 * first touch); otherwise it reads as zero. */
uint32_t lull_space_alloc_any(uint32_t n, bool *dirty);
/* A run of at least n and at most `want` blocks (gc lock held), for a
 * thread's large-object reserve (los.c): the best-fitting dirty run (as
 * much of `want` as it holds), else (unless dirty_only) clean memory,
 * else LULL_NO_BLOCK as lull_space_alloc_any. *got: its length; *dirty:
 * as lull_space_alloc_any. Clean blocks are not counted as handed out
 * cold (lull_space_cold_blocks) until their taker touches them and says
 * so (lull_space_count_cold, any thread): a reserve's unused part was
 * never touched, and would raise the memory thread's warm target for
 * nothing. */
uint32_t lull_space_alloc_upto(uint32_t n, uint32_t want, bool dirty_only, uint32_t *got, bool *dirty);
void     lull_space_count_cold(uint32_t n);
/* Return a run that holds no object, as a free run of the kind it is
 * (clean if none of it was written since it was taken clean). */
void     lull_space_give_back(uint32_t idx, uint32_t n, bool dirty);
/* Return a run: it becomes a dirty free run (merged with dirty free
 * neighbours), its memory kept committed for reuse; only
 * lull_space_release_dirty gives it back to the OS. */
void     lull_space_free(uint32_t idx, uint32_t n);
/* Return a run later: it is queued (merged with a queued neighbour) and
 * lull_space_release_pending frees it. A pause queues, so that nothing it
 * frees is handed out again before the world runs. */
void     lull_space_free_deferred(uint32_t idx, uint32_t n);
void     lull_space_release_pending(void);
/* Give dirty free runs freed at or before `before_ns` (lull_now_ns) back
 * to the OS (madvise), oldest first, at most about max_blocks (0: no
 * limit), keeping at least keep_bytes of the newest. Takes the gc lock
 * (the caller must not hold it) to take the runs off the lists and to put
 * them back as clean runs, never across the madvise. Returns the blocks
 * released. */
uint64_t lull_space_release_dirty(uint64_t before_ns, uint32_t max_blocks, size_t keep_bytes);
/* Touch ahead: make clean free runs (or the frontier's next blocks) dirty,
 * their pages populated, until the dirty free runs hold target_bytes (at
 * most a quarter of the headroom) or max_blocks were warmed. The gc lock
 * as lull_space_release_dirty (populating without it). Returns the blocks
 * warmed. */
uint64_t lull_space_warm(size_t target_bytes, uint32_t max_blocks);
/* Blocks handed out cold (from clean runs or the frontier: the taker pays
 * their page faults) since lull_space_init; bytes touched ahead. */
uint64_t lull_space_cold_blocks(void);
uint64_t lull_space_warmed_bytes(void);
/* When the oldest dirty free run was freed (lull_now_ns), 0 when there is
 * none; blocks of dirty free runs now. Any thread, without the lock. */
uint64_t lull_space_oldest_dirty_ns(void);
size_t   lull_space_dirty_bytes(void);
/* Since lull_space_init: bytes given back to the OS, and madvise calls. */
void     lull_space_release_counts(uint64_t *bytes, uint64_t *calls);
/* fork() child (gc lock held): runs a releaser had taken off the lists
 * (its thread is gone) go back on them, dirty. */
void     lull_space_after_fork_child(void);
size_t   lull_space_in_use_bytes(void);
/* Bytes of blocks lull_space_alloc may still hand out before the
 * max-heap-size limit or the end of the reserve (gc lock held). */
size_t   lull_space_headroom_bytes(void);
void     lull_space_set_limit(size_t bytes);

/* ---- small objects (major.c) ---- */


void lull_major_init(void);
void lull_major_fini(void);
/* Fill `cache` with free slots of a block of that kind. false: no memory.
 * may_sweep: a block waiting for its sweep may be swept for it. Not in a
 * minor: its card scan reads the mark bits of such blocks to tell live
 * objects from dead ones, and a sweep clears them. */
bool lull_major_refill(lull_alloc_cache *cache, bool has_refs, unsigned cls, bool may_sweep);
/* Drop a thread's caches: their slots are free (word 0 is 0) and the next
 * sweep finds them. Returns the bytes handed out but never used. */
uint64_t lull_major_drop_caches(lull_alloc_caches *caches);
/* Give a detaching thread's caches back (gc lock held, outside a pause):
 * their slots go back onto their blocks' free lists for other threads at
 * once. Returns the bytes handed out but never used. */
uint64_t lull_major_return_caches(lull_alloc_caches *caches);
/* The sweep is lazy (major.c): at the end of a major every SMALL block is
 * only flagged sweep_pending and listed by size class (sweep_begin, which
 * returns the live bytes the mark found, from the mark bits); a block is
 * swept when an allocation of its class needs room, when a minor's
 * promotion may need it (sweep_for_promotion), by the background job
 * (concurrent-sweep=yes), or by sweep_all, which the next major runs
 * before it marks. Until then an unmarked object in a pending
 * block is dead: walks and card scans skip it. World stopped or gc lock
 * held for all of these. */
uint64_t lull_major_sweep_begin(void);
void lull_major_sweep_all(void);
/* Before a minor traces (world stopped): sweep pending blocks until the
 * heap has room for `bytes` of copies without sweeping, in empty blocks
 * and what max-heap-size still allows, or none is left pending. The
 * promotion path itself never sweeps: a tracer scanning a dirty card of a
 * pending block tells its dead objects by the mark bits, which a sweep
 * clears under it. Without this, a minor right after a major near
 * max-heap-size found no block, pinned the whole nursery, and every
 * allocation after it ran another minor that did the same. */
void lull_major_sweep_for_promotion(uint64_t bytes);
bool lull_major_sweep_pending(void);
/* The background sweep's steps (gc/background.c, gc lock held): sweep up
 * to n pending blocks, adding them to *swept (false: none left); whether
 * the EMPTY blocks are short of the promotion reserve. */
bool lull_major_sweep_some(unsigned n, uint64_t *swept);
bool lull_major_short_of_blocks(void);
/* Checked builds: abort unless every block is swept (a mark begins). */
void lull_major_assert_all_swept(void);
/* Blocks swept so far by the background job, and on demand. */
void lull_major_sweep_counts(uint64_t *background, uint64_t *on_demand);
/* Evacuation (major.c has the rule; mark.c copies). World stopped, at
 * the start of a synchronous major's mark, every block swept and every
 * cache dropped: choose the classes to evacuate (threshold_pct: the
 * evacuation-threshold option; 0 chooses none), flag their sparse blocks
 * `evacuating`, and return how many classes (*nblocks: blocks). The flags
 * stay until that major's sweep_begin. */
unsigned lull_major_plan_evacuation(unsigned threshold_pct, uint32_t *nblocks);
/* A free slot of (has_refs, cls) for a copy, in a block not being
 * evacuated (a fresh one, or one with free slots), from the
 * caches of marker `tracer` (its tracer id); 0 when the heap cannot grow.
 * Any marker, in parallel. undo gives back a slot whose copy lost its race. */
uintptr_t lull_major_evac_alloc(unsigned tracer, bool has_refs, unsigned cls);
void lull_major_evac_undo(unsigned tracer, bool has_refs, unsigned cls, uintptr_t slot);
/* After the mark (world stopped, one thread): drop the markers' caches. */
void lull_major_evac_end(void);
/* The bytes an evacuating major would give back, as the last major's
 * mark left the blocks (gc lock held): the free slots of the sparse
 * blocks of the classes the rule would choose. */
uint64_t lull_major_fragmented_bytes(void);
/* Collections an empty block is kept committed before it goes back. */
#define LULL_EMPTY_BLOCK_MAX_AGE 2
/* Queue EMPTY blocks that stayed unused for `min_age` collections for
 * release to the block space (lull_space_release_pending). */
void lull_major_release_empty(uint32_t min_age);
size_t lull_major_empty_bytes(void);
/* EMPTY bytes the background job keeps ready for promotion and the release
 * of long-empty blocks leaves (the policy sets it, world stopped). */
void lull_major_set_block_reserve(uint64_t bytes);
/* Blocks the background job made ready for promotion since lull_init
 * (major.c: prepare_batch). */
uint64_t lull_major_prepared_blocks(void);
/* From a background job (the mark's leader or the sweep; world running,
 * gc lock not held): prepare blocks for promotion, their pages touched, so
 * that a minor's promotion takes no page fault in its pause; until the
 * reserve is met or the job is asked to stop. */
void lull_major_prepare_for_promotion(void);
/* A pause, after it stopped the background job (collect.c): the blocks a
 * stopped job's last batch left prepared but unlinked (major.c:
 * prepare_batch) go onto the empty list, where the pause's sweep, its
 * release of empty blocks and any allocation can use them (an allocation
 * at the heap's limit needs every empty block: tests/unit/unit_prepare_stash.c).
 * gc lock held, background job stopped. */
void lull_major_link_unlinked(void);
/* Tests only: the blocks prepared but not yet on the empty list (gc lock
 * held, background job stopped or unable to take the lock). */
unsigned lull_major_unlinked_blocks(void);
/* Tests only (tests/unit/unit_prepare_stash.c): called by the background
 * job between faulting a batch in and taking the gc lock again to link it.
 * NULL in every program. */
extern void (*lull_major_test_prepared)(void);

/* Ask for the memory a scan of card c of the block at `base` reads: the
 * header of the slot that holds the card's first byte (slot_size: the
 * block's size class; 0 for a large object), and every line of the card. */
static inline void lull_prefetch_card(uintptr_t base, size_t c, uintptr_t slot_size)
{
    uintptr_t lo = base + (c << LULL_CARD_SHIFT);
    if (slot_size)
        __builtin_prefetch((const void *)(base + (lo - base) / slot_size * slot_size));
    for (uintptr_t a = lo; a < lo + ((uintptr_t)1 << LULL_CARD_SHIFT); a += 64)
        __builtin_prefetch((const void *)a);
}

/* ---- large objects (los.c) ---- */
/* A large object of `bytes` (gc lock held), or NULL when no run can be
 * had. *dirty: the run was reused and holds old bytes, which the caller
 * zeroes (its first align_up(bytes, 8)) before it writes the header,
 * inside a critical region entered before the gc lock is released, so
 * that no pause sees the object between the two; else it reads as zero. */
void     lull_los_init(void);    /* lull_init: no young large object */
void    *lull_los_alloc(size_t bytes, bool *dirty);
/* The caller of lull_los_alloc wrote the object's header (any lock). The
 * objects between the two are counted: fork's prepare handler, with the
 * gc lock held (so that none is added), waits for none to be left
 * (lull_los_wait_published), so that no child sees a run still to be
 * zeroed whose owner does not exist there. */
void     lull_los_published(void);
/* Fork's prepare handler (gc lock held): stops carving (below) and waits
 * until every large object handed out has its header; lull_los_allow_carving
 * after the fork, in both processes. */
void     lull_los_wait_published(void);
void     lull_los_allow_carving(void);

/* A thread's reserve (registry.h: lull_los_reserve). lull_los_carves:
 * is an object of `bytes` carved from a reserve (else lull_los_alloc)?
 * lull_los_carve (the owner, inside a critical region, no lock): a young
 * large object from the reserve, or NULL when the reserve is too short,
 * the young list is full or a fork is under way; *dirty, the header
 * protocol and lull_los_published as for lull_los_alloc.
 * lull_los_refill (gc lock held, the owner calling): give back what is
 * left and take a new reserve of at least the object's blocks (twice the
 * last, up to a limit), covered by the young range; false when no run
 * can be had. lull_los_reserve_return (gc lock held, the owner not inside
 * a carve: itself, detached, or stopped in a pause): give back what is
 * left; `forget` starts the next refill small again.
 * lull_los_reserve_keep (a minor, world stopped, after lull_los_end_minor
 * rebuilt the young range): the reserve stays its owner's, inside the
 * range again, and the next refill starts small. */
bool     lull_los_carves(size_t bytes);
void    *lull_los_carve(lull_los_reserve *r, size_t bytes, bool *dirty);
bool     lull_los_refill(lull_los_reserve *r, size_t bytes);
void     lull_los_reserve_return(lull_los_reserve *r, bool forget);
void     lull_los_reserve_keep(lull_los_reserve *r);
uint64_t lull_los_sweep(void);

/* Young large objects. A large object allocated since the last minor is
 * young: a minor treats it as part of the young generation rather than as
 * an old root. It survives only if the minor reaches it (from a root, a
 * dirty card, a survivor or another young large object), and is then
 * scanned: its marked cards only, which no minor clears while it is young
 * and unreached (trace/minor.c: scan_young_large); otherwise the minor frees
 * it. One no larger than the nursery stays young for LULL_LOS_YOUNG_MINORS
 * minors (scanned so at each), and the old slots that point to it keep
 * their cards dirty meanwhile, as they do for a pinned nursery object. A
 * minor inside a major's pause makes every survivor old. While a concurrent
 * mark runs, an unreached one is freed too, unless the mark holds it (it
 * marked it, or its initial pause left it to be scanned in slices:
 * mark_holds); those are made old, for the final pause's sweep. The mark
 * reads block descriptors without the gc lock (mark.c: the preclean), but
 * only while its job runs, and a minor frees runs with the job stopped: a
 * pass re-reads every descriptor after a pause, and nothing else the job
 * keeps across one (its grey objects: marked or held; the registered
 * roots' values it copied, which skip young large objects) leads into a
 * freed run. So a dead scratch array's dirty cards keep
 * nothing alive past the minor that frees it. A concurrent mark skips young
 * large objects as it skips the nursery (mark.c); a young one it marked
 * regardless is kept. */
/* `young` of a LARGE_HEAD: 0 (old), else (minors seen + 1) << 1, plus
 * LULL_LARGE_REACHED once this minor reached it. */
#define LULL_LARGE_REACHED 1u
#define LULL_LOS_YOUNG_MINORS 2u
/* At most this many are young at once (more are born old): a minor's
 * grey spill array has room for them beside the nursery's objects. */
#define LULL_LOS_MAX_YOUNG 4096u
extern uintptr_t lull_los_young_lo, lull_los_young_hi;

/* The young large object whose run holds address v, or 0. The state is
 * read with acquire: in a parallel minor, v may be a copy's address that
 * another tracer stored (relaxed) into a slot both visit, in a block that
 * tracer formatted a moment before (unit_young_large_state). */
static inline uintptr_t lull_young_large_at(uintptr_t v)
{
    if (v - lull_los_young_lo >= lull_los_young_hi - lull_los_young_lo)
        return 0;
    unsigned state = lull_block_state_acquire(lull_block_of(v));
    if (state != LULL_BLOCK_LARGE_HEAD && state != LULL_BLOCK_LARGE_TAIL)
        return 0;
    uint32_t head = lull_large_head(lull_block_index(v), state);
    const lull_block *h = &lull_heap_g.blocks[head];
    uintptr_t obj = lull_block_addr(head);
    if (!__atomic_load_n(&h->young, __ATOMIC_RELAXED) || v - obj >= h->large_size)
        return 0;
    return obj;
}

/* During a minor (any tracer): the minor reached young large object obj.
 * true for the one call that reached it first (it is then to be scanned). */
static inline bool lull_los_reach(uintptr_t obj)
{
    uint32_t *y = &lull_block_of(obj)->young;
    return !(__atomic_fetch_or(y, LULL_LARGE_REACHED, __ATOMIC_RELAXED) & LULL_LARGE_REACHED);
}

/* Does young large object obj, reached by the minor running now, stay
 * young after it (else it becomes old)? may_age: as lull_los_end_minor's. */
bool lull_los_stays_young(uintptr_t obj, bool may_age);
/* At the end of a minor (one thread): of the young large objects, those
 * not reached are freed, but for those a running concurrent mark holds
 * (above: made old); the
 * others stay young if `may_age` and they may (above), else become old.
 * Returns the bytes freed. drop_slots(obj) clears every reference slot of
 * an unreached one that a mark may hold marked (the minor's tracer walks
 * slots, the space does not). */
uint64_t lull_los_end_minor(bool may_age, void (*drop_slots)(uintptr_t obj));
/* Bytes of the large objects allocated young since the last minor (gc
 * lock held): the policy runs a minor when they fill its budget for them
 * (gc/policy.c), as it does when the nursery fills (a concurrent major's
 * final pause keeps every young one, mark.h). A young large object counts
 * in the allocation meter (meter.h) only once a minor makes it old. */
uint64_t lull_los_young_bytes(void);
/* Bytes of the pointer-free young large objects the last minor reached
 * (gc lock held): what the policy lets the next ones grow to. One that
 * holds references is not counted: every minor scans its marked cards
 * and a concurrent major's final pause all its slots, so more of them
 * would lengthen both. */
uint64_t lull_los_survived_bytes(void);
/* The young large objects (at most cap, LULL_LOS_MAX_YOUNG holds them
 * all) into out; returns how many (gc lock held or world stopped). */
size_t lull_los_young_list(uintptr_t *out, size_t cap);

/* ---- the whole heap ---- */
size_t lull_heap_bytes_held(void);

#endif
