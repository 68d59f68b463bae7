/* nursery.h — the nursery space: its range, TLABs and fragments, the
 * nursery log that makes it walkable, the aging space, and the sizes the
 * policy sets. The minor collection that empties it is trace/minor.h.
 *
 * The nursery is an aligned power-of-two run of blocks at the start of the
 * heap's range (block state NURSERY). Threads bump-allocate small objects
 * from TLABs cut from its free fragments (lull.h has the inline fast path);
 * a TLAB is zeroed when it is handed out.
 *
 * Walking: every range a TLAB, a pinned survivor or an aged copy occupies
 * is in the nursery's log; inside a logged range memory is either an
 * object (non-zero header) or zero, so a walk from the range's start finds
 * every object, and an interior address finds its object through a binary
 * search of the (sorted) log and a walk of one range.
 *
 * Aging (promotion-age=2 or auto, SGen's split nursery): the nursery's
 * range is twice nursery-size. TLABs are cut below the limit the policy
 * sets; the free space the last minor found above it is the aging space,
 * handed to a minor's tracers in chunks (lull_nursery_age_chunk) that the
 * next rebuild logs as it logs pinned objects. A map with an entry per
 * 512 bytes of the range records which minor took each chunk, so that a
 * copy made by this minor is told from an object still to be copied
 * (lull_nursery_to_space).
 *
 * Locking: a TLAB refill takes only the nursery lock (nursery.c), inside
 * a critical region, and zeroes its TLAB after it; the gc lock is needed
 * only to collect when the nursery is exhausted. Everything else runs with
 * the gc lock held (resizes, which take the nursery lock too; room;
 * degraded mode) or the world stopped (a minor, a major's pauses); the
 * exceptions say so. */
#ifndef LULL_NURSERY_H
#define LULL_NURSERY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "space/heap.h"

struct lull_thread;

#define LULL_TLAB_SIZE        ((size_t)8 << 10)
/* The TLAB a medium object's refill cuts (objects over
 * LULL__TLAB_MAX_OBJECT and up to LULL_MAX_SMALL live in the nursery too,
 * as in SGen, and bump the TLAB out of line): one nursery lock per batch
 * of them, as a major-heap free list's refill would take the gc lock. */
#define LULL_TLAB_MEDIUM      ((size_t)64 << 10)

/* Header tag bits, set only during a minor collection. */
#define LULL_HDR_FORWARDED ((uintptr_t)1)
#define LULL_HDR_PINNED    ((uintptr_t)2)

/* The aging map's granule: a to-space chunk is aligned to it. */
#define LULL_AGE_CHUNK_SHIFT 9

/* The nursery's range (global): set by lull_init, fixed until
 * lull_shutdown. The rest of its state is nursery_g in nursery.c. */
extern uintptr_t lull_nursery_start, lull_nursery_end;

static inline bool lull_in_nursery(uintptr_t a)
{
    return a - lull_nursery_start < lull_nursery_end - lull_nursery_start;
}

/* Bytes an object occupies in the nursery (its size rounded to 16). */
static inline size_t lull_object_size(uintptr_t obj, const lull_type *t)
{
    size_t b = t->size;
    if (t->elem_size)
        b += ((const size_t *)obj)[1] * t->elem_size;
    return (b + LULL_GRANULE - 1) & ~(LULL_GRANULE - 1);
}

/* The bytes of the nursery object at p whose header is h, also when it has
 * been forwarded (the copy has the type and the length). */
static inline size_t lull_nursery_object_size(uintptr_t p, uintptr_t h)
{
    if (h & LULL_HDR_FORWARDED) {
        uintptr_t c = h & ~LULL_HDR_TAG_MASK;
        return lull_object_size(c, lull_header_type(*(uintptr_t *)c));
    }
    return lull_object_size(p, lull_header_type(h));
}

/* The one walk of a logged range [*p, end): skips zero granules; true with
 * the next object in *obj and its bytes in *size (and *p past it), false
 * once *p reaches end. */
static inline bool lull_nursery_walk(uintptr_t *p, uintptr_t end, uintptr_t *obj, size_t *size)
{
    for (uintptr_t q = *p; q < end; q += LULL_GRANULE) {
        uintptr_t h = *(uintptr_t *)q;
        if (h) {
            *obj = q;
            *size = lull_nursery_object_size(q, h);
            *p = q + *size;
            return true;
        }
    }
    *p = end;
    return false;
}

