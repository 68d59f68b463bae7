/* nursery.h — the copying nursery: TLABs, fragments, pinning, the minor
 * collection, cementing.
 *
 * The nursery is an aligned power-of-two run of blocks at the start of the
 * heap's range (block state NURSERY). Threads bump-allocate small objects
 * from TLABs cut from its free fragments (lull.h has the inline fast path);
 * a TLAB is zeroed when it is handed out.
 *
 * Walking: every range a TLAB or a pinned survivor occupies is in the
 * nursery's log; inside a logged range memory is either an object (non-zero
 * header) or zero, so a walk from the range's start finds every object, and
 * an interior address finds its object through a binary search of the
 * (sorted) log and a walk of one range.
 *
 * A minor collection (world stopped, gc lock held):
 *   1. pins every nursery object a conservative root points into (stacks,
 *      registers, conservative ranges), plus the cemented objects;
 *   2. copies every other object reachable from precise roots, marked cards
 *      of the major heap and large objects, pinned objects and the copies
 *      themselves into major blocks, leaving a forwarding pointer in the old
 *      header, and updates every reference;
 *   3. clears the scanned cards, except those whose slots still point to a
 *      pinned (not cemented) nursery object; a pinned object more than
 *      LULL_CEMENT_THRESHOLD old slots point to is cemented: it stays pinned
 *      and is a root until the next major, so its cards need not stay marked;
 *   4. turns the space between pinned objects into the fragments new TLABs
 *      are cut from, keeping each thread's unused TLAB tail for that thread
 *      (a thread stopped inside the inline fast path may still advance into
 *      it).
 * A major collection runs a minor first; its mark then marks the pinned
 * survivors too, re-marks the card of every old slot that points into the
 * nursery, and cementing starts afresh.
 *
 * Aging (promotion-age=2 or auto, SGen's split nursery): the nursery's range is
 * twice nursery-size. TLABs are cut below the size the policy sets; the
 * free space above it is the aging space. A minor copies an object that
 * lies below that boundary (allocated since the last minor) into the
 * aging space instead of the major heap, and promotes one above it (one
 * that has survived a minor already). Copies go into chunks of at most a
 * TLAB, which the rebuild logs as it logs pinned objects, so walks and
 * lookups find them as they find any nursery object. A slot can lead to
 * a copy the minor has already made (two slots to one object), so the
 * copies must be told from the objects still to be copied: a map with an
 * entry per 512 bytes of the range records which minor took each chunk
 * (to_space in nursery.c). An old slot pointing to an aged copy keeps its
 * card marked, or cements the copy, as for a pinned object (a cemented
 * copy stays pinned where it is until the next major). The minor of a
 * major's pause ages nothing: it promotes all.
 *
 * Step 2 runs on every tracer (mark-workers, workers.h): the thread that
 * stopped the world forwards the precise roots and lists the blocks with
 * marked cards; then all tracers claim that list in chunks, scan the
 * cards, and drain their grey stacks, sharing work through the tracer's
 * pools (trace.h). Races are settled per object:
 *   - forwarding is a compare-and-swap on the old header; a tracer that
 *     loses gives its copy back to its own promotion cache;
 *   - a copy's header is stored last (release), so a card scanner, which
 *     skips slots whose word 0 is zero, never reads a half-made copy;
 *   - slots, cards and the cementing table are read and written with
 *     atomics (two tracers may forward one slot: both store the same value);
 *   - each tracer promotes into its own caches, refilled under a lock;
 *   - an object pinned because the heap could not take its copy is scanned
 *     after the tracers are done, by one thread (another tracer may still
 *     be reading its body for a copy it will discard).
 * Step 1 (pinning) and 4 (rebuilding) run on the stopping thread. With
 * mark-workers=1 the stopping thread alone does it all, in the order the
 * serial collector did. */
#ifndef LULL_NURSERY_H
#define LULL_NURSERY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "space/heap.h"

struct lull_thread;

#define LULL_TLAB_SIZE        ((size_t)8 << 10)
#define LULL_CEMENT_THRESHOLD 64u

/* Header tag bits, set only during a minor collection. */
#define LULL_HDR_FORWARDED ((uintptr_t)1)
#define LULL_HDR_PINNED    ((uintptr_t)2)

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

/* At lull_init, after the block space: take the nursery's blocks, `size`
 * bytes, of which TLABs are cut from at most the first `ceiling`
 * (nursery-size); the rest is the aging space (promotion-age=2 or auto). */
int  lull_nursery_init(size_t size, size_t ceiling);
void lull_nursery_fini(void);

/* A TLAB of at least `need` bytes for thread t, replacing its current one
 * (gc lock held). false: the nursery has no fragment that large. */
bool lull_nursery_refill(struct lull_thread *t, size_t need);
/* Degraded mode (gc lock held; alloc.c). When a refill fails right after
 * the minor a full nursery asked for, that minor left no room: what is in
 * the nursery is pinned (a deep stack, a conservative root range holding
 * more young objects than nursery-size). Another minor at the next
 * allocation would pin it all again and free nothing: a program whose
 * root range held 100,000 new 64-byte objects ran a 70 ms minor at every
 * allocation. lull_nursery_degrade starts the mode: the next nursery-size
 * bytes of small objects go to the major heap without a minor (the log
 * says so). lull_nursery_degraded_take(bytes): whether the mode holds,
 * counting those bytes against it. Any minor ends it. */
