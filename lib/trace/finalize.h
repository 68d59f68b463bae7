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
/* lull_shutdown, before the attached-threads check: runs the queue out
 * (finalizers=auto) and joins the finalizer thread; then frees the table
 * and what is left queued. */
void lull_finalize_stop(void);
/* fork() child (gc lock held): the finalizer thread does not exist here;
 * one is started again when there is work. */
void lull_finalize_after_fork_child(void);

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
/* After a pause that queued finalizers (world running, gc lock held): wake
 * the finalizer thread (finalizers=auto), starting it if needed. */
void lull_finalize_wake(void);
/* Queued since the last wake (gc lock held). */
bool lull_finalize_pending_wake(void);

#endif