/* The minor in progress as its tracers read it, without a call: its number
 * (never 0), the aging space's lower bound, and the aging map (one entry
 * per 2^LULL_AGE_CHUNK_SHIFT bytes of the range: the number of the minor
 * that took that chunk). Written by lull_nursery_minor_begin/_end (world
 * stopped), read-only while the tracers copy. */
typedef struct lull_nursery_cycle {
    uint32_t epoch;
    uintptr_t age_lo;
    _Atomic uint32_t *chunk_epoch;
} lull_nursery_cycle;
extern lull_nursery_cycle lull_nursery_cycle_g;

/* Whether v lies in a chunk of this minor's to-space: a copy this minor
 * made (or a tracer is making). Read before the object's header, which a
 * copy gets last. Any tracer, during a minor that ages. */
static inline bool lull_nursery_to_space(uintptr_t v)
{
    return v >= lull_nursery_cycle_g.age_lo &&
           atomic_load_explicit(
               &lull_nursery_cycle_g.chunk_epoch[(v - lull_nursery_start) >> LULL_AGE_CHUNK_SHIFT],
               memory_order_relaxed) == lull_nursery_cycle_g.epoch;
}

/* At lull_init, after the block space: take the nursery's blocks, `size`
 * bytes, of which TLABs are cut from at most the first `ceiling`
 * (nursery-size); the rest is the aging space (promotion-age=2 or auto). */
int  lull_nursery_init(size_t size, size_t ceiling);
void lull_nursery_fini(void);

/* A TLAB of at least `need` bytes (LULL_TLAB_SIZE, or LULL_TLAB_MEDIUM
 * for a medium object, if a fragment has them) for the calling thread t,
 * replacing its current one; zeroed. Any lock or none (it takes the
 * nursery lock, inside a critical region of its own). false: the nursery
 * has no fragment that large (a minor is needed: the caller takes the gc
 * lock). */
bool lull_nursery_refill(struct lull_thread *t, size_t need);
/* fork(): the forking thread takes the nursery lock after the gc and
 * registry locks; both processes release it. */
void lull_nursery_lock_for_fork(void);
void lull_nursery_unlock_after_fork(void);
/* The bytes TLAB refills can still hand out before the next minor, each
 * fragment counted less `need` (a request that does not fit its tail;
 * gc lock held). TLABs already handed out are not counted. */
size_t lull_nursery_room(size_t need);
/* Degraded mode (alloc.c): a refill failed right after the minor a full
 * nursery asked for, so what is in the nursery is pinned. The next
 * nursery-size bytes of small objects go to the major heap without a minor
 * (lull_nursery_degrade starts it and logs it; lull_nursery_degraded_take
 * says whether it holds, counting `bytes` against it). A minor ends it. */
void lull_nursery_degrade(void);
bool lull_nursery_degraded_take(size_t bytes);
/* Give up thread t's TLAB: detach, fork (gc lock held; the refill, its
 * own thread's, holds the nursery lock). */
void lull_nursery_retire_tlab(struct lull_thread *t);

/* ---- what the policy and the log read ---- */

/* The bytes handed out in TLABs since the last minor (read before it). */
uint64_t lull_nursery_handed(void);
/* The room TLABs are cut from (without the gc lock: atomic), and the
 * largest it may be, nursery-size. */
size_t   lull_nursery_size(void);
size_t   lull_nursery_ceiling(void);
/* The bytes the last minor left in the nursery, pinned. */
uint64_t lull_nursery_kept(void);
/* A new size (policy.c): rounded down to a TLAB, within [one TLAB,
 * nursery-size]. The limit TLABs are cut below lies that far past the
 * start plus what the last minor left pinned below it (at most the
 * ceiling). A shrink holds from the next TLAB; so does a growth with
 * promotion-age=1 (the free space beyond the limit is kept for it), with
 * aging from the next minor's rebuild. */
void     lull_nursery_resize(size_t bytes);

/* What the last minor did (trace/minor.c records it here at its end, for
 * the policy, the statistics and the log). */
