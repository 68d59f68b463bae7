/* mark.h — marking: the grey stack and tracing objects from lull_type.
 *
 * Tri-colour: white = mark bit clear; grey = mark bit set and on the grey
 * stack (or lost to an overflow, see below); black = mark bit set and
 * scanned. Marking only ever makes white objects grey and grey ones black;
 * when the stack is empty and no overflow is pending, every object
 * reachable from the roots is black.
 *
 * The grey stack is a chain of sections of mmap'ed memory (never malloc: a
 * stopped thread may hold malloc's lock), recycled through a lock-free pool
 * so that parallel markers can share it. If no section can be had, the
 * object stays marked but unscanned and `overflow` is set; draining then
 * rescans every marked object of the heap for white children, as often as
 * needed. Nothing is lost, only time. */
#ifndef LULL_MARK_H
#define LULL_MARK_H

#include <stdbool.h>
#include <stdint.h>

void lull_mark_init(unsigned long stack_limit_entries);
void lull_mark_fini(void);

/* Grey every object that a word in [lo, hi) points into (interior too). */
void lull_mark_conservative(uintptr_t lo, uintptr_t hi);
/* Grey the object *slot refers to (a reference or NULL). */
void lull_mark_precise_slot(void **slot);
/* Blacken until nothing is grey. */
void lull_mark_drain(void);
/* How many times the last drain had to recover from an overflow. */
unsigned long lull_mark_overflows(void);

#endif
