/* threads.h — attaching and detaching threads (the records and their
 * registry: base/registry.h). */
#ifndef LULL_THREADS_H
#define LULL_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/registry.h"

void lull_threads_init(void);   /* once per lull_init */
int  lull_threads_attach(void); /* 0, -ENOMEM */
void lull_threads_detach(void);
/* Finish the detaches of threads that detached while the gc lock was held
 * elsewhere (registry.h: parked records); gc lock held. A load when there
 * is none. */
void lull_threads_finish_parked(void);
/* Whether a parked record waits for it (any thread, no lock: a hint). */
bool lull_threads_parked_pending(void);

/* In the child of fork(), gc lock held: only the forking thread exists;
 * forget every other thread (their stacks are no longer roots). */
void lull_threads_after_fork_child(void);

/* Bytes allocated by every thread since lull_init, attached or gone
 * (takes the gc lock; _locked: the caller holds it). */
uint64_t lull_threads_allocated_bytes(void);
uint64_t lull_threads_allocated_bytes_locked(void);
/* Allocations outside TLABs and those that took the gc lock, by every
 * thread since lull_init (lull_stats.alloc_outside_tlab, alloc_locked);
 * _locked: the caller holds the gc lock. */
void lull_threads_alloc_counts(uint64_t *outside_tlab, uint64_t *locked);
void lull_threads_alloc_counts_locked(uint64_t *outside_tlab, uint64_t *locked);

#endif