typedef struct lull_nursery_minor_stats {
    uint64_t promoted_by_workers;   /* bytes promoted by tracers other than the stopping thread */
    uint64_t large_freed;           /* bytes of young large objects freed (heap.h) */
    uint64_t trace_ns;              /* the copying phase: roots, cards, drain */
    uint64_t cards;                 /* dirty cards scanned */
    uint64_t cards_young;           /* of those, the ones that held a young reference */
    uint64_t aged;                  /* bytes copied into the aging space */
} lull_nursery_minor_stats;
void     lull_nursery_note_minor(const lull_nursery_minor_stats *s);
uint64_t lull_nursery_promoted_by_workers(void);
uint64_t lull_nursery_large_freed(void);
uint64_t lull_nursery_trace_ns(void);
/* The dirty cards the last minor scanned, and how many of them held a
 * reference into the nursery or to a young large object: the rest were
 * dirtied by a store whose slot was overwritten since. */
uint64_t lull_nursery_cards_scanned(void);
uint64_t lull_nursery_cards_young(void);
uint64_t lull_nursery_aged(void);

/* A minor since the last major could not copy an object for want of a
 * block (it stayed, pinned): the heap is full, and another minor before a
 * major frees some would pin the nursery again (alloc.c). Set by any
 * tracer (note), cleared by lull_nursery_sweep. */
void lull_nursery_note_promotion_failed(void);
bool lull_nursery_promotion_failed(void);

/* ---- walking and finding ---- */

/* The object containing a (any interior address when `interior`, else
 * only its first byte), or 0. The log is sorted while the world is
 * stopped, so any number of threads may look up at once then. */
uintptr_t lull_nursery_find(uintptr_t a, bool interior);
/* a[0, n): addresses sorted ascending. Replaced in place by the distinct
 * objects they point into (interior), ascending; returns their number. */
size_t lull_nursery_objects_at(uintptr_t *a, size_t n);
/* Every object in the nursery (after a minor or lull_nursery_sync_tlabs),
 * in no particular order. */
void lull_nursery_each_object(void (*fn)(uintptr_t obj, void *ctx), void *ctx);
/* A pause that is not a minor: make every active TLAB's logged range end
 * where its thread's allocation does, so that the walks see every object
 * allocated so far. */
void lull_nursery_sync_tlabs(void);
/* The same walk shared by several threads through *next (start at 0):
 * fn(obj, ctx) on every object of the logged ranges this caller claims.
 * Returns the objects it visited, and adds their bytes to *bytes. */
size_t lull_nursery_each_object_part(atomic_size_t *next, void (*fn)(uintptr_t obj, void *ctx), void *ctx,
                                     uint64_t *bytes);
/* LULL_GC_DEBUG=verify-nursery: the log is sorted, disjoint, inside the
 * nursery, and every thread's TLAB entry ends at its allocation pointer. */
void lull_nursery_verify_log(void);

/* ---- the minor's use of the space (trace/minor.c; world stopped) ---- */

/* A minor begins: ends degraded mode, numbers the minor
 * (lull_nursery_cycle_g.epoch; a wrap clears every block's minor_seen and
 * the aging map), empties the list of aged chunks, syncs the TLABs and
 * sorts the log. */
void lull_nursery_minor_begin(void);
/* A to-space chunk of at least `size` bytes, cut from the aging space at
 * chunk boundaries and stamped with this minor's number: [*start, *end).
 * false: the aging space has no such room. One caller at a time (the
 * minor's tracers hold their promotion lock). */
bool lull_nursery_age_chunk(size_t size, uintptr_t *start, uintptr_t *end);
/* The used part [start, end) of a to-space chunk: kept, and logged by the
 * rebuild (any tracer). */
void lull_nursery_age_keep(uintptr_t start, uintptr_t end);
/* A minor ends: pinned[0, n) (sorted, distinct) are the objects that stay
 * where they are; their PINNED tags are cleared, their bytes are what the
 * minor kept. Pinned objects, aged chunks and TLAB tails stay; the rest
 * becomes fragments (below the limit) and aging space (above it); the log
 * is rebuilt, sorted; the count of bytes handed out starts again. */
void lull_nursery_minor_end(const uintptr_t *pinned, size_t n);
/* After a major's mark: forget a promotion failure, and if the mark marked
 * the nursery (a synchronous major, whose minor left only pinned objects
 * there), zero the dead and clear the survivors' mark bits. Returns the
 * survivors' bytes (0 when unmarked). */
uint64_t lull_nursery_sweep(bool marked);

#endif
