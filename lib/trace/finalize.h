/* finalize.h — finalizers (lull.h): the table of registered objects, the
 * queue of objects found unreachable, and the thread that runs them.
 *
 * A collection, after its trace (world stopped), asks fate (handles.h) of
 * each registered object it is responsible for: a minor, of those in the
 * nursery or young large objects; a major, of all. Dead ones are kept
 * (keep: forwarded or marked, as a root would be, and the trace drained
 * again by the caller), leave the table and join the queue. The queue's
 * objects are roots (lull_roots_scan) until a runner takes one, under the
 * gc lock, into its own (conservatively scanned) frame.
 *
 * Why not a liburcu wfcqueue for the queue: its entries are roots that
 * every pause must visit (and update: nursery objects may still move),
 * and a wfcqueue cannot be walked while a stopped thread may be inside a
 * dequeue. The collector fills it with the world stopped and the gc lock
 * held; runners take from it under the gc lock: a plain list is all that
 * needs. */
#ifndef LULL_FINALIZE_H
#define LULL_FINALIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/handles.h"
#include "trace/roots.h"

void lull_finalize_init(void);

/* The queued objects as precise roots (world stopped). */
void lull_finalize_scan_roots(lull_slot_fn precise, void *ctx);

/* After a trace (world stopped): the registered objects that fate finds
 * dead are kept through keep(&obj, ctx) and queued; those it finds moved
 * are followed. young_only: only objects in the nursery or young large
 * objects (a minor). Returns how many were queued: if any, the caller
 * drains its trace again. */
uint64_t lull_finalize_collect(lull_fate_fn fate, lull_slot_fn keep, void *ctx, bool young_only);
/* The end of a minor (world stopped): forget, as young, the objects that
 * are no longer young. */
void lull_finalize_end_minor(void);
/* Queued since the last wake (gc lock held). */
bool lull_finalize_pending_wake(void);

/* The queue's consumers (gc/finalizers.c). take: the oldest queued entry,
 * removed (takes the gc lock); false when the queue is empty. */
bool lull_finalize_take(void **obj, lull_finalizer_fn *fn, void **data);
void lull_finalize_woken(void);                     /* a wake was sent (gc lock held) */
uint64_t lull_finalize_queued_total(void);          /* finalizers queued since lull_init */
void lull_finalize_free_all(void);                  /* lull_shutdown: forget every entry */
void lull_finalize_queue_after_fork_child(void);    /* the child wakes for what is queued */


#endif
