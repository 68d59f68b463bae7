/* roots.h — registered roots and conservative scanning of ranges.
 * The registry is protected by the gc lock; it only changes outside pauses
 * (registration takes the lock, a pause holds it). */
#ifndef LULL_ROOTS_H
#define LULL_ROOTS_H

#include <stddef.h>
#include <stdint.h>

void lull_roots_reset(void);

typedef void (*lull_range_fn)(uintptr_t lo, uintptr_t hi, void *ctx);
typedef void (*lull_slot_fn)(void **slot, void *ctx);
/* Every registered root: conservative ranges to `conservative`, each slot
 * of a precise root to `precise` (either may be NULL: skipped); ctx is
 * passed on (the tracer, for the mark). Then the handles' (handles.h:
 * NORMAL as precise slots, PINNED as conservative words) and the objects
 * queued for finalization (precise). World stopped, one thread. */
void lull_roots_scan(lull_range_fn conservative, lull_slot_fn precise, void *ctx);
/* The stack (and registers) of every attached thread, the caller's too,
 * from where lull_stw_record_roots says each one begins. */
void lull_roots_scan_threads(lull_range_fn fn, void *ctx);

#endif
