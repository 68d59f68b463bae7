/* minor.h — the minor collection: copies the nursery's live objects out
 * (into the aging space or the major heap) and leaves the nursery space
 * (space/nursery.h) to rebuild itself around what stays pinned.
 *
 * A minor (world stopped, gc lock held):
 *   1. pins every nursery object a conservative root points into (stacks,
 *      registers, conservative ranges), plus the cemented objects
 *      (trace/cement.h);
 *   2. copies every other object reachable from precise roots, dirty
 *      cards of the major heap and of large objects, pinned objects and
 *      the copies themselves, leaving a forwarding pointer in the old
 *      header, and updates every reference;
 *   3. clears the scanned cards, except those whose slots still point to a
 *      pinned (not cemented) nursery object; a pinned object more than
 *      LULL_CEMENT_THRESHOLD old slots point to is cemented: it stays
 *      pinned and is a root until the next major, so its cards need not
 *      stay dirty;
 *   4. has the space turn what is free between pinned objects into
 *      fragments, keeping each thread's unused TLAB tail for that thread.
 * A major runs a minor first; its mark then marks the pinned survivors
 * too, re-marks the card of every old slot that points into the nursery,
 * and cementing starts afresh.
 *
 * Aging (nursery.h): an object below the aging space's bound (allocated
 * since the last minor) is copied into a to-space chunk; one above it is
 * promoted. An old slot pointing to an aged copy keeps its card dirty, or
 * cements the copy, as for a pinned object. The minor of a major's pause
 * ages nothing.
 *
 * Step 2 runs on every tracer (mark-workers, workers.h); races are settled
 * per object:
 *   - forwarding is a compare-and-swap on the old header; a tracer that
 *     loses gives its copy back to its own promotion cache;
 *   - a copy's header is stored last (release), so a card scanner, which
 *     skips slots whose word 0 is zero, never reads a half-made copy;
 *   - slots, cards and the cement table are read and written with atomics
 *     (two tracers may forward one slot: both store the same value);
 *   - each tracer promotes into its own caches, refilled under a lock;
 *   - an object pinned because the heap could not take its copy is scanned
 *     after the tracers are done, by one thread.
 * Steps 1 and 4 run on the stopping thread. With mark-workers=1 it alone
 * does it all. */
#ifndef LULL_MINOR_H
#define LULL_MINOR_H

#include <stdbool.h>
#include <stdint.h>

/* Reserve the minor's side tables, for the nursery lull_nursery_init set
 * up (lull_init), and give them back (lull_shutdown). */
int  lull_minor_init(void);
void lull_minor_fini(void);

/* Whether the policy lets minors age (promotion-age, and auto's
 * decision): set whenever it changes (gc lock held). */
void lull_minor_set_aging(bool on);

/* The minor collection. Returns the bytes promoted into the major heap.
 * may_age: it may age objects (as the policy allows) and young large
 * objects it reaches may stay young (heap.h); false for the minor of a
 * major's pause. Its figures: lull_nursery_note_minor. */
uint64_t lull_nursery_collect(bool may_age);

/* After a major's mark (world stopped): forget cemented objects, and sweep
 * the nursery (lull_nursery_sweep: marked says whether the mark marked
 * it). Returns the bytes of the nursery's survivors. */
uint64_t lull_nursery_after_major(bool marked);

/* LULL_GC_DEBUG=check-cards: every old-to-young reference has its card
 * marked (before a minor, after pinning). verify-nursery: no reference
 * points into the nursery except to a surviving object (after a minor). */
void lull_minor_check_cards(void);
void lull_minor_verify(void);

#endif
