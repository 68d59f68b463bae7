/* collect.h — the gc lock and the phases of a collection (the policy that
 * decides which and when is policy.h). */
#ifndef LULL_COLLECT_H
#define LULL_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"

/* The options (global): written by lull_init before any other thread can
 * see the collector, read-only until lull_shutdown. */
extern lull_config lull_cfg;

bool lull_is_initialised(void);

/* The gc lock protects the block space, the free-block lists, the thread
 * and root registries and the collection itself. Whoever stops the world
 * holds it for the whole pause, so no thread is ever stopped holding it. */
void lull_gc_lock(void);
void lull_gc_unlock(void);
/* Take it if free (a collector thread that must not wait for it). */
bool lull_gc_trylock(void);
/* The same, for a background job that takes it again and again: the
 * threads waiting for it have it first. */
bool lull_gc_trylock_after_waiters(void);
/* The lock for a background job, tried until had (the thread that holds
 * it may be stopping the job: blocking on it could deadlock); false when
 * the job is asked to stop meanwhile. Between tries the job sleeps
 * sleep_us, or yields if 0: it has the lock sooner, and keeps a core busy
 * while a mutator holds it. */
bool lull_gc_lock_background(unsigned sleep_us);
/* In the child of fork() (the forking thread holds the lock): forget the
 * parent's waiters. */
void lull_gc_lock_after_fork_child(void);

/* A full stop-the-world collection (gc lock held). */
/* What lull_collect_locked runs: LULL_GEN_NURSERY (a minor), LULL_GEN_MAJOR
 * (a synchronous major; while a concurrent mark runs, that mark's final
 * pause first), or one of the two pauses of a concurrent major. */
enum { LULL_COLLECT_MAJOR_START = 2, LULL_COLLECT_MAJOR_FINISH = 3 };
void lull_collect_locked(int what, const char *reason);
/* A synchronous major may run (allow-synchronous-major, and the switch). */
bool lull_synchronous_major_allowed(void);
/* Collections completed since lull_init (gc lock held). */
uint64_t lull_collect_count(void);

void lull_collect_init(void);

#endif
