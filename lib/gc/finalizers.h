/* finalizers.h — running queued finalizers (the queue: trace/finalize.h). */
#ifndef LULL_FINALIZERS_H
#define LULL_FINALIZERS_H

#include <stdint.h>

#include "trace/finalize.h"

/* lull_shutdown, before the attached-threads check: runs the queue out
 * (finalizers=auto) and joins the finalizer thread; then frees the table
 * and what is left queued. */
void lull_finalize_stop(void);
/* fork() child (gc lock held): the finalizer thread does not exist here;
 * one is started again when there is work. */
void lull_finalize_after_fork_child(void);
/* After a pause that queued finalizers (world running, gc lock held): wake
 * the finalizer thread (finalizers=auto), starting it if needed. */
void lull_finalize_wake(void);
/* Finalizers run since lull_init (lull_stats), and its reset (lull_init). */
uint64_t lull_finalizers_run_total(void);
void lull_finalizers_reset(void);

#endif
