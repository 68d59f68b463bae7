/* collect.h — the gc lock and the phases of a collection (the policy that
 * decides which and when is policy.h). */
#ifndef LULL_COLLECT_H
#define LULL_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* The options (global): written by lull_init before any other thread can
 * see the collector, read-only until lull_shutdown. */
extern lull_config lull_cfg;

bool lull_is_initialised(void);

/* The gc lock protects the block space, the free-block lists, the thread
 * and root registries and the collection itself. Whoever stops the world
 * holds it for the whole pause, so no thread is ever stopped holding it. */
void lull_gc_lock(void);
void lull_gc_unlock(void);

/* A full stop-the-world collection (gc lock held). */
void lull_collect_locked(int generation, const char *reason);
/* Collections completed since lull_init (gc lock held). */
uint64_t lull_collect_count(void);

void lull_collect_init(void);

#endif
