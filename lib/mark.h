/* mark.h — marking with the tracer (trace.h): atomic mark bits, work
 * sharing between markers, termination.
 *
 * Tri-colour: white = mark bit clear; grey = mark bit set and on some
 * tracer's grey stack or in the shared pool (or lost to an overflow, see
 * trace.h); black = mark bit set and scanned. Marking only ever makes white
 * objects grey and grey ones black; when every stack and the shared pool
 * are empty and no overflow is pending, every object reachable from the
 * roots is black.
 *
 * Roots are greyed by the thread that stopped the world, into its own
 * tracer. The drain then runs on up to mark-workers markers at once: that
 * thread and the worker threads (workers.c), each with its own tracer,
 * sharing grey sections through the shared pool. Mark bits are set with
 * test-then-fetch-or, so an object is pushed by exactly one marker. With
 * mark-workers=1 the drain is the serial collector's, unchanged. */
#ifndef LULL_MARK_H
#define LULL_MARK_H

#include <stdbool.h>
#include <stdint.h>

#include "trace.h"

void lull_mark_init(unsigned long stack_limit_entries);
void lull_mark_fini(void);

/* Grey every object that a word in [lo, hi) points into (interior too);
 * ctx is the tracer. A lull_range_fn (roots.h). */
void lull_mark_conservative(uintptr_t lo, uintptr_t hi, void *ctx);
/* Grey the object *slot refers to (a reference or NULL); ctx is the
 * tracer. A lull_slot_fn (roots.h). */
void lull_mark_precise_slot(void **slot, void *ctx);
/* At the start of a mark (world stopped, checked builds: LULL_CHECKED):
 * abort, naming the first one, unless every mark bit of the heap is clear.
 * A bit left set would make its object read as already marked: never
 * scanned, so whatever only it reaches would be freed. */
void lull_mark_assert_all_clear(void);
/* Blacken until nothing is grey, with every marker (world stopped; tr is
 * the stopping thread's tracer, holding the greyed roots). */
void lull_mark_drain(lull_tracer *tr);
/* How many times the last drain had to recover from an overflow. */
unsigned long lull_mark_overflows(void);
/* Objects the last drain blackened, and how many of them the stopping
 * thread did (the rest: workers). */
void lull_mark_last_work(uint64_t *total, uint64_t *by_stopper);

/* LULL_GC_DEBUG=verify-parallel (world stopped). Call save before the
 * drain, after the roots are greyed; check after the parallel drain: it
 * re-marks serially from the saved root marks into the bitmap and aborts
 * with the first object the two marks disagree on. */
void lull_mark_verify_parallel_save(void);
void lull_mark_verify_parallel_check(lull_tracer *tr);

#endif
