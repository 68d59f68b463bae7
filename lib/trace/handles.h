/* handles.h — GC handles (lull.h): lock-free tables, one per kind, read by
 * the collector as roots (NORMAL, PINNED) or as weak references (WEAK,
 * WEAK_TRACK). handles.c describes the table.
 *
 * The collector's side runs with the world stopped: every thread that may
 * touch a handle (an attached thread) is stopped then, so the passes below
 * read and write slots without racing a mutator's compare-and-swap; a
 * mutator stopped between its load and its CAS fails the CAS and retries.
 *
 * Weak references during a concurrent mark need no read barrier here: the
 * mark is incremental-update (mark.h), so an object a mutator reads from a
 * weak handle while the mark runs and then keeps is in a register, a stack,
 * a root or a handle (all rescanned by the final pause; lull_handle_get
 * never leaves a thread stopped with only the slot's tagged word) or was stored
 * through lull_store (its card is rescanned); the final pause marks it
 * before the weak pass looks at the handle. An object the program read and
 * dropped again is unmarked and the handle is cleared: it was dead. */
#ifndef LULL_HANDLES_H
#define LULL_HANDLES_H

#include <stdint.h>

#include "lull.h"
#include "trace/roots.h"

void lull_handles_init(void);   /* lull_init: every table empty */
void lull_handles_fini(void);   /* lull_shutdown: the tables' memory back to the OS */

/* Roots (world stopped; roots.c calls it from lull_roots_scan): each
 * NORMAL handle's target through precise (the slot updated if the visit
 * moves it), each PINNED handle's target through conservative, as a
 * one-word range (so it is pinned where a conservative root would be).
 * Either may be NULL: skipped. */
void lull_handles_scan_roots(lull_range_fn conservative, lull_slot_fn precise, void *ctx);

/* What a collection knows of an object after its trace: its address now
 * (it may have moved), or 0 if it is dead. */
typedef uintptr_t (*lull_fate_fn)(uintptr_t obj, void *ctx);

/* The weak pass over the handles of `kind` (WEAK or WEAK_TRACK), world
 * stopped: each target becomes fate(target): followed if it moved, cleared
 * if dead. Visits only the chunks of the table that hold a handle
 * (handles.c): its cost follows the handles there are, not the most there
 * ever were. Returns the handles cleared. */
uint64_t lull_handles_weak_pass(enum lull_handle_kind kind, lull_fate_fn fate, void *ctx);

/* Slots of kind's table the collector's walks (weak passes, root scans,
 * verifiers) have read since lull_init: what tests/unit measures a pass by. */
uint64_t lull_handles_slots_read(enum lull_handle_kind kind);

/* Every non-NULL weak target (both weak kinds), read only: the
 * verifiers (world stopped). */
void lull_handles_each_weak(void (*fn)(uintptr_t target, void *ctx), void *ctx);

#endif