void lull_nursery_degrade(void);
bool lull_nursery_degraded_take(size_t bytes);
/* Give up thread t's TLAB (gc lock held): detach, fork. */
void lull_nursery_retire_tlab(struct lull_thread *t);

/* The minor collection (world stopped, gc lock held). Returns the bytes
 * promoted into the major heap. may_age: young large objects it reaches
 * may stay young (heap.h); false for the minor of a major's pause. */
uint64_t lull_nursery_collect(bool may_age);
/* Of those, the bytes the mark workers copied (the last minor). */
uint64_t lull_nursery_promoted_by_workers(void);

/* For the pause target (policy.c, gc lock held): the bytes handed out in
 * TLABs since the last minor (read before it), the last minor's copying
 * phase in ns (after it), the size TLABs are cut from, and a new size
 * (rounded down to TLABs, within [one TLAB, nursery-size]; when it takes
 * effect: lull_nursery_resize). */
uint64_t lull_nursery_handed(void);
/* The bytes of young large objects the last minor freed (heap.h). */
uint64_t lull_nursery_large_freed(void);
uint64_t lull_nursery_trace_ns(void);
/* The dirty cards the last minor scanned (for the log), and how many of
 * them held a reference into the nursery or to a young large object when
 * it scanned them: the rest were dirtied by a store whose slot was
 * overwritten since, the cards a clean between minors could drop. */
uint64_t lull_nursery_cards_scanned(void);
uint64_t lull_nursery_cards_young(void);
size_t   lull_nursery_size(void);
/* The largest size: nursery-size. */
size_t   lull_nursery_ceiling(void);
/* The bytes the last minor copied into the aging space (promotion-age=2 or auto). */
uint64_t lull_nursery_aged(void);
/* The size (policy.c): the room TLABs are cut from, rounded down to a
 * TLAB, at most the ceiling; gc lock held. The limit TLABs are cut below
 * lies that far past the start and as much further as the objects the
 * last minor left pinned below it take (at most the ceiling):
 * lull_nursery_size is the room. A shrink holds from the next TLAB; so
 * does a growth with promotion-age=1 (the free space beyond the limit is
 * kept for it), with aging from the next minor's rebuild. */
void     lull_nursery_resize(size_t bytes);

/* A minor since the last major could not copy an object for want of a
 * block (it stayed, pinned): the heap is full, and another minor before a
 * major frees some would pin the nursery again (alloc.c). */
bool lull_nursery_promotion_failed(void);

/* After a major's mark (world stopped): forget cemented objects, and if
 * the mark marked the nursery (a synchronous major, whose minor left only
 * pinned objects there), zero the dead and clear the survivors' mark bits.
 * Returns the bytes of the survivors (pinned objects still in the nursery
 * are live data too); 0 when unmarked (a concurrent major's final pause
 * keeps the whole nursery: it was a root set, mark.h). */
uint64_t lull_nursery_after_major(bool marked);

/* Every object in the nursery (world stopped, after a minor or
 * lull_nursery_sync_tlabs), in no particular order. */
void lull_nursery_each_object(void (*fn)(uintptr_t obj, void *ctx), void *ctx);
/* A pause that is not a minor (world stopped): make every active TLAB's
 * logged range end where its thread's allocation does, so that the walks
 * above and below see every object allocated so far. */
void lull_nursery_sync_tlabs(void);
/* The final pause of a concurrent major treats the nursery as a root set
 * (mark.h): visit(slot, ctx) on every reference slot of every nursery
 * object, the work shared by every caller through *next (start at 0;
 * world stopped, after lull_nursery_sync_tlabs). Returns the objects this
 * caller visited, and adds their bytes to *bytes. */
size_t lull_nursery_scan_part(atomic_size_t *next, lull_visit_fn visit, void *ctx, uint64_t *bytes);

/* The cement table (world stopped: a minor's tracers, or one thread).
 * lull_cement_note counts one more old slot pointing to nursery object
 * obj, which stays where it is this minor, and says whether obj is (now)
 * cemented: pinned at every minor until the next major, so that the
 * slot's card may be left clean. lull_cement_new_cycle starts a minor:
 * the counts go, every cemented object stays found. lull_cement_home is
 * the entry obj's probe starts at (for tests that make entries collide). */
bool     lull_cement_note(uintptr_t obj);
bool     lull_cement_is_cemented(uintptr_t obj);
void     lull_cement_new_cycle(void);
unsigned lull_cement_home(uintptr_t obj);

/* LULL_GC_DEBUG=check-cards: every old-to-young reference has its card
 * marked (before a minor, after pinning). verify-nursery: no reference
 * points into the nursery except to a surviving object (after a minor). */
void lull_nursery_check_cards(void);
void lull_nursery_verify(void);

#endif
